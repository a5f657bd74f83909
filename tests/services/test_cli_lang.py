"""``--lang`` in the terminal: the same templates as Slack in the chosen language; a language
gpunode does not write is refused before any work; ``timeline`` defaults to the thread's."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.cli import main
from bot.cli.diagnose import analyze_files

SEED = Path(__file__).resolve().parents[1] / "fixtures" / "bundles" / "seed"
EVIDENCE, CLUSTER = str(SEED / "evidence.json"), str(SEED / "cluster.json")
CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.mark.parametrize("fmt", ["text", "markdown", "blocks"])
@pytest.mark.parametrize("spelling", ["zh-CN", "zh_CN"])
def test_analyze_with_lang_zh_cn_prints_the_chinese_rendering(
    capsys: pytest.CaptureFixture[str], fmt: str, spelling: str
) -> None:
    assert (
        main(["analyze", EVIDENCE, "--cluster", CLUSTER, "--format", fmt, "--lang", spelling]) == 0
    )
    out = capsys.readouterr().out
    assert out == analyze_files(EVIDENCE, CLUSTER, fmt, locale="zh-CN")
    assert out != analyze_files(EVIDENCE, CLUSTER, fmt, locale="en")
    assert CJK.search(out)


def test_without_lang_the_output_is_english_whatever_lang_says(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    assert main(["analyze", EVIDENCE, "--cluster", CLUSTER]) == 0
    assert capsys.readouterr().out == analyze_files(EVIDENCE, CLUSTER, "text", locale="en")


@pytest.mark.parametrize("command", [["analyze", EVIDENCE], ["diagnose", "gpu-node-01"], ["top"]])
def test_an_unsupported_lang_is_a_usage_error_naming_the_supported_ones(
    capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([*command, "--lang", "zh-TW"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--lang" in err and "use one of en, zh-CN" in err


async def test_timeline_is_in_the_threads_language_unless_lang_says_otherwise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bot.store.storing import Store

    path = tmp_path / "gpunode.db"
    at = datetime(2026, 12, 1, 2, 0, tzinfo=UTC)
    async with await Store.open(str(path)) as store:
        incident, _ = await store.open_or_join_incident(
            "gpu-node-01", "C1", opened_by="U0LIWEI", at=at, locale="zh-CN"
        )
    monkeypatch.setenv("GPUNODE_STORE__PATH", str(path))

    assert await asyncio.to_thread(main, ["timeline", incident.id]) == 0
    kept = capsys.readouterr().out
    assert await asyncio.to_thread(main, ["timeline", incident.id, "--lang", "en"]) == 0
    english = capsys.readouterr().out

    assert english.startswith(f"# Postmortem draft: {incident.id}")
    assert not kept.startswith("# Postmortem draft") and CJK.search(kept.splitlines()[0])


def test_prevent_prints_the_kit_in_the_asked_language(capsys: pytest.CaptureFixture[str]) -> None:
    from gpunode_sandbox.kubesim import KubeSim, load_scenario
    from gpunode_sandbox.kubesim.access import BOT_TOKEN

    with KubeSim.running_in_thread(load_scenario("seed")) as sim:
        base = ["prevent", "gpu-node-01", "--server", sim.url, "--token", BOT_TOKEN]
        assert main([*base, "--lang", "zh-CN"]) == 0
        chinese = capsys.readouterr().out
        assert main(base) == 0
        english = capsys.readouterr().out
    assert CJK.search(chinese) and not CJK.search(english)
