"""Store-growth benchmark (SQLite): what one incident's evidence costs on disk, and how
``audit --verify`` (``Store.verify_audit``) grows with the audit log.

- bytes per snapshot, for the seed scenario's node (the collector's real output on the
  stand-in) and for the large synthetic node of bench/analyze.py (110 pods, 5,000
  processes, 8 GPUs) saved as a snapshot; baseline: the same three JSON texts as they were
  stored before packing (raw). Target: 30 KiB per snapshot.
- database bytes per incident: the file's size after ``--incidents`` incidents of one snapshot
  each, divided by their number.
- verify: time and the process's peak-RSS growth (VmHWM) of ``verify_audit`` at each of
  ``--rows`` (default 10,000 and 100,000 rows, appended in batches on the store's writer).
  Streaming the verification is another branch's work (issue #21); this only times it.

Usage: ``python bench/store.py [--rows 10000,100000] [--incidents 200]``.
Last line: ``{"bench": "store", "metric": "snapshot_bytes", ...}``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.tree import status_mib
from bot.core.reporting.analysis import analyze
from bot.core.reporting.records import NO_CLUSTER
from bot.store import AuditRecord, Store, record_rows
from bot.store.db import Db
from bot.store.summarizing import summarize

HERE = Path(__file__).resolve().parent
TARGET_BYTES = 30 * 1024
T0 = datetime(2026, 3, 14, 9, 30, tzinfo=UTC)


def _analyze_bench() -> Any:
    spec = importlib.util.spec_from_file_location("bench_analyze", HERE / "analyze.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _hwm_mib() -> float:
    return status_mib() or 0.0


def _append_many(conn: Db, records: list[AuditRecord]) -> None:
    for r in records:
        record_rows.append_audit(conn, r)


SEED = HERE.parent / "tests" / "fixtures" / "bundles" / "seed"


async def _seed_snapshot(path: str) -> dict[str, int]:
    """The seed scenario's node (the collector's real output on the stand-in's host tree)."""
    from bot.core.model.cluster import ClusterView
    from bot.core.model.evidence import EvidenceBundle

    bundle = EvidenceBundle.model_validate_json((SEED / "evidence.json").read_text())
    view = ClusterView.model_validate_json((SEED / "cluster.json").read_text())
    diagnosis = analyze(bundle, view, now=T0)
    raw = sum(len(m.model_dump_json().encode()) for m in (bundle, view, diagnosis))
    async with await Store.open(path) as store:
        incident, _ = await store.open_or_join_incident(
            "gpu-node-01", "C1", opened_by="U1", at=T0, locale="en"
        )
        await store.save_snapshot(incident.id, at=T0, bundle=bundle, view=view, diagnosis=diagnosis)
    import sqlite3

    conn = sqlite3.connect(path)
    [(packed,)] = conn.execute("SELECT LENGTH(packed) FROM evidence_snapshots").fetchall()
    conn.close()
    return {"seed_raw_snapshot_bytes": raw, "seed_packed_snapshot_bytes": int(packed)}


async def _snapshots(path: str, incidents: int) -> dict[str, Any]:
    bundle, view = _analyze_bench().build()
    diagnosis = analyze(bundle, view, now=T0)
    raw = sum(len(m.model_dump_json().encode()) for m in (bundle, view, diagnosis))
    async with await Store.open(path) as store:
        for i in range(incidents):
            incident, _ = await store.open_or_join_incident(
                f"gpu-node-{i:04d}", "C1", opened_by="U1", at=T0, locale="en"
            )
            await store.save_snapshot(
                incident.id, at=T0, bundle=bundle, view=view, diagnosis=diagnosis
            )
        start = time.perf_counter()
        latest = await store.latest_snapshot(incident.id)
        read_ms = (time.perf_counter() - start) * 1000
        # stored as summarised (bot/store/summarizing.py): the same diagnosis
        assert latest is not None and latest.bundle == summarize(bundle)[0]
        assert analyze(latest.bundle, view, now=T0) == diagnosis
    import sqlite3

    conn = sqlite3.connect(path)
    [(packed,)] = conn.execute("SELECT AVG(LENGTH(packed)) FROM evidence_snapshots").fetchall()
    conn.close()
    size = sum(p.stat().st_size for p in Path(path).parent.glob(Path(path).name + "*"))
    return {
        "raw_snapshot_bytes": raw,
        "packed_snapshot_bytes": round(packed),
        "db_bytes_per_incident": round(size / incidents),
        "latest_snapshot_read_ms": round(read_ms, 1),
        "incidents": incidents,
    }


async def _verify(path: str, rows: list[int]) -> list[dict[str, Any]]:
    out = []
    async with await Store.open(path) as store:
        have = 0
        for target in rows:
            while have < target:
                n = min(5000, target - have)
                batch = [
                    AuditRecord(
                        at=T0 + timedelta(seconds=have + i),
                        actor="U1",
                        action="tier1.cordon",
                        channel="C1",
                        decision="allowed",
                        detail=f"row {have + i}",
                        cluster=NO_CLUSTER,  # as the rows measured before
                    )
                    for i in range(n)
                ]
                await store._run(_append_many, batch)
                have += n
            before = _hwm_mib()
            start = time.perf_counter()
            report = await store.verify_audit()
            took = time.perf_counter() - start
            out.append(
                {
                    "rows": target,
                    "verify_s": round(took, 3),
                    "peak_rss_growth_mib": round(_hwm_mib() - before, 1),
                    "report": str(report)[:80],
                }
            )
            print(json.dumps(out[-1]), file=sys.stderr)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="10000,100000")
    parser.add_argument("--incidents", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        snaps = asyncio.run(_snapshots(str(Path(tmp) / "snap.db"), args.incidents))
        snaps |= asyncio.run(_seed_snapshot(str(Path(tmp) / "seed.db")))
        print(json.dumps(snaps), file=sys.stderr)
        verify = asyncio.run(
            _verify(str(Path(tmp) / "audit.db"), [int(r) for r in args.rows.split(",")])
        )
    print(
        json.dumps(
            {
                "bench": "store",
                "metric": "snapshot_bytes",
                "value": snaps["packed_snapshot_bytes"],
                "baseline": snaps["raw_snapshot_bytes"],
                "ratio": round(snaps["packed_snapshot_bytes"] / snaps["raw_snapshot_bytes"], 4),
                "target": TARGET_BYTES,
                "db_bytes_per_incident": snaps["db_bytes_per_incident"],
                "node": "bench/analyze.py's 110 pods, 5,000 processes, 8 GPUs",
                "seed_snapshot_bytes": snaps["seed_packed_snapshot_bytes"],
                "seed_raw_bytes": snaps["seed_raw_snapshot_bytes"],
                "verify": verify,
            }
        )
    )


if __name__ == "__main__":
    main()
