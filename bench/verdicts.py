"""Benchmark: how often the verdict names the planted culprit, per class.

500 generated nodes (``tests/core/generating.py``, fixed seed): one culprit of each class in
turn (a non-GPU pod, a GPU training pod eating host RAM, a process outside pods, kernel slab,
other kernel memory, shmem in a pod and on the host, huge pages, a container at its own
limit, an exhausted GPU, a GPU held by a process of no pod, a healthy node that only looks
full), over random background load. Right = the verdict's cause AND subject are the planted
ones. Baseline: the old fixed-precedence verdict (``bench/baseline_verdicts.py``, frozen) on
the same nodes and the same findings. Two naive peers beside it (issue #25): "top pod by
memory" (the pod with the biggest working set is a ``host_memory_workload``) and "top
container near its limit" (the pod whose container is nearest its limit is a
``container_limit``).

The generator also plants the shapes of issue #20 (multi-replica owners here and spread,
sidecars, multi-container pods, CPU-only nodes, a big clean cache, near ties, gangs,
BestEffort leaks beside training, time-sliced GPUs, node agents) with their plan values known
by construction. ``advice_right_rate``: the share of nodes where every expert invariant holds
(``gpunode_sandbox.advice_checks``) and the plan values fall in the planted ranges
(``tests/core/advising.py``), per class; target 1.0.

    .venv/bin/python bench/verdicts.py [--nodes 500] [--seed 20260314]

Last line: {"bench": "verdicts", "metric": "right_rate", "value", "baseline", "ratio",
"target": 0.98, "classes": {class: rate}, "baseline_classes": {class: rate},
"advice_right_rate", "advice_target": 1.0, "advice_classes": {class: rate},
"peers": {"top_pod_by_memory": rate, "top_container_near_limit": rate}, "peer_classes"}.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "core"))
sys.path.insert(0, str(ROOT / "bench"))

# found on the sys.path set above at run time (the type checker reads them as tests.core.*)
from advising import advice_problems  # type: ignore[import-not-found]  # noqa: E402
from baseline_verdicts import decide as baseline_decide  # type: ignore[import-not-found]  # noqa: E402
from generating import AT, CLASSES, Planted, nodes  # type: ignore[import-not-found]  # noqa: E402

from bot.core.diagnosis.attribution import attribute  # noqa: E402
from bot.core.diagnosis.rules import Context  # noqa: E402
from bot.core.model.thresholds import DEFAULT  # noqa: E402
from bot.core.reporting.analysis import analyze, run_rules  # noqa: E402


def top_pod_by_memory(p: Planted) -> tuple[str, str]:
    """Naive peer: the pod with the biggest working set holds the node's memory."""
    ws: dict[str, int] = {}
    for c in p.bundle.containers:
        if c.pod_uid is not None:
            ws[c.pod_uid] = ws.get(c.pod_uid, 0) + (c.working_set_bytes or 0)
    keys = {pod.uid: pod.key for pod in p.view.pods}
    uid = max(ws, key=lambda u: ws[u]) if ws else None
    return "host_memory_workload", keys.get(uid or "", p.view.node.name)


def top_container_near_limit(p: Planted) -> tuple[str, str]:
    """Naive peer: the container nearest its own limit is the problem."""
    keys = {pod.uid: pod.key for pod in p.view.pods}
    ratios = [
        ((c.working_set_bytes or 0) / c.limit_bytes, c.pod_uid)
        for c in p.bundle.containers
        if c.limit_bytes and c.pod_uid is not None
    ]
    if not ratios:
        return "healthy", p.view.node.name
    return "container_limit", keys.get(max(ratios)[1] or "", p.view.node.name)


PEERS = {
    "top_pod_by_memory": top_pod_by_memory,
    "top_container_near_limit": top_container_near_limit,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--seed", type=int, default=20260314)
    args = parser.parse_args()
    planted = nodes(args.nodes, args.seed)
    total: Counter[str] = Counter()
    ours: Counter[str] = Counter()
    theirs: Counter[str] = Counter()
    advised: Counter[str] = Counter()
    peers: dict[str, Counter[str]] = {name: Counter() for name in PEERS}
    misses: list[str] = []
    advice_misses: list[str] = []
    for p in planted:
        total[p.cls] += 1
        d = analyze(p.bundle, p.view, now=AT)
        v = d.verdict
        problems = advice_problems(p, d)
        if not problems:
            advised[p.cls] += 1
        elif len(advice_misses) < 10:
            advice_misses.append(f"  {p.cls}: {problems[0][:160]}")
        for name, peer in PEERS.items():
            if peer(p) == (p.cause, p.subject):
                peers[name][p.cls] += 1
        if (v.cause, v.subject) == (p.cause, p.subject):
            ours[p.cls] += 1
        elif len(misses) < 10:
            misses.append(f"  {p.cls}: planted {p.cause} {p.subject}; got {v.cause} {v.subject}")
        ctx = Context(
            bundle=p.bundle,
            view=p.view,
            attr=attribute(p.bundle, p.view),
            node=p.view.node.name,
            now=AT,
        )
        old = baseline_decide(ctx, run_rules(ctx, DEFAULT), DEFAULT)
        if (old.cause, old.subject) == (p.cause, p.subject):
            theirs[p.cls] += 1
    rate = {c: round(ours[c] / total[c], 3) for c in CLASSES if total[c]}
    base_rate = {c: round(theirs[c] / total[c], 3) for c in CLASSES if total[c]}
    advice_rate = {c: round(advised[c] / total[c], 3) for c in CLASSES if total[c]}
    peer_rate = {
        name: {c: round(hits[c] / total[c], 3) for c in CLASSES if total[c]}
        for name, hits in peers.items()
    }
    n = sum(total.values())
    value, base = sum(ours.values()) / n, sum(theirs.values()) / n
    print(f"{n} generated nodes, seed {args.seed}")
    print(
        f"{'class':<16} {'nodes':>5} {'right':>7} {'baseline':>9} {'top-pod':>8} "
        f"{'near-lim':>8} {'advice':>7}"
    )
    for c in rate:
        print(
            f"{c:<16} {total[c]:>5} {rate[c]:>7.3f} {base_rate[c]:>9.3f} "
            f"{peer_rate['top_pod_by_memory'][c]:>8.3f} "
            f"{peer_rate['top_container_near_limit'][c]:>8.3f} {advice_rate[c]:>7.3f}"
        )
    if misses:
        print("first misses:")
        print("\n".join(misses))
    if advice_misses:
        print("first advice misses:")
        print("\n".join(advice_misses))
    print(
        json.dumps(
            {
                "bench": "verdicts",
                "metric": "right_rate",
                "value": round(value, 4),
                "baseline": round(base, 4),
                "ratio": round(value / base, 3) if base else None,
                "target": 0.98,
                "classes": rate,
                "baseline_classes": base_rate,
                "advice_right_rate": round(sum(advised.values()) / n, 4),
                "advice_target": 1.0,
                "advice_classes": advice_rate,
                "peers": {name: round(sum(hits.values()) / n, 4) for name, hits in peers.items()},
                "peer_classes": peer_rate,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
