"""Benchmark: how often the verdict names the planted culprit, per class.

500 generated nodes (``tests/core/generating.py``, fixed seed): one culprit of each class in
turn (a non-GPU pod, a GPU training pod eating host RAM, a process outside pods, kernel slab,
other kernel memory, shmem in a pod and on the host, huge pages, a container at its own
limit, an exhausted GPU, a GPU held by a process of no pod, a healthy node that only looks
full), over random background load. Right = the verdict's cause AND subject are the planted
ones. Baseline: the old fixed-precedence verdict (``bench/baseline_verdicts.py``, frozen) on
the same nodes and the same findings.

    .venv/bin/python bench/verdicts.py [--nodes 500] [--seed 20260314]

Last line: {"bench": "verdicts", "metric": "right_rate", "value", "baseline", "ratio",
"target": 0.95, "classes": {class: rate}, "baseline_classes": {class: rate}}.
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

from baseline_verdicts import decide as baseline_decide  # noqa: E402
from generating import AT, CLASSES, nodes  # noqa: E402

from bot.core.analysis import analyze, run_rules  # noqa: E402
from bot.core.attribution import attribute  # noqa: E402
from bot.core.rules import Context  # noqa: E402
from bot.core.thresholds import DEFAULT  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--seed", type=int, default=20260314)
    args = parser.parse_args()
    planted = nodes(args.nodes, args.seed)
    total: Counter[str] = Counter()
    ours: Counter[str] = Counter()
    theirs: Counter[str] = Counter()
    misses: list[str] = []
    for p in planted:
        total[p.cls] += 1
        v = analyze(p.bundle, p.view, now=AT).verdict
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
    n = sum(total.values())
    value, base = sum(ours.values()) / n, sum(theirs.values()) / n
    print(f"{n} generated nodes, seed {args.seed}")
    print(f"{'class':<16} {'nodes':>5} {'right':>7} {'baseline':>9}")
    for c in rate:
        print(f"{c:<16} {total[c]:>5} {rate[c]:>7.3f} {base_rate[c]:>9.3f}")
    if misses:
        print("first misses:")
        print("\n".join(misses))
    print(
        json.dumps(
            {
                "bench": "verdicts",
                "metric": "right_rate",
                "value": round(value, 4),
                "baseline": round(base, 4),
                "ratio": round(value / base, 3) if base else None,
                "target": 0.95,
                "classes": rate,
                "baseline_classes": base_rate,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
