"""Fleet allocation benchmark: the gateway's Allocated-resources view of every GPU node in a
2,000-node / 60,000-pod cluster (the Kubernetes stand-in), against the bare list calls.

- measured: ``Gateway.gpu_node_loads()`` (what ``/gpunode top`` runs) = list nodes + list all
  pods (paged, 500 per page) + API discovery and pod metrics where served, group pods by
  node, ``allocated_resources`` per GPU node (kubectl arithmetic).
- baseline: the same two paged list calls through the same client and transport, with no
  processing. Both decode JSON with ``json.loads`` on the raw body (the gateway never uses
  the client's model deserialization, which would dominate), so the ratio is the cost of
  the processing alone.
- alternating runs, medians; peak RSS of this process (the stand-in runs in-process too).

Usage: ``python bench/fleet.py [--nodes 2000] [--pods 60000] [--runs 5]``.
Last line: JSON ``{"bench": "fleet", "metric": "wall_s_median", ...}``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.config import KubeSettings
from bot.kube import reading
from bot.kube.gateway import Gateway
from bot.sandbox.kubesim import KubeSim, Scenario
from bot.sandbox.kubesim.access import BOT_TOKEN

TARGET = 1.5


async def _baseline(gw: Gateway) -> int:
    nodes, pods = await asyncio.gather(
        asyncio.to_thread(reading.list_nodes, gw.transport),
        asyncio.to_thread(reading.list_all_pods, gw.transport),
    )
    return len(nodes) + len(pods)


async def _measured(gw: Gateway) -> int:
    return len(await gw.gpu_node_loads())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--pods", type=int, default=60_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    t0 = time.perf_counter()
    scenario = Scenario.synthetic_fleet(nodes=args.nodes, pods=args.pods)
    with KubeSim.running_in_thread(scenario) as sim:
        print(f"stand-in loaded in {time.perf_counter() - t0:.1f}s at {sim.url}", file=sys.stderr)
        gw = Gateway.from_settings(
            KubeSettings(mode="server", server=sim.url, token=BOT_TOKEN, verify_tls=False)
        )
        gw.transport.timeout_s = 300
        base: list[float] = []
        meas: list[float] = []
        gpu_nodes = 0
        asyncio.run(_baseline(gw))  # warm-up: connection pool, caches
        for i in range(args.runs):
            for kind in ("baseline", "measured") if i % 2 == 0 else ("measured", "baseline"):
                start = time.perf_counter()
                if kind == "baseline":
                    asyncio.run(_baseline(gw))
                    base.append(time.perf_counter() - start)
                else:
                    gpu_nodes = asyncio.run(_measured(gw))
                    meas.append(time.perf_counter() - start)
            print(f"run {i}: baseline {base[-1]:.2f}s measured {meas[-1]:.2f}s", file=sys.stderr)
        gw.close()
    value, baseline = statistics.median(meas), statistics.median(base)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"GPU nodes with allocation rows: {gpu_nodes}", file=sys.stderr)
    print(
        json.dumps(
            {
                "bench": "fleet",
                "metric": "wall_s_median",
                "value": round(value, 3),
                "baseline": round(baseline, 3),
                "ratio": round(value / baseline, 3),
                "target": TARGET,
                "peak_rss_mib": round(peak_mib, 1),
                "nodes": args.nodes,
                "pods": args.pods,
                "runs": args.runs,
            }
        )
    )


if __name__ == "__main__":
    main()
