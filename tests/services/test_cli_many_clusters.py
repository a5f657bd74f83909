"""The terminal takes ``[CLUSTER/]NODE`` exactly as the slash command does: `gpunode diagnose
prod-us/gpu-node-01` runs its Job in prod-us; `gpunode top` ranks across the settings'
clusters and names one that cannot be reached."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.cli import main
from bot.kube.doing import LABELS, Doing, placeholders
from bot.render.errors import doing_text
from gpunode_sandbox.kubesim import KubeSim, load_scenario
from gpunode_sandbox.kubesim.access import BOT_TOKEN
from tests.ports import refusing_port


@contextlib.contextmanager
def two_clusters(tmp_path: Path, *, us_stopped: bool = False) -> Iterator[tuple[Path, KubeSim]]:
    with (
        KubeSim.running_in_thread(load_scenario("seed")) as eu,
        KubeSim.running_in_thread(load_scenario("slab-leak")) as us,
        refusing_port() as stopped,  # a stopped API server: the connection is refused
    ):
        us_url = f"http://127.0.0.1:{stopped}" if us_stopped else us.url
        # A stopped server refuses at once, so a short timeout costs nothing there; a running
        # one gets as long as prod-eu, or a loaded machine times out the Job's creation.
        us_timeout_s = 1 if us_stopped else 20
        config = tmp_path / "gpunode.yaml"
        config.write_text(
            "kube: {namespace: gpunode}\n"
            "clusters:\n"
            f"  prod-eu: {{mode: server, server: '{eu.url}', token: {BOT_TOKEN}, timeout_s: 20}}\n"
            f"  prod-us: {{mode: server, server: '{us_url}', token: {BOT_TOKEN}, "
            f"timeout_s: {us_timeout_s}}}\n",
            encoding="utf-8",
        )
        yield config, us


def test_terminal_diagnose_of_cluster_slash_node_runs_in_that_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with two_clusters(tmp_path) as (config, us):
        code = main(["diagnose", "prod-us/gpu-node-01", "--config", str(config)])
        jobs = [p for m, p, _q in us.requests if m == "POST" and p.endswith("/jobs")]
    out = capsys.readouterr().out

    assert code == 0
    assert "slab" in out.lower()
    assert len(jobs) == 1


@pytest.mark.parametrize(
    ("ref", "says"),
    [
        (
            "prod-ap/gpu-node-01",
            "no cluster named 'prod-ap'; the known clusters are: prod-eu, prod-us",
        ),
        ("Prod-US/gpu-node-01", "cluster names are lowercase: did you mean prod-us?"),
    ],
)
def test_terminal_diagnose_of_an_unknown_cluster_names_the_known_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], ref: str, says: str
) -> None:
    with two_clusters(tmp_path) as (config, _us):
        code = main(["diagnose", ref, "--config", str(config)])
    captured = capsys.readouterr()

    assert code != 0
    assert says in captured.err


def test_terminal_top_ranks_both_clusters_and_names_a_stopped_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with two_clusters(tmp_path) as (config, _us):
        assert main(["top", "--config", str(config)]) == 0
    both = capsys.readouterr().out
    with two_clusters(tmp_path, us_stopped=True) as (config, _us):
        assert main(["top", "--config", str(config)]) == 0
    one = capsys.readouterr().out

    assert both.splitlines()[0].split()[:2] == ["CLUSTER", "NODE"]
    table, legend = both.split("\n\n")  # the rows, then the legend of the columns
    assert {line.split()[0] for line in table.splitlines()[1:]} == {"prod-eu", "prod-us"}
    assert legend.startswith("PRESSURE ") and "USED% " in legend
    assert one.startswith("cluster prod-us left out: cluster prod-us could not be reached")
    rows = one.split("\n\n")[0].splitlines()[2:]
    assert {line.split()[0] for line in rows} == {"prod-eu"}


def test_terminal_top_in_chinese_says_why_a_stopped_cluster_is_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The stopped cluster's line is worded in Chinese, its cause (the API server that did
    not answer) too, and so is the request that met no answer; the URL is quoted as it was."""
    from tests.render.test_catalogs import english_words

    with two_clusters(tmp_path, us_stopped=True) as (config, _us):
        assert main(["top", "--config", str(config), "--lang", "zh-CN"]) == 0
    said = capsys.readouterr().out
    first = said.splitlines()[0]
    assert "prod-us" in first and "无法连接集群 prod-us" in first, first
    assert english_words(first) == [], first
    # `top` asks the cluster-wide questions (no placeholders): one of them met no answer
    cluster_wide = [Doing.of(key) for key in LABELS if not placeholders(key)]
    assert not [str(d) for d in cluster_wide if str(d) in first], first
    assert [d.key for d in cluster_wide if doing_text(d.key, {}, "", "zh-CN") in first], first
