"""Each pod is named with one figure, the same string in every section of a rendered
diagnosis: its working set (usage − inactive file, the kubelet's measure for eviction), said
once in the pod list's legend. The seed story through the real collector, gateway and
analysis (the stand-in's host tree), rendered in English as the CLI text, the Markdown report,
the Details view and the brief message.

The other measures of a pod the product could state (its ledger share, anon + active file,
without the kernel memory charged to it; its consumer row, the working set less its own
/dev/shm) must not appear where they would read as a second figure for the same pod.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from bot.core.diagnosis.findings import Diagnosis
from bot.core.model.evidence import EvidenceBundle
from bot.render.blocks import details_view, diagnosis_messages
from bot.render.filters import fmt_bytes
from bot.render.markdown import render_report_markdown
from bot.render.text import render_report_text
from gpunode_sandbox.corpus import judge_with_view
from gpunode_sandbox.kubesim import KubeSim, load_scenario
from gpunode_sandbox.slacksim.blocks import message_text

pytestmark = pytest.mark.slow


def sections(d: Diagnosis, bundle: EvidenceBundle) -> dict[str, str]:
    details = details_view(d, bundle, incident="INC-0001", locale="en")
    brief = diagnosis_messages(d, bundle, incident="INC-0001", locale="en")
    return {
        "text": render_report_text(d, bundle, incident="INC-0001", locale="en"),
        "markdown": render_report_markdown(d, bundle, incident="INC-0001", locale="en"),
        "details": message_text({"blocks": details["blocks"]}),
        "brief": "\n".join(message_text({"blocks": blocks}) for _, blocks in brief),
    }


def shmem_of(bundle: EvidenceBundle, uid: str) -> int:
    return sum(c.shmem_bytes or 0 for c in bundle.containers if c.pod_uid == uid)


Rendered = tuple[Diagnosis, dict[str, str], dict[str, tuple[str, set[str]]]]


async def rendered(make_kubesim: Callable[..., Awaitable[KubeSim]]) -> Rendered:
    """The seed diagnosis, its sections, and per pod: (its figure as written, the strings of
    its other measures that differ from every pod's figure)."""
    scenario = load_scenario("seed")
    sim = await make_kubesim(scenario)
    d, bundle, view = await judge_with_view(scenario, url=sim.url)
    uids = {p.key: p.uid for p in view.pods}
    entries = [e for e in d.ledger.entries if e.category == "pod" and e.pod_key is not None]
    written = {fmt_bytes(e.figure) for e in entries}
    pods: dict[str, tuple[str, set[str]]] = {}
    for e in entries:
        assert e.pod_key is not None and e.working_set_bytes is not None
        shmem = shmem_of(bundle, uids.get(e.pod_key, ""))
        others = {fmt_bytes(e.bytes), fmt_bytes(e.working_set_bytes - shmem)} - written
        pods[e.pod_key] = (fmt_bytes(e.working_set_bytes), others)
    return d, sections(d, bundle), pods


def second_figures(texts: dict[str, str], pods: dict[str, tuple[str, set[str]]]) -> list[str]:
    out = []
    for pod, (figure, others) in pods.items():
        for name, text in texts.items():
            out += [f"{name}: {pod} as {o}" for o in sorted(others) if o in text]
            named = pod in text or pod.rsplit("-", 2)[0] in text
            if name != "brief" and named and figure not in text:
                out.append(f"{name}: {pod} without its figure {figure}")
    return out


async def test_a_pod_without_shmem_has_one_figure_in_every_section(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    _, texts, pods = await rendered(make_kubesim)
    plain = {k: v for k, v in pods.items() if "train-llm" not in k}
    assert "data-prep/preprocess" in " ".join(plain)  # its measures differ (61.5 vs 61.8 GiB)
    assert any(others for _, others in plain.values())
    assert second_figures(texts, plain) == []


async def test_a_pod_with_its_own_shmem_has_one_figure_in_every_section(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    _, texts, pods = await rendered(make_kubesim)
    trainer = {k: v for k, v in pods.items() if "train-llm" in k}
    assert trainer
    assert second_figures(texts, trainer) == []
