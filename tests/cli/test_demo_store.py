"""``make demo`` keeps its store at a well-known path and writes its settings beside it, so
``gpunode status|audit|timeline`` read the demo with no configuration; the timeline names
people as Slack does and names the cluster."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest

from bot.cli import main
from bot.core.model.incidents import TimelineEntry
from bot.store.engines import demo_settings_path, demo_store_path
from bot.store.storing import Store
from gpunode_sandbox.demo import fresh_demo_store, write_demo_settings
from gpunode_sandbox.slacksim import SlackSim

AT = datetime(2026, 12, 1, 5, 52, tzinfo=UTC)


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("GPUNODE_CONFIG", "GPUNODE_STORE__PATH", "GPUNODE_STORE__DSN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)  # no .gpunode/gpunode.db here
    return tmp_path / "state"


def test_the_demo_store_is_at_a_well_known_path_and_starts_empty(state: Path) -> None:
    assert demo_store_path() == state / "gpunode" / "demo.db"
    demo_store_path().parent.mkdir(parents=True)
    demo_store_path().write_text("an earlier demo", encoding="utf-8")
    assert fresh_demo_store() == demo_store_path() and not demo_store_path().exists()


async def test_status_audit_and_timeline_find_the_demo_with_names_and_cluster(
    state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store_path = fresh_demo_store()
    async with await Store.open(str(store_path)) as store:
        incident, _ = await store.open_or_join_incident(
            "gpu-node-01", "C0INCIDENT", opened_by="U0ALICE", at=AT, cluster="prod-eu", locale="en"
        )
        await store.append_timeline(
            TimelineEntry(
                incident_id=incident.id, at=AT, kind="note", actor="U0BOB", text="looking at it"
            )
        )
    slack = SlackSim(signing_secret="s3cret", bot_token="xoxb-demo")
    await slack.start()
    try:
        demo = SimpleNamespace(slack=slack, kube=SimpleNamespace(url="http://127.0.0.1:1"))
        assert write_demo_settings(demo, store_path) == demo_settings_path()  # type: ignore[arg-type]
        assert await asyncio.to_thread(main, ["status"]) == 0
        status = capsys.readouterr()
        assert incident.id in status.out
        assert f"reading the demo's at {store_path}" in status.err
        assert await asyncio.to_thread(main, ["audit"]) == 0
        assert await asyncio.to_thread(main, ["timeline", incident.id]) == 0
        out = capsys.readouterr().out
    finally:
        await slack.stop()
    assert "Alice Ng" in out and "Bob Okafor" in out
    assert "U0ALICE" not in out
    assert "prod-eu" in out


def test_a_configured_store_wins_over_the_demo(
    state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fresh_demo_store().write_bytes(b"")
    demo_settings_path().write_text("store: {path: /nowhere/demo.db}\n", encoding="utf-8")
    monkeypatch.setenv("GPUNODE_STORE__PATH", str(tmp_path / "mine.db"))
    assert main(["status"]) == 1
    err = capsys.readouterr().err
    assert f"no incident store at {tmp_path / 'mine.db'}" in err and "demo" not in err
