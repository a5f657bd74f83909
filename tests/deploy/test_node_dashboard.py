"""The node-memory Grafana dashboard (deploy/monitoring/grafana-node-memory.json) loads, each
panel's query is valid PromQL (promtool checks them offline as recording rules, Grafana's
variables substituted as a Prometheus server sees them), it offers the variables the bot's
``links.dashboard_url`` and the alerts' ``dashboard_url`` fill, and a broken query is caught."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.telemetry.promql_names import grafana_exprs

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "deploy" / "monitoring" / "grafana-node-memory.json"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool not installed (run `make system-deps`)"
)
#: Grafana's variables as Prometheus receives them (regex matchers take the value as is)
GRAFANA_VARS = {
    "$__rate_interval": "5m",
    "$__interval": "1m",
    "$node": "gpu-node-01",
    "$cluster": ".*",
}


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return loaded


def promtool_check(exprs: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    rules = []
    for i, expr in enumerate(exprs):
        for var, value in GRAFANA_VARS.items():
            expr = expr.replace(var, value)
        assert "$" not in expr, expr
        rules.append({"record": f"gpunode_node_dashboard:query_{i}", "expr": expr})
    path = tmp_path / "node-dashboard-queries.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "node-dashboard", "rules": rules}]}))
    assert PROMTOOL is not None
    return subprocess.run(
        [PROMTOOL, "check", "rules", str(path)], capture_output=True, text=True, timeout=120
    )


def test_the_dashboard_loads_with_its_uid_variables_and_panels() -> None:
    d = dashboard()
    assert d["uid"] == "gpunode-node"
    names = {v["name"] for v in d["templating"]["list"]}
    assert {"datasource", "cluster", "node"} <= names
    titles = [p["title"] for p in d["panels"]]
    assert len(titles) == len(set(titles)) >= 6
    assert all(p["targets"] and p["datasource"]["uid"] == "${datasource}" for p in d["panels"])
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids))


def test_every_panel_selects_the_chosen_node() -> None:
    for where, expr in grafana_exprs(dashboard()):
        if where.startswith("panel"):
            assert "$node" in expr, where


@needs_promtool
def test_promtool_parses_every_panel_query(tmp_path: Path) -> None:
    exprs = [e for _, e in grafana_exprs(dashboard())]
    done = promtool_check(exprs, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(exprs)} rules found" in done.stdout


@needs_promtool
def test_promtool_catches_a_broken_panel_query(tmp_path: Path) -> None:
    (_, expr), *_ = grafana_exprs(dashboard())
    done = promtool_check(
        [expr.replace("node_memory_MemTotal_bytes{", "node_memory_MemTotal_bytes{{", 1)], tmp_path
    )
    assert done.returncode != 0
