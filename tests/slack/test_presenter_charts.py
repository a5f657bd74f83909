"""The use cases hand the presenter charts and postmortem drafts as data; the presenter draws
and words them in the language the incident thread keeps, whoever asked."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime

from bot.charts import render_png
from bot.charts.rendering import render_pngs
from bot.core.model.clusters import DEFAULT_CLUSTER
from bot.core.model.incidents import Incident
from bot.core.reporting.analysis import analyze
from bot.core.reporting.charts import ChartSpec, chart_spec
from bot.core.reporting.postmortem import build_postmortem
from bot.offloading import Offloader
from bot.render.postmortem import render_postmortem_markdown
from bot.services.locales import LocaleChooser
from bot.slack.presenter import SlackPresenter
from tests.entering import entered
from tests.services.fakes import FakeChat, load_scenario

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


def _spec(title: str | None = None) -> ChartSpec:
    bundle, view = load_scenario("seed")
    return chart_spec(analyze(bundle, view, now=bundle.collected_at), bundle, title=title)


async def test_a_chart_in_a_chinese_thread_is_drawn_and_titled_in_chinese() -> None:
    chat = FakeChat()
    chat.locales = {"U0ALICE": "en-US"}  # whoever clicked, the thread keeps its language
    presenter = SlackPresenter(chat, LocaleChooser(chat))
    spec = _spec()

    await presenter.chart(_incident("zh-CN"), spec, name="memory-090000")

    [upload] = chat.uploads
    assert upload["filename"] == "INC-0001-memory-090000.png" and upload["thread_ts"] == "1.0"
    assert upload["title"] == "gpu-node-01：内存"
    assert upload["content"] == render_png(spec, locale="zh-CN")
    assert upload["content"] != render_png(spec, locale="en")


async def test_a_chart_in_an_english_thread_stays_english() -> None:
    chat = FakeChat()
    presenter = SlackPresenter(chat, LocaleChooser(chat))
    spec = _spec()

    await presenter.chart(_incident("en"), spec, name="memory")

    [upload] = chat.uploads
    assert upload["title"] == "gpu-node-01: memory"
    assert upload["content"] == render_png(spec, locale="en")


async def test_the_postmortem_is_drawn_and_worded_in_the_threads_language() -> None:
    chat = FakeChat()
    presenter = SlackPresenter(chat, LocaleChooser(chat))
    incident = _incident("zh-CN")
    pm = build_postmortem(incident, [], snapshots=[], actions=[], names={}, cluster="c", now=T0)
    start = _spec("gpu-node-01: at the start")

    names = await presenter.postmortem(incident, pm, {"start": start})

    assert names == [
        "INC-0001-postmortem-start.png",
        "INC-0001-postmortem.md",
        "INC-0001-postmortem.html",
    ]
    png, md, html = chat.uploads
    assert png["content"] == render_png(start, locale="zh-CN")
    assert "gpu-node-01：" in png["title"] and "at the start" not in png["title"]
    assert md["content"].startswith("# 故障复盘草稿")
    names_md = {"start": "INC-0001-postmortem-start.png"}
    assert md["content"] == render_postmortem_markdown(pm, charts=names_md, locale="zh-CN")
    assert md["content"] != render_postmortem_markdown(pm, charts=names_md, locale="en")
    assert html["filename"] == "INC-0001-postmortem.html"
    assert (md["title"], html["title"]) == (
        "INC-0001 故障复盘草稿（Markdown）",
        "INC-0001 故障复盘草稿（HTML）",
    )


async def test_the_after_action_chart_is_titled_in_the_threads_language() -> None:
    chat = FakeChat()
    presenter = SlackPresenter(chat, LocaleChooser(chat))
    spec = _spec("gpu-node-01: memory before and after the action")

    await presenter.chart(_incident("zh-CN"), spec, name="after")

    [upload] = chat.uploads
    assert upload["title"] == "gpu-node-01：操作前后的内存"


async def test_a_bots_chart_is_drawn_in_its_worker_process_as_a_thread_draws_it() -> None:
    chat = FakeChat()
    worker = Offloader(process=True)
    presenter = SlackPresenter(chat, LocaleChooser(chat), offload=worker)
    spec = _spec()
    try:
        with entered(render_pngs) as drawn_here:
            await presenter.chart(_incident("zh-CN"), spec, name="memory-090000")
        assert worker.pid is not None
    finally:
        worker.close()

    assert drawn_here == [], "no thread of the bot's process drew it"
    [upload] = chat.uploads
    assert upload["content"] == render_png(spec, locale="zh-CN")  # the same bytes


def test_a_bot_that_draws_in_its_worker_never_imports_matplotlib_to_share_a_chart() -> None:
    # a fresh interpreter (this one has matplotlib): titling the file must not load it on
    # the event loop (0.6 s), as importing bot.charts.rendering for the title did
    probe = """
import asyncio, sys
import os
import subprocess
import sys
from datetime import UTC, datetime
from bot.core.model.clusters import DEFAULT_CLUSTER
from bot.core.model.incidents import Incident
from bot.core.reporting.analysis import analyze
from bot.core.reporting.charts import chart_spec
from bot.offloading import Offloader
from bot.services.locales import LocaleChooser
from bot.slack.presenter import SlackPresenter
from tests.services.fakes import FakeChat, load_scenario

async def main():
    bundle, view = load_scenario("seed")
    spec = chart_spec(analyze(bundle, view, now=bundle.collected_at), bundle)
    incident = Incident(id="INC-0001", number=1, node="gpu-node-01", channel="C1",
        thread_ts="1.0", opened_at=datetime(2026, 3, 14, tzinfo=UTC), opened_by="U0ALICE",
        locale="en", cluster=DEFAULT_CLUSTER)
    chat, worker = FakeChat(), Offloader(process=True)
    try:
        await SlackPresenter(chat, LocaleChooser(chat), offload=worker).chart(
            incident, spec, name="memory")
    finally:
        worker.close()
    print(len(chat.uploads), "matplotlib" in sys.modules)

asyncio.run(main())
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p or os.getcwd() for p in sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout.split() == ["1", "False"]
