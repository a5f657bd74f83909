"""Section 3, end to end at ``/slack/events``: no input gets a 5xx.

Unsigned requests get 401 and signed garbage 400, each with one log line and no traceback;
signed but malformed interactions get a clear message (ephemeral, or next to the modal's
field) and an audit row; a replayed signed request does nothing; tier-3 caps are bounded.
"""

from __future__ import annotations

import io
import json
import logging
from typing import Any
from urllib.parse import parse_qsl

import aiohttp
import pytest

from gpunode_sandbox.demo import Demo
from gpunode_sandbox.slacksim import SignOptions, payloads
from gpunode_sandbox.slacksim import methods_views as views
from gpunode_sandbox.slacksim.blocks import find_element
from gpunode_sandbox.slacksim.driver import FORM, DriverResult
from gpunode_sandbox.story import CHANNEL, find_button
from tests.e2e.conftest import NODE, diagnose, ephemeral_texts, modal_values, press, thread

pytestmark = pytest.mark.slow
ALICE, DAVE = "U0ALICE", "U0DAVE"
JSON_TYPE = "application/json"


def problems(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.WARNING]


async def send(demo: Demo, payload: dict[str, Any] | bytes, *, ctype: str = FORM) -> DriverResult:
    """A correctly signed POST of an interaction payload (or of raw bytes)."""
    body = payloads.interaction_body(payload) if isinstance(payload, dict) else payload
    return await demo.slack.driver.send(body, content_type=ctype)


def click_payload(demo: Demo, root_ts: str, user: str, action_id: str) -> dict[str, Any]:
    """The ``block_actions`` payload Slack would send for ``user`` clicking ``action_id``."""
    found = find_button(thread(demo, root_ts), action_id)
    assert found is not None, f"no {action_id} button"
    ts, _ = found
    ws = demo.slack.ws
    message = ws.messages[CHANNEL][ts]
    element = find_element(message["blocks"], action_id)
    assert element is not None
    sim_user = ws.users[user]
    channel = (CHANNEL, ws.channels[CHANNEL].name)
    action = payloads.action_of(*element, value=None, action_ts=ws.next_ts())
    return payloads.block_actions(
        sim_user,
        channel,
        message,
        action,
        ephemeral=False,
        trigger_id=ws.issue_trigger(user),
        response_url=ws.issue_response_url(user, CHANNEL, source_ts=ts),
    )


def submission(demo: Demo, user: str, edits: dict[str, Any]) -> dict[str, Any]:
    """The ``view_submission`` payload of the user's open modal, filled in with ``edits``."""
    ws = demo.slack.ws
    view = demo.slack.open_views(user)[-1]
    opened = ws.views[view["id"]]
    opened.view["state"] = {"values": views.state_values(opened.view, modal_values(view, edits))}
    return payloads.view_payload(
        "view_submission", ws.users[user], opened.view, trigger_id=ws.issue_trigger(user)
    )


async def audit_of(demo: Demo, user: str) -> list[Any]:
    return [a for a in await demo.runtime.store.audit_since(None) if a.actor == user]


async def tier3_modal(demo: Demo) -> str:
    root_ts = await diagnose(demo)
    await press(demo, root_ts, ALICE, "gpunode_tier3")
    assert demo.slack.open_views(ALICE), "no tier 3 modal"
    return root_ts


