"""The combined GPU-evidence gap reads in the reader's language: what was tried (the NVIDIA
RuntimeClass, a missing one, the node's default runtime), why NVML failed (each failure by
its own code), the hint for the node's install (MIG, MPS, GKE, Bottlerocket, a RuntimeClass
that does not inject NVML, no RuntimeClass) and every dcgm-exporter attempt after it (rows
found, or why none, a Kubernetes error met on the way included). An English reader reads
exactly the gap's English reason."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from bot.core.diagnosis.dcgm import DcgmAttempt, join, parse_exposition, pod_memory
from bot.core.model.cluster import NodeInfo
from bot.core.model.evidence import EvidenceBundle, Gap
from bot.core.reporting.analysis import analyze
from bot.kube.gateway import Gateway
from bot.kube.gpuevidence import GpuPlan, evidence_gap
from bot.render.errors import gap_text
from tests.kube.conftest import settings_for
from tests.ports import refusing_port
from tests.render.locale_renderings import every_message
from tests.render.test_catalogs import _PRE, _STRAIGHT_QUOTED, KNOWN_ENGLISH, _texts, english_words
from tests.services.fakes import load_scenario as load_fixture

NVML_FAILED = [
    Gap(source="nvml", reason="NVML library not found", code="nvml_library_missing"),
    Gap(
        source="nvml:gpu0:processes",
        reason="query failed (Insufficient Permissions)",
        code="nvml_query_failed",
        params={"error": "Insufficient Permissions"},
    ),
]
#: how the plan tried NVML: through the class, past a missing class, by the default runtime
PLANS = {
    "runtime_class": GpuPlan("nvidia", True, ['NVML through RuntimeClass "nvidia"'], [], "nvidia"),
    "missing_runtime_class": GpuPlan(
        None,
        True,
        ['RuntimeClass "nvidia" (it does not exist)', "NVML through the node's default runtime"],
        [],
        "nvidia",
    ),
    "default_runtime": GpuPlan(None, True, ["NVML through the node's default runtime"]),
}
#: nodes whose install each hint is about
NODES = {
    "mig_mps_gke": NodeInfo(
        name="n1",
        labels={
            "nvidia.com/mig.strategy": "mixed",
            "nvidia.com/mps.capable": "true",
            "cloud.google.com/gke-accelerator": "nvidia-h100-80gb",
        },
    ),
    "bottlerocket": NodeInfo(name="n1", os_image="Bottlerocket OS 1.20"),
    "plain": NodeInfo(name="n1"),
}
FB = "DCGM_FI_DEV_FB_USED"


def _rows(text: str, **at: str | int) -> DcgmAttempt:
    return pod_memory(parse_exposition(text), way="Prometheus", via="prometheus", at=at)


def _series(pod: str, used: int, gpu: str = "0") -> str:
    return f'{FB}{{gpu="{gpu}",UUID="GPU-{gpu}",pod="{pod}",namespace="ml"}} {used}\n'


#: every kind of dcgm-exporter attempt: rows (one pod; several, shared), each failure
ATTEMPTS = [
    _rows(_series("a", 2048)),
    _rows("".join(_series(f"p{i}", 1024 * i, gpu="0") for i in range(1, 8))),
    _rows(f'{FB}{{gpu="0"}} 10\n'),
    _rows(f'{FB}{{gpu="0",pod="",namespace=""}} 10\n'),
    _rows(""),
    *(
        DcgmAttempt("the exporter's endpoint", failure=text, via="endpoint", code=code)
        for code, text in (
            ("dcgm_off", "off in the bot's settings (kube.dcgm_exporter_services)"),
            (
                "slices_forbidden",
                "the bot may not list EndpointSlices (discovery.k8s.io); apply deploy/base's RBAC",
            ),
        )
    ),
    DcgmAttempt(
        "Prometheus",
        failure="no answer within 2 s",
        via="prometheus",
        code="no_answer_within",
        params={"timeout_s": "2"},
    ),
]


def _unreachable_read() -> DcgmAttempt:
    """The exporter's endpoint asked through an API server that refuses the connection: the
    gateway's own attempt, quoting the Kubernetes error it met."""

    async def read() -> DcgmAttempt:
        with refusing_port() as port:
            gateway = Gateway.from_settings(settings_for(f"https://127.0.0.1:{port}"))
            try:
                return await gateway.read_dcgm_exporter("gpu-node-01")
            finally:
                gateway.close()

    attempt = asyncio.run(read())
    assert attempt.code == "exporter_read_failed", attempt
    return attempt


