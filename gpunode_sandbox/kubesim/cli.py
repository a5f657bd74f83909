"""``gpunode sandbox kube``: run the Kubernetes API stand-in on its own and print its URL.

Then e.g. ``kubectl get nodes,pods -A --server URL`` (no token over plain HTTP: the insecure
port's superuser) or, with the bot's deployed rights, ``gpunode diagnose gpu-node-01 --server
URL --token BOT_TOKEN`` (the token is printed; see ``access``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from gpunode_sandbox.kubesim.access import BOT_TOKEN
from gpunode_sandbox.kubesim.scenarios import ScenarioError, load_scenario
from gpunode_sandbox.kubesim.sim import KubeSim


async def _serve(args: argparse.Namespace) -> None:
    # kubectl sends no token over plain HTTP: token-less requests are the insecure port's
    # superuser; the bot's token (printed) has exactly the deployed rights.
    sim = KubeSim(
        load_scenario(args.scenario),
        kube_version=args.kube_version,
        insecure_superuser=True,
        clock_from_start=True,
        sigterm_exit_s=2.0,  # evicted pods show Terminating for a moment, as on a cluster
    )
    url = await sim.start(port=args.port)
    print(
        f"kubesim: scenario {args.scenario!r}, Kubernetes {args.kube_version}, at {url}", flush=True
    )
    print(f"try: kubectl get nodes,pods -A --server {url}", flush=True)
    print(f"the bot's token (deploy/base RBAC): {BOT_TOKEN}", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await sim.stop()


def main(args: argparse.Namespace) -> int:
    try:
        asyncio.run(_serve(args))
    except ScenarioError as exc:
        print(f"gpunode: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    return 0
