"""The memory ledger: exact decomposition with a stated residual, no double counting."""

from __future__ import annotations

import pytest

from bot.core.diagnosis.attribution import attribute
from bot.core.diagnosis.ledger import KERNEL_CATEGORIES, build_ledger, category_bytes
from bot.core.model.evidence import ContainerMemory, MemInfo, ProcessMemory
from tests.core.analysis_builders import GI, bundle, cgroup, pod, view


def _mi(**gib: float) -> MemInfo:
    return MemInfo(**{f"{k}_bytes": int(v * GI) for k, v in gib.items()})


def test_each_byte_lands_in_exactly_one_line() -> None:
    p = pod("a")
    c = ContainerMemory(
        cgroup_path="x",
        pod_uid=p.uid,
        container_id=p.containers[0].container_id,
        working_set_bytes=12 * GI,
        anon_bytes=10 * GI,
        file_bytes=3 * GI,
        inactive_file_bytes=1 * GI,
        kernel_bytes=1 * GI,
    )
    mi = _mi(
        mem_total=100,
        mem_free=20,
        buffers=1,
        cached=9,
        anon_pages=50,
        s_unreclaim=5,
        s_reclaimable=3,
        page_tables=1,
        kernel_stack=1,
        percpu=0.5,
        vmalloc_used=0.5,
    )
    sysproc = ProcessMemory(pid=1, command="sshd", rss_bytes=4 * GI, rss_anon_bytes=3 * GI)
    b = bundle(meminfo=mi, containers=[c], processes=[sysproc], socket_memory_bytes=GI)
    ledger = build_ledger(b, attribute(b, view([p])))
    lines = {e.label: e.bytes for e in ledger.entries}
    assert lines["ml/a"] == 12 * GI  # anon 10 + active file 2; kernel 1 left out
    assert category_bytes(ledger, "page_cache") == 8 * GI  # 1 + 9 - pod's active file 2
    assert category_bytes(ledger, "system") == 3 * GI
    assert category_bytes(ledger, "unattributed") == 37 * GI  # 50 - 10 - 3
    assert category_bytes(ledger, *KERNEL_CATEGORIES) == 12 * GI  # 5+3+1+1+0.5+0.5+socket 1
    assert (
        ledger.residual_bytes == 100 * GI - 20 * GI - 8 * GI - 12 * GI - 12 * GI - 3 * GI - 37 * GI
    )


@pytest.mark.parametrize(
    ("ws", "kernel", "expected"),
    [(8, None, 8), (8, 2, 6), (1, 3, 0)],
)
def test_without_the_anon_file_split_the_charged_kernel_memory_is_left_out(
    ws: float, kernel: float | None, expected: float
) -> None:
    p = pod("a")
    c = ContainerMemory(
        cgroup_path="x",
        pod_uid=p.uid,
        working_set_bytes=int(ws * GI),
        kernel_bytes=int(kernel * GI) if kernel is not None else None,
    )
    b = bundle(meminfo=_mi(mem_total=64, mem_free=10), containers=[c])
    ledger = build_ledger(b, attribute(b, view([p])))
    assert category_bytes(ledger, "pod") == int(expected * GI)


def test_no_evidence_gives_an_empty_ledger_that_still_balances() -> None:
    ledger = build_ledger(bundle(), attribute(bundle(), None))
    assert (ledger.total_bytes, ledger.entries, ledger.residual_bytes) == (0, [], 0)


def test_pods_without_a_view_are_named_readably_by_a_short_uid() -> None:
    b = bundle(meminfo=_mi(mem_total=64, mem_free=10), containers=[cgroup(pod("a"), 4)])
    ledger = build_ledger(b, attribute(b, None))
    pods = [e for e in ledger.entries if e.category == "pod"]
    assert [(e.label, e.pod_key) for e in pods] == [
        ("pod uid-a… (not in the API: gpunode's diagnostic pod or a pod that just left)", None)
    ]
    assert "pod-uid/" not in pods[0].label


def test_pods_in_the_view_are_labelled_with_their_name_only() -> None:
    p = pod("a")
    b = bundle(meminfo=_mi(mem_total=64, mem_free=10), containers=[cgroup(p, 4)])
    ledger = build_ledger(b, attribute(b, view([p])))
    assert [e.label for e in ledger.entries if e.category == "pod"] == [p.key]


def test_over_counted_pods_show_as_a_negative_residual_not_a_hidden_one() -> None:
    b = bundle(meminfo=_mi(mem_total=10, mem_free=5), containers=[cgroup(pod("a"), 8)])
    ledger = build_ledger(b, attribute(b, None))
    assert ledger.residual_bytes == -3 * GI
    assert sum(e.bytes for e in ledger.entries) + ledger.residual_bytes == ledger.total_bytes
