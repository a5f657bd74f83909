"""``gpunode sandbox kube``: run the Kubernetes API stand-in on its own and print its URL.

Then e.g. ``kubectl --server URL get nodes,pods -A`` or
``gpunode diagnose gpu-node-01 --server URL``.
"""

from __future__ import annotations

import argparse
import asyncio

from bot.sandbox.kubesim.scenarios import load_scenario
from bot.sandbox.kubesim.sim import KubeSim


async def _serve(args: argparse.Namespace) -> None:
    sim = KubeSim(load_scenario(args.scenario), kube_version=args.kube_version)
    url = await sim.start(port=args.port)
    print(
        f"kubesim: scenario {args.scenario!r}, Kubernetes {args.kube_version}, at {url}", flush=True
    )
    print(f"try: kubectl --server {url} get nodes,pods -A", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await sim.stop()


def main(args: argparse.Namespace) -> int:
    try:
        asyncio.run(_serve(args))
    except KeyboardInterrupt:
        return 0
    return 0
