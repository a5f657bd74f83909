"""History applied to a diagnosis: the growth finding, the verdict's time dimension, markers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.core.diagnosis.findings import Diagnosis, Verdict
from bot.core.diagnosis.history import GIB, History, Marker, Series, markers_from
from bot.core.diagnosis.rules.growth import apply_history
from bot.core.model.cluster import ClusterView, EventInfo, NodeInfo
from bot.core.model.kernel_records import KernelLog, OomKill, XidEvent
from bot.core.reporting.analysis import analyze
from bot.render.sentences import sentence
from tests.core.analysis_builders import bundle, meminfo

END = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)
START = END - timedelta(hours=6)


def _series(key: str, kind: str, fn, label: str = "") -> Series:  # type: ignore[no-untyped-def]
    ts = [START.timestamp() + i * 60 for i in range(360)]
    return Series.model_validate(
        {
            "key": key,
            "kind": kind,
            "label": label or key,
            "source": "prometheus:x",
            "timestamps_s": ts,
            "values": [fn(t - ts[0]) for t in ts],
        }
    )


def _leak(t: float) -> float:
    return 2 * GIB + max(0.0, t - 4 * 3600) * 4.1 * GIB / 3600


def _history(*series: Series) -> History:
    avail = _series("node:mem_available", "mem_available", lambda t: 20 * GIB)
    return History(
        node="n1", source="prometheus", start=START, end=END, step_s=60, series=[avail, *series]
    )


def _diagnosis(cause: str, subject: str | None) -> Diagnosis:
    d = analyze(bundle(meminfo=meminfo(251)), None, now=END)
    return d.model_copy(update={"verdict": Verdict(cause=cause, subject=subject)})  # type: ignore[arg-type]


def test_the_verdicts_own_consumer_growing_gives_the_verdict_its_time_dimension() -> None:
    slab = _series("node:slab_unreclaimable", "kernel_slab_unreclaimable", _leak, "kernel slab")
    out = apply_history(_diagnosis("kernel_slab", "n1"), _history(slab))
    finding = out.findings[0]
    assert finding.code == "MEMORY_GROWTH" and finding.params["leading"] == 1
    assert out.verdict.params["growth_rate_gib_per_h"] == 4.1
    since = datetime.fromisoformat(str(out.verdict.params["growing_since_at"]))
    assert abs(since - (START + timedelta(hours=4))) <= timedelta(seconds=60)
    assert out.verdict.params["exhaustion_s"] == round(20 * 3600 / 4.1)
    text = sentence(
        "findings", "MEMORY_GROWTH", finding.params, fmt="text", strict=True, locale="en"
    )
    assert text.startswith("kernel slab has been growing 4.1 GiB/h since 0")
    assert "the node runs out of memory in 4h 52m" in text
    assert out.history is not None and out.history.growth is not None


def test_another_consumer_growing_is_a_finding_but_leaves_the_verdict_alone() -> None:
    flat = _series("pod:ml/a", "pod_working_set", lambda t: 60 * GIB)
    creep = _series("pod:ml/b", "pod_working_set", lambda t: 5 * GIB + t * 0.5 * GIB / 3600)
    out = apply_history(_diagnosis("host_memory_workload", "ml/a"), _history(flat, creep))
    finding = out.findings[0]
    assert (finding.subject, finding.params["leading"]) == ("pod:ml/b", 0)
    assert finding.params["before_window"] == 1
    assert "growth_rate_gib_per_h" not in out.verdict.params


def test_a_flat_node_gets_no_growth_finding_even_as_its_page_cache_fills() -> None:
    flat = _series("pod:ml/a", "pod_working_set", lambda t: 60 * GIB)
    cache = _series("node:page_cache", "page_cache", lambda t: 10 * GIB + t * 2 * GIB / 3600)
    out = apply_history(_diagnosis("healthy", "n1"), _history(flat, cache))
    assert [f.code for f in out.findings if f.code == "MEMORY_GROWTH"] == []


def test_markers_come_from_the_kernel_log_and_the_evictions_in_time_order() -> None:
    at = END - timedelta(minutes=30)
    log = KernelLog(
        window_s=86400,
        oom_kills=[OomKill(at=at, uptime_us=1, scope="node", pid=7, comm="python")],
        xids=[XidEvent(at=at - timedelta(minutes=5), uptime_us=1, code=79, gpu_index=3)],
    )
    view = ClusterView(
        node=NodeInfo(name="n1"),
        events=[
            EventInfo(
                namespace="ml",
                involved_kind="Pod",
                involved_name="p",
                reason="Evicted",
                last_seen=at + timedelta(minutes=1),
            ),
        ],
    )
    marks = markers_from(bundle(meminfo=meminfo(251), kernel_log=log), view)
    assert [(m.kind, m.subject, m.label) for m in marks] == [
        ("xid", "GPU 3", "XID 79"),
        ("oom_kill", "node", "global OOM kill python"),
        ("eviction", "ml/p", "evicted"),
    ]
    assert [m.params for m in marks] == [
        {"code": 79},
        {"scope": "global", "process": "python"},
        {"reason": "Evicted"},
    ]


def test_a_marker_stored_with_only_its_label_gets_the_params_a_presenter_words() -> None:
    """A snapshot written before markers carried params still says what happened: the params
    come from the label the core wrote then; a label it never wrote keeps none."""
    at = END.isoformat()
    stored = [
        {"at": at, "kind": "oom_kill", "subject": "ml/p", "label": "cgroup OOM kill py thon"},
        {
            "at": at,
            "kind": "oom_kill",
            "subject": "node",
            "label": "OOM kill (node_vmstat_oom_kill)",
        },
        {"at": at, "kind": "xid", "subject": "GPU 3", "label": "XID 79"},
        {"at": at, "kind": "restart", "subject": "ml/p/c", "label": "restart (OOMKilled)"},
        {"at": at, "kind": "action", "subject": "n1", "label": "tier 1 succeeded"},
    ]
    params = [Marker.model_validate({**m, "source": "kmsg"}).params for m in stored]
    assert params == [
        {"scope": "cgroup", "process": "py thon"},
        {"counter": "node_vmstat_oom_kill"},
        {"code": 79},
        {"reason": "OOMKilled"},
        {},
    ]


def test_the_verdict_sentence_quotes_the_growth_of_its_own_consumer() -> None:
    slab = _series("node:slab_unreclaimable", "kernel_slab_unreclaimable", _leak, "kernel slab")
    out = apply_history(_diagnosis("kernel_slab", "n1"), _history(slab))
    v = out.verdict
    text = sentence(
        "verdicts", v.cause, v.params, fmt="markdown", subject=v.subject, strict=True, locale="en"
    )
    assert "It has been growing 4.1 GiB/h since 0" in text
    assert text.endswith("at that rate the node runs out of memory in 4h 52m.")


def test_without_prometheus_the_diagnosis_still_carries_the_kernel_markers() -> None:
    from bot.core.diagnosis.rules.growth import attach

    at = END - timedelta(minutes=10)
    log = KernelLog(
        window_s=86400, oom_kills=[OomKill(at=at, uptime_us=1, scope="cgroup", pid=7, comm="x")]
    )
    b = bundle(meminfo=meminfo(251), kernel_log=log)
    out = attach(analyze(b, None, now=END), None, bundle=b, view=None, now=END)
    assert out.history is not None and out.history.source == "snapshot"
    assert [(m.kind, m.label) for m in out.history.markers] == [("oom_kill", "cgroup OOM kill x")]
    assert out.history.series == [] and out.history.start == at
