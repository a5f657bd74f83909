"""The console's own labels: in ``?lang=`` if gpunode speaks it, else the acting person's
Slack locale, else English; the same keys in every locale."""

from __future__ import annotations

import re
from pathlib import Path

import aiohttp
import pytest

from gpunode_sandbox.slacksim import SlackSim
from gpunode_sandbox.slacksim.console_labels import labels as console_labels

STATIC = Path(__file__).resolve().parents[3] / "gpunode_sandbox" / "slacksim" / "static"


async def _state(sim: SlackSim, query: str) -> dict[str, object]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{sim.base_url}/console/api/state?{query}") as r,
    ):
        data: dict[str, object] = await r.json()
        return data


@pytest.mark.parametrize(
    ("query", "locale"),
    [
        ("user=U0LIWEI", "zh-CN"),
        ("user=U0ALICE", "en"),
        ("user=U0ALICE&lang=zh-CN", "zh-CN"),
        ("user=U0LIWEI&lang=en", "en"),
        ("user=U0LIWEI&lang=zh_CN", "zh-CN"),
        ("user=U0ALICE&lang=zh-TW", "en"),  # not spoken: the person's own, English
        ("user=U0NOBODY", "en"),
    ],
)
async def test_the_console_speaks_lang_else_the_acting_persons_locale(
    sim: SlackSim, query: str, locale: str
) -> None:
    state = await _state(sim, query)
    assert state["locale"] == locale
    assert state["labels"] == console_labels(locale)


def test_every_locale_has_every_console_label_with_the_same_placeholders() -> None:
    en, zh = console_labels("en"), console_labels("zh-CN")
    assert en.keys() == zh.keys()
    for key in en:
        assert set(re.findall(r"\{\w+\}", en[key])) == set(re.findall(r"\{\w+\}", zh[key])), key
    assert all(
        re.search(r"[\u4e00-\u9fff]", v) for k, v in zh.items() if k != "command_placeholder"
    )


def test_every_label_the_page_asks_for_exists() -> None:
    page = (STATIC / "index.html").read_text() + (STATIC / "app.js").read_text()
    asked = set(re.findall(r'data-label(?:-placeholder)?="(\w+)"', page))
    asked |= set(re.findall(r'label\("(\w+)"', page))
    asked |= set(re.findall(r'"(one_reply|replies)"', page))
    assert asked and asked <= console_labels("en").keys()
