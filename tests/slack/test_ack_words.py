"""A slash command's ack words a repeated notice (``status`` while nothing changed) once."""

from __future__ import annotations

from bot.core.reporting.outcomes import Notice
from bot.render.notices import render_told
from bot.slack.app import AckWords


def test_an_ack_reuses_a_rendered_notice_until_its_parameters_or_language_change() -> None:
    words = AckWords()
    none_open = Notice(key="status_list", params={"incidents": []})
    row = {"id": "INC-0001", "node": "n1", "state": "open", "opened_at": "2026-03-01"}
    one_open = Notice(key="status_list", params={"incidents": [row]})

    first = words(none_open, "en")

    assert words(none_open, "en") is first  # rendered once
    assert first == render_told(none_open, "en")
    assert words(none_open, "zh-CN") == render_told(none_open, "zh-CN") != first
    assert words(one_open, "en") == render_told(one_open, "en") != first


def test_only_the_newest_answers_are_kept() -> None:
    words = AckWords(size=2)
    notices = [Notice(key="command_started", params={"command": f"top c{i}"}) for i in range(3)]
    first = words(notices[0], "en")
    words(notices[1], "en")
    words(notices[2], "en")

    again = words(notices[0], "en")

    assert again == first and again is not first  # dropped, then rendered anew
