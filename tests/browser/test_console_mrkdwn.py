"""The console's mrkdwn renderer reads like Slack: markers only at word boundaries, known
emoji shortcodes as emoji, dates in the reader's zone, and untrusted text never as HTML."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

STATIC = Path(__file__).resolve().parents[2] / "gpunode_sandbox" / "slacksim" / "static"

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def render(browser: Any) -> Any:
    context = browser.new_context()
    page = context.new_page()
    page.set_content("<!doctype html><body></body>")
    page.add_script_tag(content=(STATIC / "mrkdwn.js").read_text())

    def render(text: str) -> dict[str, Any]:
        rendered: dict[str, Any] = page.evaluate(
            """(t) => { const lookup = {userName: (id) => id.toLowerCase(),
                                        channelName: (id) => id};
                        const n = renderMrkdwn(t, lookup);
                        return {text: n.textContent, html: n.innerHTML}; }""",
            text,
        )
        return rendered

    yield render
    context.close()


@pytest.mark.parametrize(
    ("mrkdwn", "text", "tag"),
    [
        ("host_memory_workload: x", "host_memory_workload: x", None),
        ("a _quiet_ word", "a quiet word", "<i>quiet</i>"),
        ("*Verdict* (high)", "Verdict (high)", "<b>Verdict</b>"),
        ("2*3*4", "2*3*4", None),
        ("~gone~ now", "gone now", "<s>gone</s>"),
        (":white_check_mark: Applied", "\u2705 Applied", 'class="emoji"'),
        (":not_an_emoji: x", ":not_an_emoji: x", None),
        ("at 10:30:45", "at 10:30:45", None),
        ("by <@U0BOB>", "by @u0bob", 'class="mention"'),
        ("<javascript:alert(1)|click>", "click", None),
        ("&lt;b&gt;x&lt;/b&gt;", "<b>x</b>", "&lt;b&gt;"),
        ("```\nbar\n```\nlegend", "bar\nlegend", "<pre>bar\n</pre>legend"),
    ],
)
def test_mrkdwn_renders_as_slack_shows_it(
    render: Any, mrkdwn: str, text: str, tag: str | None
) -> None:
    out = render(mrkdwn)
    assert out["text"] == text
    if tag is not None:
        assert tag in out["html"]
    assert "<a" not in out["html"] or "javascript:" not in out["html"]


def test_a_slack_date_shows_a_time_not_its_markup(render: Any) -> None:
    out = render("expires <!date^1796054637^{time}|14:43 UTC>.")
    assert "date^" not in out["text"]
    assert "<time" in out["html"]
    assert out["text"].startswith("expires ") and any(c.isdigit() for c in out["text"])


def test_a_bad_slack_date_falls_back_to_its_text(render: Any) -> None:
    assert render("<!date^nope^{time}|at noon>")["text"] == "at noon"
