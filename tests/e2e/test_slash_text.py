"""End to end: whatever is typed after ``/gpunode`` gets a 200 with an ack or a usage
error (fuzzed through Bolt), the ack never echoes the raw text, Slack's own escaping is undone
once, and read-only commands are gated by role like the others."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpunode_sandbox.demo import Demo
from gpunode_sandbox.story import CHANNEL
from tests.e2e.conftest import NODE, diagnose, ephemeral_texts, text_of, thread

pytestmark = pytest.mark.slow
ALICE, CAROL, DAVE = "U0ALICE", "U0CAROL", "U0DAVE"
FUZZ_EXAMPLES = 500

#: Slack's own request field names and values, JSON and URL-encoding fragments, Slack
#: markup, CJK: what could confuse a parser that guesses a body's kind from its content
WORDS = [
    "command=",
    "payload=",
    "payload",
    "ssl_check=1",
    "ssl_check",
    "type",
    "type=block_actions",
    "token=",
    "text=",
    "user_id=U1",
    "channel_id=C1",
    "trigger_id",
    "response_url=http://x",
    "api_app_id",
    "is_enterprise_install=true",
    "view_submission",
    "event_callback",
    "url_verification",
    "challenge",
    '{"type":"block_actions"}',
    "{",
    "}",
    "[",
    "]",
    '"',
    "'",
    "%7B",
    "%7D",
    "%26",
    "%3D",
    "%20",
    "%",
    "+",
    "&",
    "=",
    "?",
    "#",
    ";",
    "\\",
    "&amp;",
    "&lt;",
    "&gt;",
    "<@U123>",
    "<@U123|bob>",
    "<#C1|x>",
    "<!channel>",
    "<!here>",
    "<https://example.com|link>",
    "`",
    "*",
    "_",
    "~",
    ":warning:",
    "診断",
    "ノード",
    "显存",
    "gpu-node-01",
    "INC-0001",
    "diagnose",
    "status",
    "top",
    "timeline",
    "resolve",
    "help",
    "\N{PILE OF POO}",
    "\u200b",
    "\t",
    "\n",
]
texts = st.one_of(
    st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join),
    st.lists(st.sampled_from(WORDS), max_size=8).map("".join),
    st.text(max_size=60),
    st.tuples(st.sampled_from(WORDS), st.text(max_size=20)).map("".join),
)


@settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=texts)
async def test_every_slash_text_gets_a_200_with_an_ack_or_a_usage_error(
    demo: Demo, text: str
) -> None:
    # U0DAVE is bound to no role: commands that parse end in a quick refusal, not in work
    result = await demo.slack.slash_command(DAVE, CHANNEL, text)

    assert result.status == 200, (text, result.status, result.body)
    reply = json.loads(result.body)
    assert reply.get("text"), (text, reply)
    assert reply.get("response_type", "ephemeral") == "ephemeral"


@pytest.mark.parametrize(
    ("typed", "ack"),
    [
        (f"diagnose   {NODE}", f"On it: diagnose {NODE}"),
        ("resolve INC-0042 <!channel> `x` *loud*", "On it: resolve INC-0042"),
        ("top", "On it: top"),
    ],
)
async def test_the_ack_names_the_command_understood_and_never_echoes_the_raw_text(
    demo: Demo, typed: str, ack: str
) -> None:
    result = await demo.slack.slash_command(DAVE, CHANNEL, typed)
    await demo.drain()

    assert result.status == 200
    reply = json.loads(result.body)
    assert reply["text"].endswith(ack)
    assert "channel" not in result.body and "loud" not in result.body


async def test_text_slack_already_escaped_is_escaped_once(demo: Demo) -> None:
    root_ts = await diagnose(demo)
    incident = (await demo.runtime.store.open_incidents())[0].id

    await demo.slack.slash_command(ALICE, CHANNEL, f"resolve {incident} R&D <ok> fixed")
    await demo.drain()

    said = "\n".join(text_of(m) for m in thread(demo, root_ts))
    assert "R&amp;D &lt;ok&gt; fixed" in said
    assert "&amp;amp;" not in said and "&amp;lt;" not in said
    entries = await demo.runtime.store.timeline(incident)
    assert any("R&D <ok> fixed" in e.text for e in entries)


@pytest.mark.parametrize(
    ("typed", "shows"),
    [
        ("status", "Open incidents"),
        ("top", "GPU nodes by memory pressure"),
        ("timeline INC-0001", "timeline"),
    ],
)
async def test_a_user_bound_to_no_role_cannot_read_status_top_or_timeline(
    demo: Demo, typed: str, shows: str
) -> None:
    await diagnose(demo)
    before = len(ephemeral_texts(demo.slack, DAVE))
    files_before = demo.slack.files(CHANNEL)  # the diagnosis' own chart

    result = await demo.slack.slash_command(DAVE, CHANNEL, typed)
    await demo.drain()

    told = ephemeral_texts(demo.slack, DAVE)[before:]
    assert result.status == 200
    assert any("bound to no role" in t for t in told), told
    assert not any(shows in t for t in told if "On it" not in t and "no role" not in t)
    assert demo.slack.files(CHANNEL) == files_before  # no export uploaded for them
    rows = [a for a in await demo.runtime.store.audit_since(None) if a.actor == DAVE]
    assert rows and rows[-1].action == "view" and rows[-1].decision == "denied"


@pytest.mark.parametrize("typed", ["status", "top"])
async def test_a_viewer_can_read_status_and_top(demo: Demo, typed: str) -> None:
    await diagnose(demo)
    before = len(ephemeral_texts(demo.slack, CAROL))

    await demo.slack.slash_command(CAROL, CHANNEL, typed)
    await demo.drain()

    told = "\n".join(ephemeral_texts(demo.slack, CAROL)[before:])
    assert NODE in told and "bound to no role" not in told
