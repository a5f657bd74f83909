"""Every metric the Grafana dashboard and the bot-health rules query is one the bot really
exports: the names come from a live bot's ``/metrics`` after the demo story, not from a list.
promtool checks that every query parses (the dashboard's as recording rules)."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.telemetry.conftest import BotScrapes
from tests.telemetry.promql_names import grafana_exprs, metric_names
from tests.telemetry.scraping import Scrape

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "deploy" / "monitoring" / "grafana-dashboard.json"
BOT_RULES = REPO / "deploy" / "prometheus" / "bot-rules.yml"
PROMTOOL = shutil.which("promtool")
#: series Prometheus makes itself for every target; and labels its Kubernetes discovery and
#: the Prometheus Operator put on every scraped series
PROMETHEUS_OWN = {"up", "scrape_duration_seconds", "scrape_samples_scraped", "ALERTS"}
TARGET_LABELS = {"job", "instance", "namespace", "pod", "service", "endpoint", "container"}
#: Grafana's variables, as a Prometheus server would see them substituted
GRAFANA_VARS = {"$__rate_interval": "5m", "$__interval": "1m", "$job": "gpunode"}


def exported_names(scrape: Scrape) -> set[str]:
    """What a query can select: every sample name, and each declared family's series names
    (``# TYPE x histogram`` exports ``x_bucket``, ``x_sum`` and ``x_count`` even before a
    first observation)."""
    names = set(scrape.sample_names())
    for line in scrape.text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            names.add(name)
            if kind in ("histogram", "summary"):
                names |= {f"{name}_sum", f"{name}_count"}
            if kind == "histogram":
                names.add(f"{name}_bucket")
    return names


def exported_labels(scrape: Scrape) -> set[str]:
    return {k for s in scrape.samples for k in s.labels} | TARGET_LABELS


def label_names(expr: str) -> set[str]:
    """Label names in matchers and in by/without/on/ignoring/group_* lists."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    names: set[str] = set()
    for block in re.findall(r"\{([^{}]*)\}", text):
        names |= set(re.findall(r"([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)", block))
    for block in re.findall(
        r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^()]*)\)", text
    ):
        names |= {n.strip() for n in block.split(",") if n.strip()}
    return names - {"__name__"}


def rule_exprs() -> list[tuple[str, str]]:
    doc = yaml.safe_load(BOT_RULES.read_text(encoding="utf-8"))
    return [(r["alert"], r["expr"]) for g in doc["groups"] for r in g["rules"]]


def dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text(encoding="utf-8"))


def unknown_metrics(exprs: list[tuple[str, str]], exported: set[str]) -> list[str]:
    return [
        f"{where}: {name}"
        for where, expr in exprs
        for name in sorted(metric_names(expr))
        if name not in exported and name not in PROMETHEUS_OWN
    ]


def test_every_dashboard_query_reads_metrics_the_bot_exports(
    bot_scrapes: BotScrapes,
) -> None:
    exprs = grafana_exprs(dashboard())
    assert len(exprs) >= 15
    assert unknown_metrics(exprs, exported_names(bot_scrapes.full)) == []
    # and the dashboard covers every gpunode family
    read = {n for _, e in exprs for n in metric_names(e)}
    families = {n for n in bot_scrapes.full.families() if n.startswith("gpunode_")}
    unread = {f for f in families if not any(r.startswith(f.removesuffix("_total")) for r in read)}
    assert unread == set()


def test_every_rule_reads_metrics_the_bot_exports(bot_scrapes: BotScrapes) -> None:
    exprs = rule_exprs()
    assert unknown_metrics(exprs, exported_names(bot_scrapes.full)) == []
    assert all(metric_names(e) for _, e in exprs)


@pytest.mark.parametrize("source", ["dashboard", "rules"])
def test_every_label_queried_is_one_the_bot_or_its_scrape_sets(
    source: str, bot_scrapes: BotScrapes
) -> None:
    exprs = grafana_exprs(dashboard()) if source == "dashboard" else rule_exprs()
    known = exported_labels(bot_scrapes.full)
    unknown = [f"{w}: {n}" for w, e in exprs for n in sorted(label_names(e) - known)]
    assert unknown == []


def test_a_misspelled_metric_in_the_dashboard_is_caught(
    bot_scrapes: BotScrapes,
) -> None:
    broken = copy.deepcopy(dashboard())
    target = broken["panels"][4]["targets"][0]
    target["expr"] = target["expr"].replace("gpunode_commands_total", "gpunode_command_total")
    found = unknown_metrics(grafana_exprs(broken), exported_names(bot_scrapes.full))
    assert found == [f"panel {broken['panels'][4]['title']!r} A: gpunode_command_total"]


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        (
            'histogram_quantile(0.9, sum by (le) (rate(x_bucket{job=~"$job"}[$__rate_interval])))',
            {"x_bucket"},
        ),
        ('sum by (a) (y) == 0 or absent(y{job="gpunode"})', {"y"}),
        ('label_replace(a / b > 0.3, "node", "$1", "instance", "([^:]+)")', {"a", "b"}),
        (
            "sum(rate(a_total[5m] offset 1h)) / on (pod) group_left (node) info * 1e3",
            {"a_total", "info"},
        ),
        ('count without (x) (foo) > bool 2 and bar unless {__name__="baz"}', {"foo", "bar", "baz"}),
        ("max_over_time(z[1h:5m])", {"z"}),
    ],
)
def test_the_lexer_finds_exactly_the_metric_names(expr: str, names: set[str]) -> None:
    assert metric_names(expr) == names


@pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (run `make system-deps`)")
def test_promtool_parses_every_dashboard_query(tmp_path: Path) -> None:
    rules = []
    for i, (_, expr) in enumerate(grafana_exprs(dashboard())):
        for var, value in GRAFANA_VARS.items():
            expr = expr.replace(var, value)
        assert "$" not in expr, expr
        rules.append({"record": f"gpunode_dashboard:query_{i}", "expr": expr})
    path = tmp_path / "dashboard-queries.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    assert PROMTOOL is not None
    done = subprocess.run(
        [PROMTOOL, "check", "rules", str(path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_misspelled_label_in_a_rule_is_caught(bot_scrapes: BotScrapes) -> None:
    (_, expr), *_ = rule_exprs()
    broken = expr.replace("by (namespace, job)", "by (namespace, jbo)")
    assert broken != expr
    known = exported_labels(bot_scrapes.full)
    assert label_names(broken) - known == {"jbo"}
    assert label_names(expr) - known == set()
