"""The edge's pure parts: Slack's signature, the replay memory and body parsing by field."""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import parse_qsl, urlencode

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.errors import RequestError
from bot.slack.edge import (
    FORM,
    JSON_TYPE,
    MAX_FORM_FIELDS,
    ReplayGuard,
    _is_ssl_check,
    form_pairs,
    parse_body,
    signed,
)

SECRET = b"edge-secret"


def sign(ts: str, body: bytes) -> str:
    return "v0=" + hmac.new(SECRET, b"v0:" + ts.encode() + b":" + body, hashlib.sha256).hexdigest()


@pytest.mark.parametrize(
    ("timestamp", "signature", "now", "why"),
    [
        ("", "", 1000.0, "no signature headers"),
        ("12a", "v0=x", 1000.0, "malformed timestamp"),
        ("٣٤٥", "v0=x", 1000.0, "malformed timestamp"),
        ("1" * 40, "v0=x", 1000.0, "malformed timestamp"),
        ("600", "v0=x", 1000.0, "timestamp outside the 5-minute window"),
        ("1000", "v0=" + "0" * 64, 1000.0, "signature mismatch"),
        ("1000", "v0=\udcff", 1000.0, "signature mismatch"),
    ],
)
def test_a_bad_signature_is_refused_with_a_reason_and_never_raises(
    timestamp: str, signature: str, now: float, why: str
) -> None:
    assert signed(b"a=b", timestamp, signature, secret=SECRET, now=now) == (False, why)


def test_a_good_signature_within_the_window_is_accepted() -> None:
    assert signed(b"a=b", "1000", sign("1000", b"a=b"), secret=SECRET, now=1290.0) == (True, "")


def test_the_replay_memory_refuses_a_repeat_until_the_signature_expires() -> None:
    now = [1000.0]
    guard = ReplayGuard(clock=lambda: now[0])

    assert guard.first_time(1000, "v0=a")
    assert not guard.first_time(1000, "v0=a")
    assert guard.first_time(1000, "v0=b")
    now[0] = 1000.0 + 302  # past the window: the verifier refuses the timestamp anyway
    assert guard.first_time(1400, "v0=c")
    assert len(guard) == 1


def test_the_replay_memory_is_bounded() -> None:
    guard = ReplayGuard(max_entries=100, clock=lambda: 1000.0)
    for i in range(1000):
        guard.first_time(1000 + i % 7, f"v0={i}")
    assert len(guard) <= 101


def form(**fields: str) -> bytes:
    return urlencode(fields).encode()


@pytest.mark.parametrize(
    "text",
    ["payload=%7Bx", "payload", "ssl_check=1", 'type=block_actions&{"a":1}', "<@U1>", "診断"],
)
def test_a_slash_command_is_parsed_by_its_fields_whatever_its_text(text: str) -> None:
    body = parse_body(form(token="t", command="/gpunode", text=text, user_id="U1"), FORM)
    assert body["command"] == "/gpunode" and body["text"] == text


@given(st.text(alphabet="ab=&%+2F0E9C3é ", min_size=1, max_size=40))
def test_a_form_is_read_field_by_field_as_the_standard_library_reads_it(text: str) -> None:
    try:
        expected: object = parse_qsl(
            text,
            keep_blank_values=True,
            strict_parsing=True,
            max_num_fields=MAX_FORM_FIELDS,
            errors="strict",
        )
    except ValueError:
        expected = ValueError
    try:
        found: object = form_pairs(text)
    except ValueError:
        found = ValueError
    assert found == expected


def test_a_form_with_more_fields_than_a_slash_command_has_is_refused() -> None:
    with pytest.raises(ValueError, match="Max number of fields"):
        form_pairs("&".join(f"f{i}=x" for i in range(MAX_FORM_FIELDS + 1)))


def test_an_interaction_is_its_payload_object() -> None:
    assert parse_body(form(payload='{"type": "block_actions"}'), FORM) == {"type": "block_actions"}


@pytest.mark.parametrize(
    ("raw", "ctype", "probe"),
    [
        (form(ssl_check="1", token="t"), FORM, True),
        (form(ssl_check="1"), FORM, True),
        (form(ssl_check="1", token="t", command="/gpunode"), FORM, False),
        (form(ssl_check="0", token="t"), FORM, False),
        (form(ssl_check="1", token="t"), JSON_TYPE, False),
        (form(token="t", command="/gpunode", text="ssl_check=1"), FORM, False),
    ],
)
def test_only_a_bare_ssl_check_is_answered_before_the_signature(
    raw: bytes, ctype: str, probe: bool
) -> None:
    assert _is_ssl_check(raw, ctype) is probe


@pytest.mark.parametrize(
    ("raw", "ctype", "says"),
    [
        (b"payload=%7Bx", FORM, "not JSON"),
        (b"payload=%5B1%5D", FORM, "not a JSON object"),
        (b"payload=%7B%7D&x=1", FORM, "neither"),
        (b"a=1&a=2", FORM, "repeats"),
        (b"noequals", FORM, "does not parse"),
        (b"text=%ff", FORM, "does not parse"),
        (b"\xff", FORM, "not UTF-8"),
        (b"[]", JSON_TYPE, "not a JSON object"),
        (b"{}", "text/plain", "unsupported content type"),
        (b"&".join(b"f%d=1" % i for i in range(100)), FORM, "does not parse"),
    ],
)
def test_garbage_is_a_request_error_saying_what_is_wrong(raw: bytes, ctype: str, says: str) -> None:
    with pytest.raises(RequestError, match=says):
        parse_body(raw, ctype)


def test_a_malformed_payload_is_described_without_its_values_or_control_characters() -> None:
    from bot.slack.payloads import PayloadError, ViewPayload, parse

    body = {
        "type": "view_submission",
        "user": {"id": "U1"},
        "view": {
            "callback_id": "c",
            "state": {"values": {"x\nCRITICAL forged": {"a": {"type": "t", "value": 5}}}},
            "private_metadata": "xoxb-secret-looking-value",
        },
    }
    with pytest.raises(PayloadError) as caught:
        parse(ViewPayload, body)

    assert "\n" not in caught.value.message
    assert "xoxb" not in caught.value.message and "5" not in caught.value.message.split(":")[-1]
    assert caught.value.loc[:3] == ("view", "state", "values")


@pytest.mark.parametrize("user_id", ["U0_ALICE", "u0alice", "0ALICE", "U", "U0AL ICE"])
def test_an_id_slack_would_never_send_is_refused(user_id: str) -> None:
    from bot.slack.payloads import PayloadError, SlashCommand, parse

    body = {"command": "/gpunode", "user_id": user_id, "channel_id": "C0INCIDENT"}
    with pytest.raises(PayloadError) as caught:
        parse(SlashCommand, body)
    assert caught.value.loc == ("user_id",)


def test_a_real_shaped_id_is_accepted() -> None:
    from bot.slack.payloads import SlashCommand, parse

    body = {"command": "/gpunode", "user_id": "U0ALICE", "channel_id": "C0INCIDENT"}
    assert parse(SlashCommand, body).user_id == "U0ALICE"
