"""dcgm-exporter's text becomes per-pod GPU memory: its exposition format parsed as Prometheus
writes it (escapes, timestamps, comments), both spellings of the pod labels (the exporter's own
and a Prometheus that renames them ``exported_*``), MIG instances apart, devices shared by
pods said to be shared, and each reason for having none worded for what to fix."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.core.diagnosis.dcgm import (
    DcgmAttempt,
    ExpositionError,
    join,
    needs_dcgm,
    parse_exposition,
    pod_memory,
    samples_as_series,
)
from bot.core.model.evidence import EvidenceBundle, Gap

MiB = 1024**2
BASE = (
    'gpu="{gpu}",UUID="GPU-{gpu}",device="nvidia{gpu}",modelName="NVIDIA H100 80GB HBM3",'
    'Hostname="n1"'
)


def _line(metric: str, gpu: int, value: float, **labels: str) -> str:
    extra = "".join(f',{k}="{v}"' for k, v in labels.items())
    return f"{metric}{{{BASE.format(gpu=gpu)}{extra}}} {value:g}"


def test_exposition_text_is_parsed_with_escapes_timestamps_and_comments() -> None:
    text = "\n".join(
        [
            "# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).",
            "# TYPE DCGM_FI_DEV_FB_USED gauge",
            'DCGM_FI_DEV_FB_USED{gpu="0",modelName="A \\"quoted\\" name, with {braces}"} '
            "61440 1700000000000",
            "process_open_fds 12",
            "",
        ]
    )
    series = parse_exposition(text)
    assert series == [
        (
            "DCGM_FI_DEV_FB_USED",
            {"gpu": "0", "modelName": 'A "quoted" name, with {braces}'},
            61440.0,
        ),
        ("process_open_fds", {}, 12.0),
    ]


@pytest.mark.parametrize(
    "bad", ['DCGM_FI_DEV_FB_USED{gpu="0" 1', "DCGM_FI_DEV_FB_USED{gpu=0} 1", "x{} many", "{} 1"]
)
def test_text_that_is_not_the_exposition_format_is_refused_with_its_line(bad: str) -> None:
    with pytest.raises(ExpositionError, match="line 2"):
        parse_exposition("# TYPE x gauge\n" + bad)


@pytest.mark.parametrize("prefix", ["", "exported_"])
def test_each_pod_gets_its_gpus_framebuffer_under_either_spelling_of_the_labels(
    prefix: str,
) -> None:
    who = {f"{prefix}pod": "train-0", f"{prefix}namespace": "ml", f"{prefix}container": "main"}
    text = "\n".join(
        [
            _line("DCGM_FI_DEV_FB_USED", 0, 61440, **who),
            _line("DCGM_FI_DEV_FB_FREE", 0, 20480, **who),
            _line("DCGM_FI_DEV_FB_USED", 1, 1024, pod="", namespace="", container=""),
        ]
    )
    attempt = pod_memory(parse_exposition(text), way="the endpoint")
    [row] = attempt.memory
    assert (row.namespace, row.pod, row.container, row.gpu) == ("ml", "train-0", "main", "0")
    assert row.used_bytes == 61440 * MiB and row.free_bytes == 20480 * MiB
    assert row.shared_by == 1 and row.source == "dcgm-exporter"  # the caller said not how


def test_mig_instances_of_one_gpu_are_separate_and_not_shared() -> None:
    text = "\n".join(
        _line(
            "DCGM_FI_DEV_FB_USED",
            0,
            used,
            pod=pod,
            namespace="s",
            container="c",
            GPU_I_PROFILE=profile,
            GPU_I_ID=gi,
        )
        for pod, used, profile, gi in (("a", 9000, "1g.10gb", "7"), ("b", 30000, "3g.40gb", "1"))
    )
    rows = pod_memory(parse_exposition(text), way="w").memory
    assert [(r.pod, r.mig_profile, r.mig_instance, r.shared_by) for r in rows] == [
        ("a", "1g.10gb", "7", 1),
        ("b", "3g.40gb", "1", 1),
    ]


def test_pods_sharing_a_time_sliced_gpu_are_told_the_figure_is_the_devices() -> None:
    text = "\n".join(
        _line("DCGM_FI_DEV_FB_USED", 0, 50000, pod=p, namespace="r", container="nb")
        for p in ("nb-1", "nb-2", "nb-3")
    )
    attempt = pod_memory(parse_exposition(text), way="w")
    assert [r.shared_by for r in attempt.memory] == [3, 3, 3]
    bundle = join(_bundle_with_gap(), attempt)
    [why] = [g.reason for g in bundle.gaps if g.source == "gpu:evidence"]
    assert "pods that share a GPU each show the device's total" in why


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("process_open_fds 3", "no DCGM_FI_DEV_FB_USED series"),
        (_line("DCGM_FI_DEV_FB_USED", 0, 100), "Kubernetes mapping is off"),
        (
            _line("DCGM_FI_DEV_FB_USED", 0, 100, pod="", namespace="", container=""),
            "none of its 1 DCGM_FI_DEV_FB_USED series names a pod",
        ),
    ],
)
def test_each_reason_for_no_pod_figures_says_what_to_fix(text: str, reason: str) -> None:
    attempt = pod_memory(parse_exposition(text), way="w")
    assert attempt.memory == () and attempt.failure is not None and reason in attempt.failure


def test_prometheus_samples_read_like_the_exporters_own_text() -> None:
    labels = {
        "__name__": "DCGM_FI_DEV_FB_USED",
        "gpu": "0",
        "exported_pod": "p",
        "exported_namespace": "n",
        "exported_container": "c",
        "pod": "dcgm-exporter-x",  # the scrape target: the exporter's own pod
        "namespace": "gpu-operator",
    }
    [row] = pod_memory(samples_as_series([(labels, 2048.0)]), way="Prometheus").memory
    assert (row.namespace, row.pod, row.used_bytes) == ("n", "p", 2048 * MiB)


def _bundle_with_gap() -> EvidenceBundle:
    return EvidenceBundle(
        collector_version="t",
        hostname="n1",
        collected_at=datetime(2026, 1, 1, tzinfo=UTC),
        gaps=[Gap(source="gpu:evidence", reason="Tried: NVML (failed).")],
    )


def test_a_failed_attempt_extends_the_gap_and_a_later_one_can_still_fill_it() -> None:
    bundle = _bundle_with_gap()
    assert needs_dcgm(bundle, nvidia=True)
    bundle = join(bundle, DcgmAttempt("the endpoint", failure="no endpoint on n1"))
    assert needs_dcgm(bundle, nvidia=True)
    text = _line("DCGM_FI_DEV_FB_USED", 0, 1024, pod="p", namespace="n", container="c")
    bundle = join(bundle, pod_memory(parse_exposition(text), way="Prometheus"))
    assert not needs_dcgm(bundle, nvidia=True) and [r.pod for r in bundle.pod_gpu_memory] == ["p"]
    [why] = [g.reason for g in bundle.gaps]
    assert why.startswith("Tried: NVML (failed). dcgm-exporter via the endpoint: no endpoint")
    assert why.endswith(
        "via Prometheus (1 pod: n/p 1.0 GiB): the framebuffer used on each pod's "
        "GPU or MIG instance, not per process."
    )


def test_without_a_gpu_evidence_gap_no_exporter_is_asked() -> None:
    bundle = _bundle_with_gap().model_copy(update={"gaps": []})
    assert not needs_dcgm(bundle, nvidia=True)
    assert not needs_dcgm(_bundle_with_gap(), nvidia=False)  # AMD: NVIDIA's exporter is moot
