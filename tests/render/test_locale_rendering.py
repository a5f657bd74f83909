"""The same parameters render in every locale: every message kind, for every
fixture scenario (fast) and every scenario of the labelled corpus (slow, through the real
collector and gateway), with no StrictUndefined error and no sentence fallback; every notice
key; Slack's limits with CJK text (Slack counts characters); mrkdwn escaping unchanged."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from bot.core.diagnosis.findings import Diagnosis
from bot.core.diagnosis.xid import CATALOG, describe
from bot.core.reporting.analysis import analyze
from bot.render.blocks import HEADER_TEXT, SECTION_TEXT, diagnosis_messages
from bot.render.environment import DEFAULT_LOCALE, LOCALES
from bot.render.filters import truncate
from bot.render.notices import NOTICE_KEYS
from bot.render.sentences import sentence
from bot.services.operations import NodeRank
from bot.slack.blockkit import validate_blocks
from gpunode_sandbox.corpus import corpus_names
from tests.kube.judged import judged
from tests.render.conftest import HOSTILE
from tests.render.locale_renderings import every_message
from tests.render.test_golden import SCENARIOS
from tests.render.told import render_notice
from tests.services.fakes import load_scenario as load_fixture

OTHER_LOCALES = [loc for loc in LOCALES if loc != DEFAULT_LOCALE]
#: messages whose whole text is the caller's
CALLERS_TEXT = {"sentences"}
T0 = datetime(2026, 12, 1, 2, 0, tzinfo=UTC)


def _texts(value: Any, *, mrkdwn_only: bool = False) -> list[str]:
    """Every ``text`` string in a block tree or view (only mrkdwn objects' if asked: a
    ``plain_text`` header shows its characters as they are and needs no escaping)."""
    if isinstance(value, dict):
        own = (
            [value["text"]]
            if isinstance(value.get("text"), str)
            and (not mrkdwn_only or value.get("type") == "mrkdwn")
            else []
        )
        return own + [t for v in value.values() for t in _texts(v, mrkdwn_only=mrkdwn_only)]
    if isinstance(value, list | tuple):
        return [t for v in value for t in _texts(v, mrkdwn_only=mrkdwn_only)]
    return []


@pytest.mark.parametrize("locale", LOCALES)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_message_kind_renders_with_the_same_parameters_in_every_locale(
    scenario: str, locale: str
) -> None:
    bundle, view = load_fixture(scenario)
    d = analyze(bundle, view, now=bundle.collected_at)

    rendered = every_message(d, bundle, view, locale)
    english = every_message(d, bundle, view, DEFAULT_LOCALE)

    assert rendered.keys() == english.keys()
    if locale != DEFAULT_LOCALE:  # the locale is really used, message by message
        same = [k for k in rendered if k not in CALLERS_TEXT and rendered[k] == english[k]]
        assert same == [], f"rendered identically to English: {same}"


@pytest.mark.slow
@pytest.mark.parametrize("name", corpus_names())
async def test_every_corpus_scenario_renders_every_message_kind_in_every_locale(name: str) -> None:
    diagnosis, bundle, _ = await judged(name)  # the corpus tests' diagnosis (one per process)

    kinds = [every_message(diagnosis, bundle, None, locale).keys() for locale in LOCALES]

    assert all(k == kinds[0] for k in kinds)


#: sample params for every notice key (the test below insists every key has one)
NOTICE_SAMPLES: dict[str, list[dict[str, Any]]] = {
    "diagnose_started": [{"node": "gpu-node-01"}],
    "diagnose_joined": [
        {"node": "gpu-node-01", "user": u} for u in ("U0BOB", "gpunode", "alertmanager", "")
    ],
    "diagnose_joined_running": [{"node": "gpu-node-01", "user": u} for u in ("U0BOB", "")],
    "diagnose_failed": [{"reason": "the Job timed out", "code": "timeout", "what_to_do": "retry"}],
    "node_not_found": [
        {"node": "x", "known_nodes": [f"gpu-{i}" for i in range(25)]},
        {"node": "x"},
    ],
    "usage_error": [{"message": "unknown command", "usage": "/gpunode diagnose NODE"}],
    "help": [{"text": "help"}],
    "status_list": [
        {"incidents": []},
        {
            "incidents": [
                {"id": "INC-1", "node": "n", "state": s, "opened_at": T0}
                for s in ("investigating", "mitigating", "resolved")
            ]
        },
    ],
    "top_nodes": [
        {"rows": []},
        {"rows": [NodeRank("gpu-node-01", True, 99, 85, 92, 1.0, "default").__dict__]},
    ],
    "alert_firing": [{"alertname": "GpuNodeMemoryLow", "node": "gpu-node-01"}],
    "alert_resolved": [{"alertname": "GpuNodeMemoryLow", "node": "gpu-node-01"}],
    "alerts_skipped": [
        {
            "skipped": [
                {"node": f"n{i}", "alertname": "A", "cap": c}
                for i, c in enumerate(["per_request", "per_node", "per_window"] * 8)
            ],
            "per_request": 5,
            "per_window": 10,
            "window_s": 600,
        },
    ],
    "resolved": [{"incident_id": "INC-1", "by": b, "note": "n"} for b in ("U0AL", "gpunode")],
    "timeline_uploaded": [{"incident_id": "INC-1"}],
    "channel_not_served": [{"channel": "C123"}],
    "command_failed": [{"message": "forbidden", "code": "forbidden"}],
    "command_started": [{"command": "diagnose gpu-node-01"}],
    "malformed_request": [{"problem": "bad value"}],
}


def test_every_notice_key_has_sample_params() -> None:
    assert set(NOTICE_SAMPLES) == set(NOTICE_KEYS)


@pytest.mark.parametrize("locale", LOCALES)
@pytest.mark.parametrize("key", NOTICE_KEYS)
def test_every_notice_renders_in_every_locale(key: str, locale: str) -> None:
    for params in NOTICE_SAMPLES[key]:
        text, blocks = render_notice(key, locale=locale, **params)
        english, _ = render_notice(key, **params)
        validate_blocks(blocks)
        assert text
        if locale != DEFAULT_LOCALE and key not in ("help", "usage_error"):  # the caller's text
            assert text != english


@pytest.mark.parametrize("locale", OTHER_LOCALES)
@pytest.mark.parametrize("code", [*sorted(CATALOG), 999])
def test_every_catalogued_xid_is_explained_in_every_locale(code: int, locale: str) -> None:
    info = describe(code)
    params: dict[str, str | int | float | None] = {
        "code": code,
        "meaning": info.meaning,
        "origin": info.origin,
        "action": info.action,
        "gpu_lost": int(info.gpu_lost),
        "gpu_index": 3,
        "gpu_uuid": "",
        "pci_bus_id": "",
        "last_at": "2026-12-01T02:00:00+00:00",
        "count": 2,
        "process": "",
    }
    ours = sentence("findings", "GPU_XID", params, fmt="mrkdwn", locale=locale, strict=True)
    english_words = [info.meaning, info.action]
    if code in CATALOG:  # a catalogued code reads entirely in the locale
        assert not any(w in ours for w in english_words), ours
    else:  # a code gpunode does not know keeps the catalogue's words (better than nothing)
        assert info.action in ours


#: a CJK character or full-width punctuation
_CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
#: bold, code and italic spans of mrkdwn (an italic's `_` not inside an identifier)
_SPAN = re.compile(r"\*[^*\n]+\*|`[^`\n]+`|(?<![A-Za-z0-9])_[^_\n]+_(?![A-Za-z0-9])")
DOCUMENTS = ("report.", "timeline.", "postmortem.", "prevention", "sentences", "vote.")


@pytest.mark.parametrize("locale", OTHER_LOCALES)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_mrkdwn_markers_never_touch_a_cjk_character_on_their_outer_side(
    scenario: str, locale: str
) -> None:
    """Slack renders *bold*, `code` and _italic_ only with a space or ASCII punctuation
    outside the markers; glued to a CJK character they show as literal characters."""
    bundle, view = load_fixture(scenario)
    d = analyze(bundle, view, now=bundle.collected_at)
    glued = set()
    for name, message in every_message(d, bundle, view, locale).items():
        if name.startswith(DOCUMENTS):
            continue
        for text in _texts(message, mrkdwn_only=True):
            for m in _SPAN.finditer(text):
                before = text[m.start() - 1] if m.start() else " "
                after = text[m.end()] if m.end() < len(text) else " "
                if _CJK.match(before) or _CJK.match(after):
                    glued.add(f"{name}: {text[max(0, m.start() - 4) : m.end() + 4]}")
    assert sorted(glued) == []


# --- Slack's limits with CJK text ---------------------------------------------------------

CJK = "训练任务占用主机内存"  # ten characters, thirty UTF-8 bytes


def test_slack_limits_count_characters_so_cjk_text_fills_a_section_to_the_limit() -> None:
    text = truncate(CJK * 400, SECTION_TEXT)
    assert len(text) == SECTION_TEXT and len(text.encode()) > SECTION_TEXT
    validate_blocks([{"type": "section", "text": {"type": "mrkdwn", "text": text}}])


@pytest.mark.parametrize(
    ("text", "limit", "kept"),
    [
        ("节点" * 20, 40, "节点" * 20),  # fits: not cut
        ("节点" * 10 + "&amp;后面", 22, "节点" * 10),  # would end in "&"
        ("节点" * 10 + "a&amp;b", 24, "节点" * 10 + "a"),  # would end in "&am"
        ("节点" * 10 + "&lt;x&gt;", 23, "节点" * 10),  # would end in "&l"
        ("节点" * 10 + "&gt;", 24, "节点" * 10 + "&gt;"),  # fits: kept whole
        ("申请人 <@U123ABC> 的原因", 10, "申请人 "),  # would end inside a mention
        ("过期 <!date^1^{time}|02:00 UTC> 了", 20, "过期 "),  # inside a date sequence
        ("表情" + "\ud83d\ude00" * 4, 5, "表情\ud83d\ude00"),  # never half a surrogate pair
        ("表情" + "\ud83d\ude00" * 4, 6, "表情\ud83d\ude00"),
    ],
)
def test_truncation_never_cuts_an_escape_a_control_sequence_or_a_surrogate_pair(
    text: str, limit: int, kept: str
) -> None:
    cut = truncate(text, limit)
    assert cut == (kept if kept == text else kept + "…")
    assert len(cut) <= limit


@pytest.fixture
def cjk_diagnosis(diagnosis_factory: Callable[..., Diagnosis]) -> Diagnosis:
    """Hundreds of pods whose names are long runs of CJK characters (wider than any limit)."""
    pods = [
        (f"团队-{i % 7}/" + "训练" * 120 + f"-{i:03d}", (300 - i) * 1024**3 // 4)
        for i in range(300)
    ]
    return diagnosis_factory(node="节点" * 100, pods=pods, n_findings=300)


@pytest.mark.parametrize("locale", LOCALES)
def test_block_kit_limits_hold_with_cjk_text_in_every_locale(
    cjk_diagnosis: Diagnosis, locale: str
) -> None:
    for _text, blocks in diagnosis_messages(cjk_diagnosis, incident="INC-0042", locale=locale):
        validate_blocks(blocks)  # sections <= 3000, fields <= 2000, <= 50 blocks, ~12k total
        for b in blocks:
            if b["type"] == "header":
                assert len(b["text"]["text"]) <= HEADER_TEXT
            for e in b.get("elements", []):
                if e.get("type") == "button":
                    assert len(e["text"]["text"]) <= 75
        for t in _texts(blocks):
            assert not re.search(r"&[a-z]{0,3}…|<[^>]*…$|[\ud800-\udbff]…", t), t


@pytest.mark.parametrize("locale", LOCALES)
def test_the_action_flow_fits_slack_with_cjk_names(cjk_diagnosis: Diagnosis, locale: str) -> None:
    # validates every message; the hand-built diagnosis lacks some params analysis gives
    rendered = every_message(cjk_diagnosis, None, None, locale, strict=False)
    for name, value in rendered.items():
        if name.endswith(".modal"):
            view: dict[str, Any] = value  # type: ignore[assignment]
            assert all(len(view[k]["text"]) <= 24 for k in ("title", "submit", "close"))
            if locale != DEFAULT_LOCALE:  # every word of the modal's frame is translated
                english: dict[str, Any] = every_message(  # type: ignore[assignment]
                    cjk_diagnosis, None, None, DEFAULT_LOCALE, strict=False
                )[name]
                for k in ("title", "submit", "close"):
                    assert view[k]["text"] != english[k]["text"], k


# --- mrkdwn escaping is the same in every locale -------------------------------------------


def _escaped_tokens(texts: list[str]) -> list[str]:
    """The escapes and control sequences in the texts, in order."""
    return re.findall(r"&(?:amp|lt|gt);|<[@#!][^>]*>", "\n".join(texts))


@pytest.mark.parametrize("locale", OTHER_LOCALES)
def test_hostile_names_are_escaped_identically_in_every_locale(
    hostile_diagnosis: Diagnosis, locale: str
) -> None:
    for (_, theirs), (_, ours) in zip(
        diagnosis_messages(hostile_diagnosis, incident="INC-0001", locale="en"),
        diagnosis_messages(hostile_diagnosis, incident="INC-0001", locale=locale),
        strict=True,
    ):
        texts = _texts(ours, mrkdwn_only=True)
        joined = "\n".join(texts)
        assert "<!channel>" not in joined and "a&b" not in joined and "<c>" not in joined
        assert not re.search(r"<(?![@#!])", joined)  # every '<' left is a sequence we built
        assert "&lt;!channel&gt; a&amp;b&lt;c&gt;" in joined or "INC-0001" in joined
        assert sorted(_escaped_tokens(texts)) == sorted(
            _escaped_tokens(_texts(theirs, mrkdwn_only=True))
        )


@pytest.mark.parametrize("locale", OTHER_LOCALES)
def test_untrusted_notice_params_are_escaped_identically_in_every_locale(locale: str) -> None:
    for key, samples in NOTICE_SAMPLES.items():
        for params in samples:
            hostile = {
                k: HOSTILE if isinstance(v, str) and k not in ("user", "by") else v
                for k, v in params.items()
            }
            _, ours = render_notice(key, locale=locale, **hostile)
            _, theirs = render_notice(key, **hostile)
            texts = _texts(ours, mrkdwn_only=True)
            assert "<!channel>" not in "\n".join(texts)
            expected = _escaped_tokens(_texts(theirs, mrkdwn_only=True))
            assert sorted(_escaped_tokens(texts)) == sorted(expected), key
