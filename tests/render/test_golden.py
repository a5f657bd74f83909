"""Golden files: every fixture scenario, analysed by the real ``analyze``, in every format and
every locale (English in ``golden/<scenario>/``, each other locale in
``golden/<scenario>/<locale>/``).

Regenerate after an intended change with
``GPUNODE_UPDATE_GOLDEN=1 pytest tests/render/test_golden.py`` and review the diff. Each run
also validates the Block Kit and checks that every sentence rendered without the fallback
(no missing template or param).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bot.core.diagnosis.findings import Diagnosis
from bot.core.model.cluster import ClusterView
from bot.core.model.evidence import EvidenceBundle
from bot.core.reporting.analysis import analyze
from bot.render.blocks import details_view, diagnosis_messages
from bot.render.environment import DEFAULT_LOCALE, LOCALES
from bot.render.markdown import render_report_markdown
from bot.render.sentences import sentence
from bot.render.text import render_report_text
from bot.slack.blockkit import validate_blocks

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
BUNDLES = FIXTURES / "bundles"
GOLDEN = FIXTURES / "golden"
UPDATE = os.environ.get("GPUNODE_UPDATE_GOLDEN") == "1"
SCENARIOS = sorted(p.name for p in BUNDLES.iterdir() if (p / "evidence.json").is_file())
MESSAGES = ("brief",)


def load(scenario: str) -> tuple[Diagnosis, EvidenceBundle]:
    bundle = EvidenceBundle.model_validate_json((BUNDLES / scenario / "evidence.json").read_text())
    view_path = BUNDLES / scenario / "cluster.json"
    view = ClusterView.model_validate_json(view_path.read_text()) if view_path.exists() else None
    return analyze(bundle, view, now=bundle.collected_at), bundle


def outputs(scenario: str, locale: str = DEFAULT_LOCALE) -> dict[str, str]:
    diagnosis, bundle = load(scenario)
    out: dict[str, str] = {}
    messages = diagnosis_messages(diagnosis, bundle, incident="INC-0001", locale=locale)
    for name, (text, blocks) in zip(MESSAGES, messages, strict=True):
        validate_blocks(blocks)
        out[f"{name}.blocks.json"] = (
            json.dumps({"text": text, "blocks": blocks}, indent=2, ensure_ascii=False) + "\n"
        )
    details = details_view(diagnosis, bundle, incident="INC-0001", locale=locale)
    validate_blocks(details["blocks"], surface="modal")
    out["details.view.json"] = json.dumps(details, indent=2, ensure_ascii=False) + "\n"
    out["report.md"] = render_report_markdown(diagnosis, bundle, incident="INC-0001", locale=locale)
    out["report.txt"] = render_report_text(diagnosis, bundle, incident="INC-0001", locale=locale)
    return out


def golden_folder(scenario: str, locale: str) -> Path:
    return GOLDEN / scenario if locale == DEFAULT_LOCALE else GOLDEN / scenario / locale


def test_there_are_scenarios() -> None:
    assert "seed" in SCENARIOS


@pytest.mark.parametrize("locale", LOCALES)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_renderings_match_the_golden_files(scenario: str, locale: str) -> None:
    produced = outputs(scenario, locale)
    folder = golden_folder(scenario, locale)
    if UPDATE:
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in produced.items():
            (folder / name).write_text(text, encoding="utf-8")
    for name, text in produced.items():
        path = folder / name
        assert path.exists(), f"missing {path}; run with GPUNODE_UPDATE_GOLDEN=1"
        assert text == path.read_text(encoding="utf-8"), f"{folder.name}/{name} changed"


@pytest.mark.parametrize("locale", LOCALES)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_sentence_of_the_scenario_renders_without_fallback(
    scenario: str, locale: str
) -> None:
    diagnosis, _bundle = load(scenario)
    v = diagnosis.verdict
    sentence(
        "verdicts", v.cause, v.params, fmt="text", subject=v.subject, locale=locale, strict=True
    )
    for f in diagnosis.findings:
        sentence(
            "findings",
            f.code,
            f.params,
            fmt="text",
            subject=f.subject,
            severity=f.severity,
            locale=locale,
            strict=True,
        )
    for tp in diagnosis.talking_points:
        sentence("talking_points", tp.key, tp.params, fmt="text", locale=locale, strict=True)
    for plan in diagnosis.plans:
        for w in plan.warnings:
            sentence("warnings", w, {}, fmt="text", locale=locale, strict=True)
        for n in plan.notes:
            sentence("notes", n.code, n.params, fmt="text", locale=locale, strict=True)
