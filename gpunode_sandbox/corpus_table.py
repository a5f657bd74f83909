"""Print the corpus table: ``python -m gpunode_sandbox.corpus_table [SCENARIO ...]``.

Each labelled scenario runs through the real collector, gateway and analysis (one stand-in
per scenario, in turn); prints ``scenario | expected | got | advice expected | advice got |
ok`` and the disagreements: the label, the plan values against the label's advice ranges
(cap per container, pods tier 1 evicts, restarts across nodes, the runbook's unit) and the
expert invariants (``gpunode_sandbox.advice_checks``).
Exit status 0 when every scenario agrees with its label, 1 otherwise.
"""

from __future__ import annotations

import asyncio
import sys

from gpunode_sandbox.corpus import judge_all, table


def main(argv: list[str] | None = None) -> int:
    names = list(argv if argv is not None else sys.argv[1:]) or None
    outcomes = asyncio.run(judge_all(names))
    print(table(outcomes))
    return 0 if all(o.ok for o in outcomes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
