"""The Slack presenter picks the reader's language and words the use cases' outcomes: a
person is told in their language, a thread reads in the language it keeps, a channel post
in the channel's."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.core.model.clusters import DEFAULT_CLUSTER
from bot.core.model.incidents import Incident
from bot.core.reporting.outcomes import AuditAnchored, notice, refused
from bot.services.locales import LocaleChooser
from bot.slack.presenter import SlackPresenter
from tests.services.fakes import FakeChat

T0 = datetime(2026, 3, 14, 9, 0, tzinfo=UTC)


def _incident(locale: str) -> Incident:
    return Incident(
        id="INC-0001",
        number=1,
        node="gpu-node-01",
        channel="C1",
        thread_ts="1.0",
        opened_at=T0,
        opened_by="U0LIWEI",
        locale=locale,
        cluster=DEFAULT_CLUSTER,
    )


async def test_a_refusal_is_told_in_the_persons_language_to_them_alone() -> None:
    chat = FakeChat()
    chat.locales = {"U0LIWEI": "zh-CN", "U0ALICE": "en-US"}
    presenter = SlackPresenter(chat, LocaleChooser(chat))

    await presenter.tell("C1", "U0LIWEI", refused("only_requester_cancels"), thread_ts="1.0")
    await presenter.tell("C1", "U0ALICE", refused("only_requester_cancels"))

    assert chat.ephemerals_for("U0LIWEI") == ["只有申请人可以取消"]
    assert chat.ephemerals_for("U0ALICE") == ["only the requester can cancel"]
    assert chat.ephemerals[0].thread_ts == "1.0"


async def test_a_post_reads_in_the_threads_language_whoever_caused_it() -> None:
    chat = FakeChat()
    chat.locales = {"U0ALICE": "en-US"}
    presenter = SlackPresenter(chat, LocaleChooser(chat))
    told = notice("alert_resolved", alertname="GpuNodeMemory", node="gpu-node-01")

    ts = await presenter.post("C1", told, incident=_incident("zh-CN"))

    posted = chat.messages[ts]
    assert posted.thread_ts == "1.0" and "GpuNodeMemory" in posted.text
    assert "已恢复" in posted.text and "has resolved" not in posted.text


async def test_a_channel_post_without_a_thread_follows_the_channels_override() -> None:
    chat = FakeChat()
    presenter = SlackPresenter(chat, LocaleChooser(chat, channel_locales={"C9": "zh-CN"}))

    ts = await presenter.post("C9", refused("no_policy"))

    assert chat.messages[ts].thread_ts is None
    assert chat.messages[ts].text.startswith("gpunode 没有加载角色策略")


async def test_an_update_replaces_the_message_in_the_threads_language() -> None:
    chat = FakeChat()
    presenter = SlackPresenter(chat, LocaleChooser(chat))
    incident = _incident("en")
    ts = await presenter.post(
        "C1", notice("diagnose_joined_running", node="n1", user="U0A"), incident=incident
    )

    await presenter.update(
        "C1",
        ts,
        notice("diagnose_joined_running", node="n1", user="U0A", others=2),
        incident=incident,
    )

    assert "2 more requests joined it too" in chat.messages[ts].text


async def test_the_audit_anchor_line_reads_in_the_threads_language_with_the_full_hash() -> None:
    chat = FakeChat()
    presenter = SlackPresenter(chat, LocaleChooser(chat))
    told = AuditAnchored(row_id=3, row_hash="ab" * 32)

    zh = await presenter.post("C1", told, incident=_incident("zh-CN"))
    en = await presenter.post("C1", told, incident=_incident("en"))

    assert chat.messages[zh].text == f"审计锚点 · 第 3 行 · sha256 `{'ab' * 32}`"
    assert chat.messages[zh].blocks[0]["type"] == "context"
    assert chat.messages[en].text == f"audit anchor · row 3 · sha256 `{'ab' * 32}`"
