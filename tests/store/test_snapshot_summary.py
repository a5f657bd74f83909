"""A stored snapshot keeps the evidence the verdict and the reports use and summarises the
long tail of a node's processes (bot/store/summarizing.py), so a 5,000-process node's
snapshot fits in 30 KiB and still analyses to the diagnosis it was saved with."""

from __future__ import annotations

import importlib.util
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.core.model.cluster import ClusterView
from bot.core.model.evidence import EvidenceBundle
from bot.core.reporting.analysis import analyze
from bot.store import Store, packing
from bot.store.summarizing import KEEP_PER_CONTAINER, ProcessTail, summarize
from tests.store.conftest import query

REPO = Path(__file__).resolve().parents[2]
BUNDLES = REPO / "tests" / "fixtures" / "bundles"
T0 = datetime(2026, 3, 14, 9, 30, tzinfo=UTC)
KIB = 1024


def _large_node() -> tuple[EvidenceBundle, ClusterView]:
    """bench/analyze.py's node: 110 pods, 5,000 processes, 8 GPUs."""
    spec = importlib.util.spec_from_file_location("bench_analyze", REPO / "bench" / "analyze.py")
    assert spec is not None and spec.loader is not None
    module: Any = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    bundle, view = module.build()
    return bundle, view


@pytest.fixture(scope="module")
def large_node() -> tuple[EvidenceBundle, ClusterView]:
    return _large_node()


def _fixture(name: str) -> tuple[EvidenceBundle, ClusterView | None]:
    bundle = EvidenceBundle.model_validate_json((BUNDLES / name / "evidence.json").read_text())
    view_file = BUNDLES / name / "cluster.json"
    view = ClusterView.model_validate_json(view_file.read_text()) if view_file.exists() else None
    return bundle, view


async def test_a_5000_process_node_is_stored_in_30_kib_and_reads_back_what_was_stored(
    target: str, large_node: tuple[EvidenceBundle, ClusterView]
) -> None:
    bundle, view = large_node
    diagnosis = analyze(bundle, view, now=T0)
    async with await Store.open(target) as store:
        incident, _ = await store.open_or_join_incident(
            "n1", "C1", opened_by="U1", at=T0, locale="en"
        )
        digest = await store.save_snapshot(
            incident.id, at=T0, bundle=bundle, view=view, diagnosis=diagnosis
        )
        latest = await store.latest_snapshot(incident.id)
    [(size, fmt)] = query(target, "SELECT LENGTH(packed), format FROM evidence_snapshots")
    assert fmt == packing.XZ_SUMMARISED
    assert isinstance(size, int) and size <= 30 * KIB, size
    assert latest is not None and latest.sha256 == digest
    assert latest.view == view and latest.diagnosis == diagnosis
    assert latest.bundle is not None and len(latest.bundle.processes) < len(bundle.processes)
    tail = ProcessTail.model_validate_json(latest.process_tail_json)
    assert tail.process_count == len(bundle.processes) == 5000


def test_the_stored_bundle_of_a_large_node_analyses_to_the_same_diagnosis(
    large_node: tuple[EvidenceBundle, ClusterView],
) -> None:
    bundle, view = large_node
    kept, tail = summarize(bundle)
    assert tail is not None and len(kept.processes) < len(bundle.processes) // 5
    assert analyze(kept, view, now=T0) == analyze(bundle, view, now=T0)


@pytest.mark.parametrize("name", ["seed", "gpu-bound", "healthy", "limit-edge", "slab-leak"])
def test_every_fixture_bundle_analyses_the_same_once_summarised(name: str) -> None:
    bundle, view = _fixture(name)
    kept, _ = summarize(bundle)
    assert analyze(kept, view, now=T0) == analyze(bundle, view, now=T0)


def test_the_tail_counts_and_sums_every_process_left_out(
    large_node: tuple[EvidenceBundle, ClusterView],
) -> None:
    bundle, _ = large_node
    kept, tail = summarize(bundle)
    assert tail is not None
    kept_pids = {p.pid for p in kept.processes}
    gpu_pids = {g.pid for g in bundle.gpu_processes}  # kept whatever their size
    left_out = [p for p in bundle.processes if p.pid not in kept_pids]
    assert sum(c.processes for c in tail.containers) == len(left_out)
    assert sum(c.rss_bytes for c in tail.containers) == sum(p.rss_bytes for p in left_out)
    for c in tail.containers:
        mine = [p for p in left_out if (p.pod_uid, p.container_id) == (c.pod_uid, c.container_id)]
        assert c.processes == len(mine)
        assert min(
            p.rss_bytes
            for p in kept.processes
            if (p.pod_uid, p.container_id) == (c.pod_uid, c.container_id) and p.pid not in gpu_pids
        ) >= max(p.rss_bytes for p in mine)  # the largest were kept


def test_processes_outside_pods_and_gpu_holders_are_kept_whole(
    large_node: tuple[EvidenceBundle, ClusterView],
) -> None:
    bundle, _ = large_node
    small_gpu_holder = min(
        (p for p in bundle.processes if p.pod_uid), key=lambda p: (p.rss_bytes, p.pid)
    )
    gpu = bundle.gpu_processes[0].model_copy(update={"pid": small_gpu_holder.pid})
    with_holder = bundle.model_copy(update={"gpu_processes": [gpu, *bundle.gpu_processes[1:]]})
    kept, _ = summarize(with_holder)
    kept_pids = {p.pid for p in kept.processes}
    assert small_gpu_holder.pid in kept_pids
    assert {p.pid for p in bundle.processes if not p.pod_uid and not p.container_id} <= kept_pids
    gpu_pids = {g.pid for g in with_holder.gpu_processes}
    per_container: dict[tuple[str | None, str | None], int] = {}
    for p in kept.processes:
        if p.pod_uid and p.pid not in gpu_pids:
            key = (p.pod_uid, p.container_id)
            per_container[key] = per_container.get(key, 0) + 1
    assert max(per_container.values()) == KEEP_PER_CONTAINER


def test_a_bundle_with_few_processes_is_stored_as_captured() -> None:
    bundle, _ = _fixture("seed")
    kept, tail = summarize(bundle)
    assert (kept, tail) == (bundle, None)
