"""li.wei's terminal in Chinese (``--lang zh-CN``): the open incidents, the nodes by memory
pressure, help, the audit log and its check, and the commands she mistypes (a bad incident
id, a bad node name) are all written without an English sentence; the exit codes stay those
of the English terminal."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.cli import main
from gpunode_sandbox.kubesim import KubeSim, load_scenario
from gpunode_sandbox.kubesim.access import BOT_TOKEN
from tests.render.test_catalogs import english_words

CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture
async def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A store holding li.wei's open incident (as the bot keeps it)."""
    from bot.store.storing import Store

    path = tmp_path / "gpunode.db"
    at = datetime(2026, 12, 1, 2, 0, tzinfo=UTC)
    async with await Store.open(str(path)) as s:
        await s.open_or_join_incident(
            "gpu-node-01", "C1", opened_by="U0LIWEI", at=at, locale="zh-CN"
        )
    monkeypatch.setenv("GPUNODE_STORE__PATH", str(path))
    return path


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main([*argv, "--lang", "zh-CN"])
    out = capsys.readouterr()
    return code, out.out + out.err


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["status"], 0),
        (["help"], 0),
        (["help", "diagnose"], 0),
        (["timeline", "x"], 2),
        (["status", "Bad_Node"], 2),
        (["resolve", "nope"], 2),
        (["audit"], 0),
        (["audit", "--verify"], 0),
    ],
)
async def test_li_weis_terminal_answers_and_refuses_in_chinese(
    store: Path, capsys: pytest.CaptureFixture[str], argv: list[str], code: int
) -> None:
    got, said = await asyncio.to_thread(_run, argv, capsys)
    assert got == code, said
    assert CJK.search(said), said
    assert english_words(said) == [], said


def test_li_weis_top_and_mistyped_node_against_the_stand_in_are_in_chinese(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with KubeSim.running_in_thread(load_scenario("seed")) as sim:
        access = ["--server", sim.url, "--token", BOT_TOKEN]
        top = _run(["top", *access], capsys)
        bad = _run(["diagnose", "GPU_bad", "-q", *access], capsys)
    assert top[0] == 0 and CJK.search(top[1]) and english_words(top[1]) == [], top
    assert bad[0] == 2 and "不是有效的节点名" in bad[1] and english_words(bad[1]) == [], bad


def test_diagnosing_a_node_the_cluster_lacks_names_it_and_says_how_to_list_nodes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``gpunode diagnose no-such-node`` against the stand-in: li.wei reads in Chinese which
    node is missing from which cluster and how to list the nodes; an English reader reads the
    same in English; both exit 1, with nothing on stdout."""
    with KubeSim.running_in_thread(load_scenario("seed")) as sim:
        access = ["diagnose", "no-such-node", "-q", "--server", sim.url, "--token", BOT_TOKEN]
        zh = main([*access, "--lang", "zh-CN"])
        zh_said = capsys.readouterr()
        en = main([*access, "--lang", "en"])
        en_said = capsys.readouterr()
    assert zh == 1 and zh_said.out == "", zh_said
    assert f"集群 {sim.url} 中没有节点 no-such-node" in zh_said.err, zh_said.err
    assert "`kubectl get nodes`" in zh_said.err and "请检查名称" in zh_said.err
    assert english_words(zh_said.err) == [], zh_said.err
    assert en == 1 and en_said.out == "", en_said
    assert f"node no-such-node not found in cluster {sim.url}; check the name" in en_said.err
    assert "`kubectl get nodes` or `gpunode top` lists the cluster's nodes" in en_said.err


def test_an_evidence_file_off_the_schema_is_refused_in_chinese_and_as_before_in_english(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``analyze`` names each schema problem of the file (pydantic's words from the catalog,
    the keys kept) and counts those past the fifth; in English the line is the one it was."""
    from bot.core.model.evidence import SCHEMA_VERSION

    path = tmp_path / "bad.json"
    bad = {"schema_version": SCHEMA_VERSION, "collector_version": 1, "x": 1, "y": 2, "z": 3}
    path.write_text(json.dumps(bad), encoding="utf-8")

    zh = main(["analyze", str(path), "--lang", "zh-CN"])
    chinese = capsys.readouterr().err
    en = main(["analyze", str(path), "--lang", "en"])
    english = capsys.readouterr().err

    assert zh == en == 2
    assert english.strip() == (
        f"gpunode: evidence file {path} does not match the schema: collector_version: Input "
        "should be a valid string; hostname: Field required; collected_at: Field required; "
        "x: Extra inputs are not permitted; y: Extra inputs are not permitted (and 1 more). "
        "Pass the JSON printed by `gpunode collect` (or saved from a diagnostic Job's log)."
    ), english
    assert CJK.search(chinese) and english_words(chinese) == [], chinese
    for key in ("collector_version", "hostname", "collected_at", "x", "y", str(path)):
        assert key in chinese, chinese