ATTEMPTS.append(_unreachable_read())


def _bundle() -> EvidenceBundle:
    return EvidenceBundle(
        collector_version="t",
        hostname="n1",
        collected_at=datetime(2026, 1, 1, tzinfo=UTC),
        gaps=NVML_FAILED,
    )


def _gaps() -> list[Gap]:
    """The gap for every plan and install, then the same gap extended by every attempt."""
    out = []
    for plan in PLANS.values():
        for node in NODES.values():
            gap = evidence_gap(node, plan, _bundle())
            assert gap is not None
            out.append(gap)
    bundle = _bundle().model_copy(update={"gaps": [*NVML_FAILED, out[0]]})
    for attempt in ATTEMPTS:
        bundle = join(bundle, attempt)
        out.append(next(g for g in bundle.gaps if g.code == "gpu_evidence_unread"))
    return out


GAPS = _gaps()


def test_the_gap_names_every_install_hint_and_every_attempt() -> None:
    hints = {h for g in GAPS for h in str(g.params["hints"]).split(",") if h}
    assert hints == {
        "mig",
        "mps",
        "gke",
        "bottlerocket",
        "runtime_class_without_nvml",
        "default_runtime_without_nvml",
    }
    assert GAPS[-1].params["dcgm"] == len(ATTEMPTS)


@pytest.mark.parametrize("gap", GAPS, ids=range(len(GAPS)))
def test_an_english_reader_reads_the_gaps_own_reason(gap: Gap) -> None:
    assert gap_text(gap.code, gap.params, "«no words»", "en") == gap.reason


def _quoted(text: str, gap: Gap) -> str:
    """``text`` less what is quoted as it was said (an NVML error, pods and their figures)."""
    for key, value in gap.params.items():
        if key.endswith(("_error", "_named")) and value:
            text = text.replace(str(value), " ")
    return text


@pytest.mark.parametrize("locale", ["zh-CN", "en-XA"])
@pytest.mark.parametrize("gap", GAPS, ids=range(len(GAPS)))
def test_no_english_sentence_reaches_the_gap_in_another_locale(gap: Gap, locale: str) -> None:
    words = gap_text(gap.code, gap.params, "«no words»", locale)
    assert words != "«no words»"
    assert english_words(_quoted(words, gap)) == [], words


@pytest.mark.parametrize("locale", ["zh-CN", "en-XA"])
def test_a_failed_read_of_the_exporter_words_the_kubernetes_error_it_met(locale: str) -> None:
    """The error is kept as its key and flat params beside its English text: English reads
    the text as raised, another language the error's own words (the request it answered
    included), with nothing English left but the quoted address."""
    attempt = ATTEMPTS[-1]
    bundle = join(_bundle().model_copy(update={"gaps": [*NVML_FAILED, GAPS[0]]}), attempt)
    gap = next(g for g in bundle.gaps if g.code == "gpu_evidence_unread")
    assert gap_text(gap.code, gap.params, "«no words»", "en") == gap.reason
    assert str(attempt.failure) in gap.reason

    words = gap_text(gap.code, gap.params, "«no words»", locale)
    assert "127.0.0.1" in words and "gpu-node-01" in words
    assert english_words(words) == [], words


@pytest.mark.parametrize("locale", ["zh-CN", "en-XA"])
def test_every_view_of_a_gpu_node_without_gpu_evidence_words_the_gap(locale: str) -> None:
    """The seed node diagnosed with no GPU read and the full gap: its finding, its talking
    points ("GPU memory could not be verified", "Not verified") and every message that shows
    them carry no English sentence."""
    bundle, view = load_fixture("seed")
    seen = bundle.model_copy(update={"gpus": [], "gaps": [*bundle.gaps, GAPS[-1]]})
    diagnosis = analyze(seen, view, now=seen.collected_at)
    assert "GPU_NOT_VERIFIED" in {f.code for f in diagnosis.findings}
    views = {n: m for n, m in every_message(diagnosis, seen, view, locale).items()}
    views = {n: m for n, m in views.items() if n not in KNOWN_ENGLISH}
    views["postmortem.html"] = _PRE.sub(" ", str(views["postmortem.html"]))
    leaks = {
        name: words
        for name, message in views.items()
        for text in _texts(message)
        if (words := english_words(_STRAIGHT_QUOTED.sub(" ", text) if locale == "en-XA" else text))
    }
    assert leaks == {}
