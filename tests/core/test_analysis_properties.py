"""analyze never raises on partial evidence, and the ledger always balances."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.core.model.cluster import (
    ClusterView,
    ContainerInfo,
    NodeInfo,
    OwnerRef,
    PodInfo,
    ResourceAllocation,
)
from bot.core.model.evidence import (
    ContainerMemory,
    EvidenceBundle,
    Gap,
    GpuDevice,
    GpuProcess,
    MemInfo,
    MemoryPressure,
    PodCgroup,
    PressureLine,
    ProcessMemory,
)
from bot.core.reporting.analysis import analyze

AT = datetime(2026, 1, 1, tzinfo=UTC)
GI = 1024**3
size = st.integers(min_value=0, max_value=512 * GI)
maybe = lambda s: st.none() | s  # noqa: E731
uids = st.sampled_from(["u-1", "u-2", "u_3", "u-4", None])
cids = st.sampled_from(["a" * 64, "b" * 64, "c" * 64, None])

meminfo = st.builds(
    MemInfo,
    mem_total_bytes=size,
    mem_free_bytes=size,
    mem_available_bytes=maybe(size),
    buffers_bytes=size,
    cached_bytes=size,
    anon_pages_bytes=maybe(size),
    s_unreclaim_bytes=maybe(size),
    s_reclaimable_bytes=maybe(size),
    page_tables_bytes=maybe(size),
    kernel_stack_bytes=maybe(size),
    percpu_bytes=maybe(size),
    vmalloc_used_bytes=maybe(size),
)
line = st.builds(
    PressureLine,
    avg10=st.floats(0, 100),
    avg60=st.floats(0, 100),
    avg300=st.floats(0, 100),
    total_us=st.integers(0, 10**12),
)
container = st.builds(
    ContainerMemory,
    cgroup_path=st.just("kubepods/x"),
    pod_uid=uids,
    container_id=cids,
    usage_bytes=maybe(size),
    limit_bytes=maybe(size),
    working_set_bytes=maybe(size),
    anon_bytes=maybe(size),
    file_bytes=maybe(size),
    inactive_file_bytes=maybe(size),
    kernel_bytes=maybe(size),
    oom_kill_events=maybe(st.integers(0, 5)),
)
process = st.builds(
    ProcessMemory,
    pid=st.integers(1, 10**6),
    command=st.just("p"),
    rss_bytes=size,
    rss_anon_bytes=maybe(size),
    pod_uid=uids,
    container_id=cids,
)
gpu = st.builds(
    GpuDevice,
    index=st.integers(0, 7),
    uuid=st.sampled_from(["GPU-a", "GPU-b"]),
    name=st.just("H100"),
    memory_total_bytes=size,
    memory_used_bytes=size,
    memory_free_bytes=size,
)
gpu_proc = st.builds(
    GpuProcess,
    gpu_index=st.integers(0, 7),
    gpu_uuid=st.just("GPU-a"),
    pid=st.integers(1, 10**6),
    used_gpu_memory_bytes=maybe(size),
    pod_uid=uids,
)
bundles = st.builds(
    EvidenceBundle,
    collector_version=st.just("t"),
    hostname=st.just("n1"),
    collected_at=st.just(AT),
    meminfo=maybe(meminfo),
    pressure=maybe(st.builds(MemoryPressure, some=line, full=maybe(line))),
    socket_memory_bytes=maybe(size),
    pods=st.lists(
        st.builds(
            PodCgroup,
            cgroup_path=st.just("p"),
            pod_uid=st.sampled_from(["u-1", "u-2"]),
            working_set_bytes=maybe(size),
        ),
        max_size=3,
    ),
    containers=st.lists(container, max_size=5),
    processes=st.lists(process, max_size=6),
    gpus=st.lists(gpu, max_size=3),
    gpu_processes=st.lists(gpu_proc, max_size=3),
    gaps=st.lists(
        st.builds(
            Gap, source=st.sampled_from(["nvml", "procfs:/proc/1/smaps"]), reason=st.just("x")
        ),
        max_size=2,
    ),
)
pods = st.builds(
    PodInfo,
    namespace=st.just("ml"),
    name=st.sampled_from(["a", "b", "c"]),
    uid=st.sampled_from(["u-1", "u-2", "u-3"]),
    qos_class=st.sampled_from(["guaranteed", "burstable", "besteffort"]),
    priority=st.integers(0, 2_000_001_000),
    owners=st.lists(
        st.builds(
            OwnerRef, kind=st.sampled_from(["Deployment", "Job", "StatefulSet"]), name=st.just("o")
        ),
        max_size=1,
    ),
    containers=st.lists(
        st.builds(
            ContainerInfo,
            name=st.just("main"),
            container_id=cids,
            limits=st.sampled_from([{}, {"memory": "1Gi", "cpu": "2"}, {"memory": "bogus"}]),
            requests=st.sampled_from([{}, {"cpu": "500m"}, {"nvidia.com/gpu": "1"}]),
        ),
        max_size=2,
    ),
    memory_request_bytes=size,
    memory_limit_bytes=maybe(size),
    gpu_request=st.integers(0, 8),
    is_daemonset=st.booleans(),
)
views = st.builds(
    ClusterView,
    node=st.builds(
        NodeInfo,
        name=st.just("n1"),
        allocatable=st.sampled_from([{}, {"memory": "100Gi", "nvidia.com/gpu": "8"}]),
    ),
    pods=st.lists(pods, max_size=4),
    allocated=st.lists(
        st.builds(
            ResourceAllocation,
            resource=st.sampled_from(["memory", "nvidia.com/gpu"]),
            requests=st.just("1"),
            limits=st.just("2"),
            requests_value=st.floats(0, 1e12),
            limits_value=st.floats(0, 1e12),
            allocatable_value=maybe(st.floats(0, 1e12)),
            requests_percent=maybe(st.integers(0, 200)),
            limits_percent=maybe(st.integers(0, 200)),
        ),
        max_size=2,
    ),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bundle=bundles, view=st.none() | views)
def test_analyze_never_raises_and_the_ledger_balances(
    bundle: EvidenceBundle, view: ClusterView | None
) -> None:
    d = analyze(bundle, view, now=AT)
    ledger = d.ledger
    assert sum(e.bytes for e in ledger.entries) + ledger.residual_bytes == ledger.total_bytes
    assert all(e.bytes >= 0 for e in ledger.entries)
    assert all(p.facts or p.unverified for p in d.talking_points)
    assert len(d.plans) == (3 if view is not None else 0)


def _big_node() -> tuple[EvidenceBundle, ClusterView]:
    pods, containers, procs = [], [], []
    for i in range(110):
        uid, cid = f"uid-{i:04d}", f"{i:064x}"
        pods.append(
            PodInfo(
                namespace="ml",
                name=f"p{i}",
                uid=uid,
                gpu_request=1 if i < 8 else 0,
                owners=[OwnerRef(kind="Deployment", name=f"d{i % 10}")],
                containers=[
                    ContainerInfo(
                        name="main", container_id=cid, limits={"memory": "2Gi", "cpu": "2"}
                    )
                ],
                memory_request_bytes=GI,
                memory_limit_bytes=2 * GI,
            )
        )
        containers.append(
            ContainerMemory(
                cgroup_path=f"kubepods/pod{uid}/{cid}",
                pod_uid=uid,
                container_id=cid,
                working_set_bytes=GI,
                anon_bytes=GI,
                file_bytes=0,
                inactive_file_bytes=0,
                limit_bytes=2 * GI,
            )
        )
    for pid in range(5000):
        i = pid % 130
        procs.append(
            ProcessMemory(
                pid=pid + 1,
                command="x",
                rss_bytes=10 * 2**20,
                pod_uid=f"uid-{i:04d}" if i < 110 else None,
            )
        )
    gpus = [
        GpuDevice(
            index=i,
            uuid=f"GPU-{i}",
            name="H100",
            memory_total_bytes=80 * GI,
            memory_used_bytes=40 * GI,
            memory_free_bytes=40 * GI,
        )
        for i in range(8)
    ]
    gprocs = [GpuProcess(gpu_index=i, gpu_uuid=f"GPU-{i}", pid=i + 1) for i in range(8)]
    bundle = EvidenceBundle(
        collector_version="t",
        hostname="n1",
        collected_at=AT,
        meminfo=MemInfo(
            mem_total_bytes=512 * GI, mem_free_bytes=100 * GI, anon_pages_bytes=200 * GI
        ),
        containers=containers,
        processes=procs,
        gpus=gpus,
        gpu_processes=gprocs,
    )
    view = ClusterView(
        node=NodeInfo(name="n1", allocatable={"memory": "500Gi", "nvidia.com/gpu": "8"}), pods=pods
    )
    return bundle, view


def test_analysis_of_a_full_node_accounts_for_every_pod() -> None:
    """110 pods, 5,000 processes and 8 GPUs: every pod has its ledger line (the time this
    takes is measured in bench/analyze.py, not asserted here)."""
    bundle, view = _big_node()
    d = analyze(bundle, view, now=AT)
    assert len([e for e in d.ledger.entries if e.category == "pod"]) == 110
