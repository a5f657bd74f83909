"""On PostgreSQL, a NUL character in an alert field or a thread reply is answered
2xx over real HTTP and kept, visibly replaced (PostgreSQL text cannot hold U+0000, so the
store keeps U+FFFD in its place: ``bot.store.values.NUL_STANDIN``).

The bot runs on a throwaway PostgreSQL database (tests/pgserver.py); the alert goes to
``/alertmanager`` and the reply to ``/slack/events`` as signed HTTP requests. JSON carries the
NUL escaped (``\\u0000``), exactly as Alertmanager and Slack would send it.
"""

from __future__ import annotations

import json

import pytest

from bot.store.values import NUL_STANDIN
from gpunode_sandbox.demo import running_demo
from gpunode_sandbox.slacksim import payloads
from gpunode_sandbox.story import CHANNEL
from tests.e2e.conftest import NODE, incident_roots
from tests.e2e.test_http_edge import ALERT_TOKEN, alert_payload, post

pytestmark = pytest.mark.slow
ALICE = "U0ALICE"


async def test_an_alert_and_a_thread_reply_with_nul_are_answered_2xx_and_kept_on_postgres(
    pg_dsn: str,
) -> None:
    payload = alert_payload("firing")
    alert = payload["alerts"][0]
    alert["fingerprint"] = "c0ffee\x00beef"
    alert["annotations"]["summary"] = "memory\x00available low"
    payload["groupKey"] = '{}:{alertname="Gpunode\x00MemoryAvailableLow"}'
    body = json.dumps(payload).encode()
    assert b"\\u0000" in body  # the NUL travels escaped, as JSON has it

    async with running_demo("seed", store_path=pg_dsn, alert_token=ALERT_TOKEN) as demo:
        status, reply = await post(f"{demo.bot_url}/alertmanager", body)
        await demo.drain()

        assert (status, reply["diagnosing"]) == (200, [NODE])
        store = demo.runtime.store
        (incident,) = await store.open_incidents()
        assert incident.alert_fingerprint == f"c0ffee{NUL_STANDIN}beef"
        [root] = incident_roots(demo.slack)

        event = {
            "type": "message",
            "user": ALICE,
            "text": "the job\x00 restarted at 05:50",
            "ts": demo.slack.ws.next_ts(),
            "thread_ts": str(root["ts"]),
            "channel": CHANNEL,
            "channel_type": "channel",
            "event_ts": "1700000000.000200",
        }
        envelope = payloads.event_envelope(event, event_id="Ev0NULREPLY", event_time=1_700_000_000)
        assert b"\\u0000" in envelope
        result = await demo.slack.driver.send(envelope, content_type="application/json")
        await demo.drain()

        assert 200 <= result.status < 300, result.body
        assert demo.runtime.services.bg.errors == []
        texts = [e.text for e in await store.timeline(incident.id)]
        assert f"the job{NUL_STANDIN} restarted at 05:50" in " ".join(texts)
