"""The prevention kit's alert rules: valid, unit-tested with promtool, one source of truth.

promtool comes with Debian's `prometheus` package (`make system-deps` installs it); the
promtool tests skip with that reason when it is absent.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

#: the runbook page the alerts' runbook_url points at, one "## AlertName" section each
RUNBOOK_PAGE = (Path(__file__).resolve().parents[2] / "docs" / "runbook.md").read_text(
    encoding="utf-8"
)
REPO = Path(__file__).resolve().parents[2]
PROM = REPO / "deploy" / "prometheus"
SCHEMA = REPO / "deploy" / "schemas" / "prometheusrule.schema.json"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool not installed (run `make system-deps`)"
)

EXPECTED_ALERTS = {
    "GpunodeKernelUnreclaimableSlabHigh",
    "GpunodePageCacheSqueezed",
    "GpunodeMemoryAvailableLow",
    "GpunodeMemoryPressureStall",
    "GpunodeOOMKill",
    "GpunodeContainerNearMemoryLimit",
    "GpunodeMemoryLimitsOvercommitted",
}


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _rules() -> list[dict[str, Any]]:
    return [r for g in _load(PROM / "rules.yml")["groups"] for r in g["rules"]]


def _promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run(
        [PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def test_prometheus_rule_spec_equals_the_plain_rule_file() -> None:
    assert (
        _load(PROM / "gpunode-rules.yaml")["spec"]["groups"] == _load(PROM / "rules.yml")["groups"]
    )


def test_prometheus_rule_matches_its_crd_schema() -> None:
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(
        _load(PROM / "gpunode-rules.yaml"), schema, cls=jsonschema.Draft202012Validator
    )


def test_crd_schema_rejects_a_rule_that_is_both_alert_and_record() -> None:
    schema = json.loads(SCHEMA.read_text())
    broken = _load(PROM / "gpunode-rules.yaml")
    broken["spec"]["groups"][0]["rules"][0]["record"] = "x:y"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema, cls=jsonschema.Draft202012Validator)


def test_the_kit_has_exactly_the_expected_alerts() -> None:
    assert {r["alert"] for r in _rules()} == EXPECTED_ALERTS


@pytest.mark.parametrize("rule", _rules(), ids=lambda r: r["alert"])
def test_each_alert_has_severity_node_and_full_annotations(rule: dict[str, Any]) -> None:
    assert rule["labels"]["severity"] in {"info", "warning", "critical"}
    # monitoring-mixins: a runbook_url (a page in docs/runbook.md) and a dashboard_url
    assert set(rule["annotations"]) == {"summary", "description", "runbook_url", "dashboard_url"}
    anchor = rule["annotations"]["runbook_url"].split("#")[1]
    assert f"\n## {rule['alert']}\n" in RUNBOOK_PAGE and anchor == rule["alert"].lower()
    # gpunode's alert intake needs a node label: either copied from instance, or carried by
    # the series (kube-state-metrics, kubelet/cAdvisor); the runbook names the node.
    assert rule["annotations"]["dashboard_url"].endswith("var-node={{ $labels.node }}")
    expr = rule["expr"]
    if re.search(r"\bnode_(memory|vmstat|pressure)_", expr):
        assert '"node", "$1", "instance"' in expr


def test_node_exporter_metric_names_carry_base_units() -> None:
    text = (PROM / "rules.yml").read_text()
    for name in re.findall(r"\bnode_memory_\w+", text):
        assert name.endswith("_bytes"), name


@needs_promtool
def test_promtool_checks_the_rule_file() -> None:
    result = _promtool("check", "rules", "rules.yml", cwd=PROM)
    assert result.returncode == 0, result.stdout + result.stderr


@needs_promtool
def test_promtool_unit_tests_pass() -> None:
    result = _promtool("test", "rules", "rules.test.yml", cwd=PROM)
    assert result.returncode == 0, result.stdout + result.stderr


@needs_promtool
def test_promtool_unit_tests_catch_a_changed_threshold(tmp_path: Path) -> None:
    rules = (
        (PROM / "rules.yml")
        .read_text()
        .replace("node_memory_MemTotal_bytes > 0.3", "node_memory_MemTotal_bytes > 0.5")
    )
    assert rules != (PROM / "rules.yml").read_text()
    (tmp_path / "rules.yml").write_text(rules)
    shutil.copy(PROM / "rules.test.yml", tmp_path / "rules.test.yml")
    result = _promtool("test", "rules", "rules.test.yml", cwd=tmp_path)
    assert result.returncode != 0
