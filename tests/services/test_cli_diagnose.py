from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.cli import main
from bot.cli.diagnose import analyze_files, diagnose_node
from bot.cli.ops import LiveSurface
from bot.cli.presenter import Wanted, present
from bot.config import Settings
from bot.core.governance import commands
from bot.core.model.clusters import DEFAULT_CLUSTER, NodeRef
from bot.core.model.thresholds import DEFAULT
from bot.core.reporting.outcomes import KitMade, NodeDiagnosed
from bot.errors import CollectorError, NotFoundError, UsageError
from bot.services.clusters import ClusterRegistry
from bot.services.commands import Asker, handle
from bot.slack.blockkit import validate_blocks
from tests.services.fakes import FakeKube, load_scenario

SEED = Path(__file__).resolve().parents[1] / "fixtures" / "bundles" / "seed"
EVIDENCE, CLUSTER = str(SEED / "evidence.json"), str(SEED / "cluster.json")


def test_analyze_json_prints_codes_verdict_ledger_and_plans(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["analyze", EVIDENCE, "--cluster", CLUSTER, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"]["cause"] == "host_memory_workload"
    assert "HOST_MEM_NON_GPU_WORKLOAD" in {f["code"] for f in out["findings"]}
    assert out["ledger"]["total_bytes"] > 0
    assert {p["tier"] for p in out["plans"]} == {1, 2, 3}


def test_analyze_blocks_prints_the_one_valid_slack_message_a_diagnosis_posts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["analyze", EVIDENCE, "--cluster", CLUSTER, "--format", "blocks"]) == 0
    messages = json.loads(capsys.readouterr().out)
    assert len(messages) == 1
    for m in messages:
        validate_blocks(m["blocks"])


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_analyze_works_offline_without_a_cluster_view(fmt: str) -> None:
    out = analyze_files(EVIDENCE, None, fmt, locale="en")
    assert "gpu-node-01" in out


def test_a_missing_file_is_a_usage_error_that_says_what_to_pass(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="gpunode collect"):
        analyze_files(str(tmp_path / "nope.json"), None, "text", locale="en")


def test_malformed_json_names_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": "1.0",\n  oops}')
    assert main(["analyze", str(bad)]) == 2  # a usage error: the file passed is not JSON
    err = capsys.readouterr().err
    assert "not valid JSON (line 2" in err and "gpunode collect" in err


def test_a_bundle_missing_fields_lists_what_is_wrong(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema_version": "1.0", "hostname": "x"}))
    with pytest.raises(UsageError, match="collector_version"):
        analyze_files(str(bad), None, "json", locale="en")


def test_another_schema_major_version_is_refused(tmp_path: Path) -> None:
    data = json.loads(Path(EVIDENCE).read_text())
    data["schema_version"] = "2.0"
    bad = tmp_path / "v2.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(CollectorError, match=r"schema version 2\.0"):
        analyze_files(str(bad), None, "json", locale="en")


def test_a_malformed_cluster_view_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "view.json"
    bad.write_text(json.dumps({"node": {}}))
    with pytest.raises(UsageError, match="cluster view"):
        analyze_files(EVIDENCE, str(bad), "json", locale="en")


def _kube() -> FakeKube:
    """The shared KubePort fake over the seed fixture (other nodes are not found)."""
    bundle, view = load_scenario("seed")
    return FakeKube(bundle, view)


async def test_diagnose_checks_the_node_runs_the_job_then_reads_the_view_and_renders() -> None:
    kube = _kube()
    now = datetime(2026, 3, 14, 9, 31, tzinfo=UTC)
    out = await diagnose_node(kube, "gpu-node-01", "text", thresholds=DEFAULT, now=now, locale="en")
    assert [(c.method, c.args) for c in kube.calls] == [
        ("get_node", ("gpu-node-01",)),
        ("run_diagnostic", ("gpu-node-01",)),
        ("get_cluster_view", ("gpu-node-01",)),
    ]
    assert "VERDICT" in out and "age 1m" in out


async def test_diagnose_of_an_unknown_node_runs_no_job() -> None:
    kube = _kube()
    with pytest.raises(NotFoundError):
        await diagnose_node(
            kube, "nope", "json", thresholds=DEFAULT, now=datetime.now(UTC), locale="en"
        )
    assert [(c.method, c.args) for c in kube.calls] == [("get_node", ("nope",))]


@pytest.mark.parametrize(
    ("node", "problem"),
    [
        ("GPU_Node", "lowercase"),
        ("a" * 254, "the limit is 253"),
    ],
)
def test_gpunode_diagnose_parses_the_node_with_the_slash_commands_grammar(
    node: str, problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # refused before any cluster is contacted (a usage error, exit 2): no --server needed
    assert main(["diagnose", node]) == 2
    err = capsys.readouterr().err
    assert problem in err and "gpunode diagnose [CLUSTER/]NODE" in err, err


async def test_the_terminal_diagnoses_through_the_command_table_into_an_outcome() -> None:
    """``gpunode diagnose`` is one verb of the table: ``handle`` with the terminal's surface
    answers the node's diagnosis as data (no incident, no thread), in the cluster chosen."""
    kube = _kube()
    surface = LiveSurface(ClusterRegistry.single(kube), Settings())
    outcome = await handle(commands.parse("diagnose gpu-node-01"), Asker("cli:me"), surface)

    assert isinstance(outcome, NodeDiagnosed)
    assert outcome.at == NodeRef(cluster=DEFAULT_CLUSTER, node="gpu-node-01")
    assert outcome.diagnosis.node == "gpu-node-01" and outcome.bundle is not None
    assert [c.method for c in kube.calls] == ["get_node", "run_diagnostic", "get_cluster_view"]
    printed = present(outcome, locale="en", wanted=Wanted(fmt="json"))
    assert json.loads(printed.out)["node"] == "gpu-node-01" and printed.status == 0


async def test_the_terminal_makes_the_kit_through_the_command_table() -> None:
    kube = _kube()
    surface = LiveSurface(ClusterRegistry.single(kube), Settings())
    outcome = await handle(commands.parse("prevent gpu-node-01"), Asker("cli:me"), surface)

    assert isinstance(outcome, KitMade)
    assert outcome.at.node == "gpu-node-01" and outcome.source.kind == "live"
    assert present(outcome, locale="en").out.startswith("# Prevention kit for gpu-node-01\n")
