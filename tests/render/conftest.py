"""Hand-built diagnoses for the renderers (independent of bot.core.reporting.analysis), including a
hostile one whose every string tries to inject Slack or Markdown control sequences."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from bot.core.diagnosis.findings import (
    Diagnosis,
    Fact,
    Finding,
    Ledger,
    LedgerEntry,
    TalkingPoint,
    Verdict,
)
from bot.core.model.actions import ActionPlan, ProtectedPod, Step, Tier3Values
from bot.core.model.evidence import EvidenceBundle, Gap, GpuDevice, GpuProcess

GiB = 1024**3
AT = datetime(2026, 3, 14, 9, 30, tzinfo=UTC)


def make_diagnosis(
    *, node: str = "gpu-node-01", pods: list[tuple[str, int]] | None = None, n_findings: int = 3
) -> Diagnosis:
    pods = (
        pods if pods is not None else [("ml/preprocess-7d9f", 62 * GiB), ("ml/train-0", 62 * GiB)]
    )
    entries = [
        LedgerEntry(
            category="pod",
            label=key,
            bytes=b,
            source=f"cgroup:/kubepods/burstable/pod-{i}",
            pod_key=key,
        )
        for i, (key, b) in enumerate(pods)
    ]
    entries += [
        LedgerEntry(
            category="kernel_slab_unreclaimable",
            label="SUnreclaim",
            bytes=40 * GiB,
            source="procfs:/proc/meminfo",
        ),
        LedgerEntry(
            category="kernel_page_tables",
            label="PageTables",
            bytes=4 * GiB,
            source="procfs:/proc/meminfo",
        ),
        LedgerEntry(
            category="page_cache", label="page cache", bytes=14 * GiB, source="procfs:/proc/meminfo"
        ),
        LedgerEntry(
            category="system", label="system.slice", bytes=6 * GiB, source="cgroup:/system.slice"
        ),
        LedgerEntry(category="free", label="free", bytes=3 * GiB, source="procfs:/proc/meminfo"),
    ]
    total = 251 * GiB
    residual = total - sum(e.bytes for e in entries)
    ws = Fact(
        key="container.working_set_bytes",
        label="working set",
        value=62 * GiB,
        unit="bytes",
        source=f"cgroup:/kubepods/burstable/pod-0/{pods[0][0] if pods else 'x'}",
    )
    findings = [
        Finding(
            code=[
                "HOST_MEM_NON_GPU_WORKLOAD",
                "KERNEL_SLAB_UNRECLAIMABLE_HIGH",
                "PAGE_CACHE_SQUEEZED",
            ][i % 3],
            severity=["critical", "warning", "info"][i % 3],  # type: ignore[arg-type]
            subject=pods[0][0] if pods else node,
            facts=[ws],
            params={"pod": pods[0][0] if pods else node, "working_set_bytes": 62 * GiB},
        )
        for i in range(n_findings)
    ]
    plans = [
        ActionPlan(
            plan_id="p1abc",
            tier=1,
            node=node,
            target=f"Node/{node}",
            steps=[Step(verb="cordon", kind="Node", name=node)]
            + [
                Step(verb="evict", kind="Pod", namespace=k.split("/")[0], name=k.split("/")[1])
                for k, _ in pods[:3]
            ],
            blast_radius=[k for k, _ in pods],
            protected=[ProtectedPod(pod="kube-system/nvidia-device-plugin", reason="daemonset")],
        ),
        ActionPlan(
            plan_id="p2abc",
            tier=2,
            node=node,
            target="StatefulSet/ml/train",
            steps=[
                Step(
                    verb="ensure_priority_class",
                    kind="PriorityClass",
                    name="gpunode-critical",
                    params={"value": 1000000},
                )
            ],
            restarts=["ml/train-0"],
        ),
        ActionPlan(
            plan_id="p3abc",
            tier=3,
            node=node,
            target=f"Deployment/{pods[0][0]}" if pods else None,
            values=Tier3Values(
                container="pandas",
                memory_limit="32Gi",
                memory_request="28Gi",
                cpu_limit="8",
                omp_num_threads=4,
                current_working_set_bytes=62 * GiB,
                memory_limit_bytes=32 * GiB,
                below_working_set=True,
            ),
            warnings=["LIMIT_BELOW_WORKING_SET"],
        ),
    ]
    points = [
        TalkingPoint(
            audience="ai_team",
            key="ai.host_memory_not_gpu",
            stance="contradicts",
            facts=[ws],
            params={"pod": pods[0][0] if pods else node, "working_set_bytes": 62 * GiB},
        ),
        TalkingPoint(
            audience="ops_team",
            key="ops.gpu_isolated",
            stance="supports",
            params={},
            unverified=True,
        ),
    ]
    return Diagnosis(
        node=node,
        collected_at=AT,
        evidence_age_s=42.0,
        verdict=Verdict(
            cause="host_memory_workload", subject=pods[0][0] if pods else None, confidence="high"
        ),
        findings=findings,
        ledger=Ledger(total_bytes=total, entries=entries, residual_bytes=residual),
        talking_points=points,
        plans=plans,
        unverified=[Gap(source="procfs:/proc/1/smaps_rollup", reason="permission denied")],
    )


def make_bundle(node: str = "gpu-node-01", gpus: int = 8) -> EvidenceBundle:
    return EvidenceBundle(
        collector_version="0.1.0",
        hostname=node,
        node_name=node,
        collected_at=AT,
        gpus=[
            GpuDevice(
                index=i,
                uuid=f"GPU-{i:04d}",
                name="NVIDIA A100-SXM4-80GB",
                memory_total_bytes=80 * GiB,
                memory_used_bytes=64 * GiB,
                memory_free_bytes=16 * GiB,
            )
            for i in range(gpus)
        ],
        gpu_processes=[
            GpuProcess(gpu_index=i, gpu_uuid=f"GPU-{i:04d}", pid=1000 + i) for i in range(gpus)
        ],
    )


HOSTILE = "<!channel> a&b<c> *bold* _x_ [link](http://evil) `tick` | # \x1b[31mred"


@pytest.fixture
def diagnosis_factory() -> Callable[..., Diagnosis]:
    return make_diagnosis


@pytest.fixture
def seed_diagnosis() -> Diagnosis:
    return make_diagnosis()


@pytest.fixture
def seed_bundle() -> EvidenceBundle:
    return make_bundle()


@pytest.fixture
def hostile_diagnosis() -> Diagnosis:
    return make_diagnosis(node=f"node{HOSTILE}", pods=[(f"ns{HOSTILE}/pod{HOSTILE}", 62 * GiB)])
