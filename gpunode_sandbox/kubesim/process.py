"""The stand-in in a process of its own, for benchmarks and tests that time the bot.

In-process, the stand-in shares the bot's interpreter lock and garbage collector, so a
profile of ``top`` measures the server as much as the client (issue #25: 81% of samples).
``python -m gpunode_sandbox.kubesim.process --nodes N --pods P`` builds the synthetic fleet
(``Scenario.synthetic_fleet``) or a named scenario, serves it, and prints one line,
``URL PID``, once it listens; ``separate_process(...)`` runs that and yields the URL and the
child's pid (for its RSS), and stops it on exit. The stand-in's modules are imported in the
child only: the parent is the bot's process in a benchmark, and its memory is measured
(``bench/fleet.py``: they are 10 MiB a serving bot does not hold).

``warm`` (``--warm``; on by default for ``separate_process``): before it serves, the stand-in
makes every stored object's JSON and every running pod's metrics item (``KubeSim.warm``), as
the API server (a Go program) serves lists from its watch cache and metrics-server from its
last scrape: the first list a bench times does not pay the stand-in's Python encoding. At
2,000 nodes (60,000 pods) that is 3.3-3.6 s of CPU more to start and 182-185 MiB more held
(144 MiB encodings, 38-41 MiB metrics items), and a first pass over every pod (pages of 500)
and the pod metrics costs the stand-in 0.6-1.1 s of CPU instead of 3.1-3.9 s (measured).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where the stand-in serves, not by the process that starts it
    from gpunode_sandbox.kubesim.scenarios import Scenario


async def _serve(scenario: Scenario, *, insecure_superuser: bool, warm: bool = False) -> None:
    from gpunode_sandbox.kubesim.sim import KubeSim

    sim = KubeSim(scenario, insecure_superuser=insecure_superuser)
    # the fleet as built (millions of objects at 5,000 nodes) is moved out of the collector's
    # walks: otherwise every full collection while serving walks all of it, and a metrics
    # list of 150,000 pods spent half its time there (the API server and metrics-server are
    # Go programs, whose collector runs beside the serving). This process serves only.
    gc.freeze()
    if warm:
        sim.warm()
        gc.freeze()  # what it keeps, too (it lives as long as the objects it was made from)
    url = await sim.start()
    print(url, os.getpid(), flush=True)
    try:
        # the parent closes our stdin to stop us (or dies, which closes it too)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    finally:
        await sim.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=0, help="synthetic fleet size (0: scenario)")
    parser.add_argument("--pods", type=int, default=0)
    parser.add_argument("--gpu-fraction", type=float, default=0.25)
    parser.add_argument("--scenario", default="seed")
    parser.add_argument(
        "--insecure-superuser",
        action="store_true",
        help="token-less requests act as the superuser (kubectl over plain HTTP sends none)",
    )
    parser.add_argument(
        "--warm",
        action="store_true",
        help="encode every stored object and pod metrics item before serving (KubeSim.warm)",
    )
    args = parser.parse_args(argv)
    from gpunode_sandbox.kubesim.scenarios import Scenario, load_scenario

    scenario = (
        Scenario.synthetic_fleet(args.nodes, args.pods, gpu_fraction=args.gpu_fraction)
        if args.nodes
        else load_scenario(args.scenario)
    )
    asyncio.run(_serve(scenario, insecure_superuser=args.insecure_superuser, warm=args.warm))
    return 0


@contextmanager
def separate_process(
    *,
    nodes: int = 0,
    pods: int = 0,
    scenario: str = "seed",
    insecure_superuser: bool = False,
    warm: bool = True,
) -> Iterator[tuple[str, int]]:
    """(URL, pid) of a stand-in serving in a child process, stopped on exit; ``warm``: its
    answers made before it serves (see the module's docstring)."""
    cmd = [sys.executable, "-m", "gpunode_sandbox.kubesim.process", "--scenario", scenario]
    if insecure_superuser:
        cmd.append("--insecure-superuser")
    if warm:
        cmd.append("--warm")
    if nodes:
        cmd += ["--nodes", str(nodes), "--pods", str(pods)]
    child = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdin is not None
        line = child.stdout.readline().split()
        if len(line) != 2:
            raise RuntimeError(f"the stand-in process exited early (status {child.wait()})")
        yield line[0], int(line[1])
    finally:
        if child.stdin is not None:
            child.stdin.close()
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        if child.stdout is not None:
            child.stdout.close()


if __name__ == "__main__":
    raise SystemExit(main())