# -- unsigned and garbage ---------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [b"payload=%7Bx", b"payload=%5B1%5D", b"\xff\xfe=\x00", b"command=/gpunode&text=diagnose"],
    ids=["broken-json", "json-list", "binary", "a-command"],
)
async def test_an_unsigned_request_gets_401_with_one_log_line_and_no_traceback(
    demo: Demo, body: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.clear()
    result = await demo.slack.driver.send(body, signing=SignOptions(unsigned=True))

    assert result.status == 401
    logged = problems(caplog)
    assert len(logged) == 1, [r.getMessage() for r in logged]
    assert logged[0].exc_info is None


async def test_an_unsigned_ssl_check_gets_an_empty_200_and_nothing_happens(demo: Demo) -> None:
    result = await demo.slack.driver.send(
        b"ssl_check=1&token=t", signing=SignOptions(unsigned=True)
    )
    await demo.drain()

    assert (result.status, result.body) == (200, "")
    assert demo.slack.calls == []


@pytest.mark.parametrize(
    ("body", "ctype"),
    [
        (b"payload=%7Bx", FORM),
        (b"payload=%5B1%2C2%5D", FORM),
        (b"payload=%7B%7D&payload=%7B%7D", FORM),
        (b"a=b&c=d", FORM),
        (b"\xff\xfe", FORM),
        (b"[1, 2]", JSON_TYPE),
        (b'{"type": "event_callback"', JSON_TYPE),
        (b'{"type": "event_callback", "event": "a message type"}', JSON_TYPE),
        (b'{"type": "block_actions", "actions": [{"action_id": "x"}]}', JSON_TYPE),
        (b"payload=%7B%7D", "text/plain"),
    ],
    ids=[
        "broken-json",
        "json-list",
        "repeated-field",
        "unknown-form",
        "not-utf8",
        "json-list",
        "truncated-json",
        "event-as-string",
        "no-user",
        "text-plain",
    ],
)
async def test_signed_garbage_gets_400_with_one_log_line_and_no_traceback(
    demo: Demo, body: bytes, ctype: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.clear()
    result = await send(demo, body, ctype=ctype)
    await demo.drain()

    assert result.status == 400, result.body
    assert "error" in result.json()
    logged = problems(caplog)
    assert len(logged) == 1, [r.getMessage() for r in logged]
    assert logged[0].exc_info is None
    assert demo.runtime.services.bg.errors == []


# -- signed but malformed interactions --------------------------------------------------


def _no_actions(p: dict[str, Any]) -> None:
    p["actions"] = []


def _string_actions(p: dict[str, Any]) -> None:
    p["actions"] = "gpunode_tier2"


def _not_json_value(p: dict[str, Any]) -> None:
    p["actions"][0]["value"] = "{not json"


def _wrong_value_shape(p: dict[str, Any]) -> None:
    p["actions"][0]["value"] = json.dumps({"incident": 7, "plan_id": ["x"]})


def _huge_value(p: dict[str, Any]) -> None:
    p["actions"][0]["value"] = "9" * 900_000


@pytest.mark.parametrize(
    "damage",
    [_no_actions, _string_actions, _not_json_value, _wrong_value_shape, _huge_value],
    ids=["actions-empty", "actions-string", "value-not-json", "value-wrong-shape", "value-900k"],
)
async def test_a_malformed_tier_click_is_told_and_audited_not_dropped(
    demo: Demo, damage: Any
) -> None:
    root_ts = await diagnose(demo)
    payload = click_payload(demo, root_ts, ALICE, "gpunode_tier2")
    damage(payload)
    before = len(ephemeral_texts(demo.slack, ALICE))

    result = await send(demo, payload)
    await demo.drain()

    assert result.status == 200, result.body
    told = ephemeral_texts(demo.slack, ALICE)[before:]
    assert any("could not use that request" in t for t in told), told
    rows = await audit_of(demo, ALICE)
    assert rows and rows[-1].decision == "refused" and rows[-1].outcome == "malformed_request"
    assert demo.slack.open_views(ALICE) == []
    assert demo.runtime.services.bg.errors == []


@pytest.mark.parametrize(
    "action_id",
    [
        "gpunode_apply",
        "gpunode_cancel",
        "gpunode_undo",
        "gpunode_approve",
        "gpunode_deny",
        "gpunode_rediagnose",
    ],
)
@pytest.mark.parametrize("value", ["../../etc/passwd\n<!channel>", "", "x" * 3000])
async def test_a_button_with_a_value_of_the_wrong_kind_is_told_and_audited(
    demo: Demo, action_id: str, value: str
) -> None:
    root_ts = await diagnose(demo)
    payload = click_payload(demo, root_ts, ALICE, "gpunode_tier2")
    payload["actions"][0].update(action_id=action_id, value=value)
    before = len(ephemeral_texts(demo.slack, ALICE))

    result = await send(demo, payload)
    await demo.drain()

    assert result.status == 200
    told = ephemeral_texts(demo.slack, ALICE)[before:]
    assert any("could not use that request" in t for t in told), told
    rows = await audit_of(demo, ALICE)
    assert rows[-1].outcome == "malformed_request"
    assert demo.runtime.services.bg.errors == []


def _metadata_int(p: dict[str, Any]) -> None:
    p["view"]["private_metadata"] = 5


def _metadata_without_channel(p: dict[str, Any]) -> None:
    meta = json.loads(p["view"]["private_metadata"])
    del meta["channel"]
    p["view"]["private_metadata"] = json.dumps(meta)


def _metadata_list(p: dict[str, Any]) -> None:
    p["view"]["private_metadata"] = "[1, 2]"


def _values_wrong_type(p: dict[str, Any]) -> None:
    p["view"]["state"]["values"]["reason"] = "because"


def _element_wrong_type(p: dict[str, Any]) -> None:
    block = p["view"]["state"]["values"]["reason"]
    block[next(iter(block))] = ["x"]


@pytest.mark.parametrize(
    "damage",
    [
        _metadata_int,
        _metadata_without_channel,
        _metadata_list,
        _values_wrong_type,
        _element_wrong_type,
    ],
    ids=[
        "metadata-int",
        "metadata-without-channel",
        "metadata-list",
        "values-string",
        "element-list",
    ],
)
async def test_a_malformed_modal_submission_gets_an_error_in_the_modal_and_an_audit_row(
    demo: Demo, damage: Any
) -> None:
    await tier3_modal(demo)
    payload = submission(demo, ALICE, {"reason": "memory incident"})
    damage(payload)

    result = await send(demo, payload)
    await demo.drain()

    assert result.status == 200, result.body
    reply = result.json()
    assert reply["response_action"] == "errors"
    assert "damaged" in reply["errors"]["reason"]
    rows = await audit_of(demo, ALICE)
    assert rows[-1].outcome == "malformed_request"
    assert demo.runtime.services.bg.errors == []
    assert not [r for r in demo.kube.requests if r[0] == "PATCH"]


@pytest.mark.parametrize(
    ("edits", "field", "says"),
    [
        ({"memory_limit": "9" * 900_000}, "memory_limit", "too long"),
        ({"memory_limit": "9" * 2_000}, "memory_limit", "too long"),
        ({"memory_limit": "1e100"}, "memory_limit", "allocatable memory"),
        ({"memory_request": "1e100"}, "memory_request", "allocatable memory"),
        ({"memory_limit": "1e99999999"}, "memory_limit", "not a Kubernetes quantity"),
        ({"cpu_limit": "1e100"}, "cpu_limit", "allocatable CPU"),
        ({"cpu_limit": 5}, "cpu_limit", "wrong kind"),
        ({"omp_num_threads": "1e3"}, "omp_num_threads", "whole number"),
    ],
    ids=[
        "memory-900k-digits",
        "memory-2000-digits",
        "memory-1e100",
        "request-1e100",
        "exponent-huge",
        "cpu-1e100",
        "cpu-number",
        "omp-not-whole",
    ],
)
async def test_tier3_caps_out_of_bounds_are_refused_next_to_their_field(
    demo: Demo, edits: dict[str, Any], field: str, says: str
) -> None:
    await tier3_modal(demo)
    payload = submission(demo, ALICE, {"reason": "memory incident", "accept_oom": True})
    for block_id, value in edits.items():
        element = payload["view"]["state"]["values"][block_id]
        element[next(iter(element))]["value"] = value

    result = await send(demo, payload)
    await demo.drain()

    assert result.status == 200, result.body[:300]
    errors = result.json()["errors"]
    assert set(errors) == {field}, errors
    assert says in errors[field]
    if "allocatable" in says:
        node = demo.kube.get("nodes", None, NODE)
        assert node is not None
        resource = "memory" if "memory" in says else "cpu"
        assert node["status"]["allocatable"][resource] in errors[field]
    assert demo.runtime.services.bg.errors == []


# -- replay -----------------------------------------------------------------------------


async def test_a_replayed_signed_slash_command_is_dropped_within_the_window(demo: Demo) -> None:
    sent: list[tuple[bytes, dict[str, str]]] = []
    original = demo.slack.driver.send_raw

    async def recording(body: bytes, headers: dict[str, str]) -> Any:
        sent.append((body, headers))
        return await original(body, headers)

    demo.slack.driver.send_raw = recording  # type: ignore[method-assign]
    first = await demo.slack.slash_command(ALICE, CHANNEL, f"diagnose {NODE}")
    await demo.drain()
    body, headers = sent[-1]
    replays = [await demo.slack.send_raw(body, headers) for _ in range(3)]
    await demo.drain()

    assert first.status == 200 and "On it" in first.body
    assert [(r.status, r.body) for r in replays] == [(200, "")] * 3
    jobs = [r for r in demo.kube.requests if r[0] == "POST" and "/jobs" in r[1]]
    assert len(jobs) == 1
    assert dict(parse_qsl(body.decode()))["text"] == f"diagnose {NODE}"


async def test_a_body_over_the_size_limit_gets_413_without_a_traceback(
    demo: Demo, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.clear()
    body = io.BytesIO(b"payload=" + b"9" * (2 << 20))
    url = demo.slack.driver.request_url
    async with aiohttp.ClientSession() as http, http.post(url, data=body) as resp:
        status = resp.status

    assert status == 413
    assert not [r for r in caplog.records if r.exc_info is not None]


# -- two shapes that still got a 500 ----------------------------------------------


async def test_a_modal_submission_without_a_view_type_gets_no_500(demo: Demo) -> None:
    await tier3_modal(demo)
    payload = submission(demo, ALICE, {"reason": "memory incident"})
    del payload["view"]["type"]

    result = await send(demo, payload)
    await demo.drain()

    assert result.status == 200, result.body
    assert demo.runtime.services.bg.errors == []
    assert not [r for r in demo.kube.requests if r[0] == "PATCH"]


@pytest.mark.parametrize("channel", [12345, 1.5, ["C1"]], ids=["int", "float", "list"])
async def test_an_event_whose_channel_is_not_a_string_gets_400_naming_it_not_500(
    demo: Demo, channel: Any
) -> None:
    root_ts = await diagnose(demo)
    event = {
        "type": "message",
        "user": ALICE,
        "text": "reply with a numeric channel",
        "ts": demo.slack.ws.next_ts(),
        "thread_ts": root_ts,
        "channel": channel,
        "channel_type": "channel",
        "event_ts": "1700000000.000100",
    }
    body = payloads.event_envelope(event, event_id="Ev0NUMERIC", event_time=1_700_000_000)
    store = demo.runtime.store
    (incident,) = await store.open_incidents()
    before = len(await store.timeline(incident.id))

    result = await send(demo, body, ctype=JSON_TYPE)
    await demo.drain()

    # signed garbage is refused as the other garbage is (400 with the reason), never a 500
    assert result.status == 400, result.body
    assert "event.channel" in result.body
    assert demo.runtime.services.bg.errors == []
    assert len(await store.timeline(incident.id)) == before
