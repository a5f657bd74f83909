"""`gpunode timeline INC` in a terminal prints the same postmortem draft as the slash command
(without charts: a terminal has none; names when Slack is configured)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.cli import main
from bot.core.model.incidents import TimelineEntry
from bot.store.storing import Store


async def test_the_cli_timeline_prints_the_postmortem_draft(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "gpunode.db"
    at = datetime(2026, 12, 1, 2, 0, tzinfo=UTC)
    async with await Store.open(str(path)) as store:
        incident, _ = await store.open_or_join_incident(
            "gpu-node-01", "C1", opened_by="U0ALICE", at=at, locale="en"
        )
        await store.append_timeline(
            TimelineEntry(
                incident_id=incident.id, at=at, kind="note", actor="U0BOB", text="looking at it"
            )
        )
    monkeypatch.setenv("GPUNODE_STORE__PATH", str(path))
    assert await asyncio.to_thread(main, ["timeline", incident.id]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"# Postmortem draft: {incident.id} · gpu-node-01")
    # no Slack configured: people stay ids (tests/cli/test_demo_store.py: names from Slack)
    assert "## Appendix: participants" in out and "- U0BOB" in out
    assert "U0BOB noted: looking at it" in out.split("## Timeline")[1]
    assert "Charts: none in this export" in out
