"""A DRA pod's claimed GPUs (driver, pool, device, claim) appear in the report's GPU part:
Slack's Details view, the terminal's text and Markdown, in each language."""

from __future__ import annotations

import json

import pytest

from bot.core.diagnosis.findings import DeviceClaim, Diagnosis
from bot.core.model.evidence import EvidenceBundle
from bot.render.blocks import details_view
from bot.render.markdown import render_report_markdown
from bot.render.text import render_report_text

CLAIMS = [
    DeviceClaim(
        pod="ml/train-0",
        claim="train-0-gpu",
        driver="gpu.nvidia.com",
        pool="dra-node-01",
        device="gpu-0",
    ),
    DeviceClaim(
        pod="ml/train-0",
        claim="train-0-gpu",
        driver="gpu.nvidia.com",
        pool="dra-node-01",
        device="gpu-1",
    ),
]


@pytest.mark.parametrize("locale", ["en", "zh-CN"])
def test_every_claimed_device_is_named_in_each_surface(
    seed_diagnosis: Diagnosis, seed_bundle: EvidenceBundle, locale: str
) -> None:
    d = seed_diagnosis.model_copy(update={"dra_devices": CLAIMS})
    text = render_report_text(d, seed_bundle, locale=locale)
    markdown = render_report_markdown(d, seed_bundle, locale=locale)
    slack = json.dumps(
        details_view(d, seed_bundle, incident="INC-0001", locale=locale), ensure_ascii=False
    )
    for c in CLAIMS:
        assert f"{c.pool}/{c.device}" in text
        assert f"| {c.pod} | {c.claim} | {c.driver} | {c.pool} | {c.device} |" in markdown
        assert f"`{c.pool}/{c.device}`" in slack
    assert ("GPUS HELD THROUGH DRA" in text) is (locale == "en")
    assert ("通过 DRA 持有的 GPU" in text) is (locale == "zh-CN")


def test_a_diagnosis_without_dra_pods_has_no_such_part(
    seed_diagnosis: Diagnosis, seed_bundle: EvidenceBundle
) -> None:
    assert seed_diagnosis.dra_devices == []
    assert "DRA" not in render_report_text(seed_diagnosis, seed_bundle, locale="en")
    assert "DRA" not in render_report_markdown(seed_diagnosis, seed_bundle, locale="en")
