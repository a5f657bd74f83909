"""deploy/monitoring: the metrics Service, its NetworkPolicy, the ServiceMonitor and the
bot-health PrometheusRule render, validate, and point at a port the bot really serves.

The bot-health rules' plain twin (deploy/prometheus/bot-rules.yml) is unit-tested with
promtool; those tests skip with that reason when promtool is absent (`make system-deps`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.deploy.kustomizing import find, render
from tests.schemas import validate_strict

#: the runbook page the alerts' runbook_url points at, one "## AlertName" section each
RUNBOOK_PAGE = (Path(__file__).resolve().parents[2] / "docs" / "runbook.md").read_text(
    encoding="utf-8"
)
REPO = Path(__file__).resolve().parents[2]
MONITORING = REPO / "deploy" / "monitoring"
PROM = REPO / "deploy" / "prometheus"
SCHEMAS = REPO / "deploy" / "schemas"
BOT_TARGETS = {
    "base": REPO / "deploy" / "base",
    "socket-mode": REPO / "deploy" / "overlays" / "socket-mode",
}
VERSIONS = ("1.31.0", "1.37.0")
CRD_KINDS = {"ServiceMonitor": "servicemonitor", "PrometheusRule": "prometheusrule"}
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool not installed (run `make system-deps`)"
)

EXPECTED_ALERTS = {
    "GpunodeDiagnosesFailing",
    "GpunodeSlackApiErrors",
    "GpunodeSlackAuthFailing",
    "GpunodeKubernetesApiErrors",
    "GpunodeNoLeaseHolder",
    "GpunodeSeveralLeaseHolders",
}


def _schema(kind: str) -> dict[str, Any]:
    schema = json.loads((SCHEMAS / f"{CRD_KINDS[kind]}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema  # type: ignore[no-any-return]


def _container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return find(objects, "Deployment", "gpunode")["spec"]["template"]["spec"]["containers"][0]  # type: ignore[no-any-return]


def _matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def test_monitoring_holds_the_expected_objects_in_the_gpunode_namespace() -> None:
    objects = render(MONITORING)
    assert sorted((o["kind"], o["metadata"]["name"]) for o in objects) == [
        ("NetworkPolicy", "gpunode-metrics"),
        ("PrometheusRule", "gpunode-bot-health"),
        ("Service", "gpunode-metrics"),
        ("ServiceMonitor", "gpunode"),
    ]
    for obj in objects:
        assert obj["metadata"]["namespace"] == "gpunode"
        assert obj["metadata"]["labels"]["app.kubernetes.io/part-of"] == "gpunode"


@pytest.mark.parametrize("version", VERSIONS)
def test_builtin_objects_pass_strict_schema_validation(version: str) -> None:
    for obj in render(MONITORING):
        if obj["kind"] not in CRD_KINDS:
            validate_strict(obj, version)


@pytest.mark.parametrize("kind", sorted(CRD_KINDS))
def test_custom_resources_match_their_crd_schema(kind: str) -> None:
    (obj,) = [o for o in render(MONITORING) if o["kind"] == kind]
    jsonschema.validate(obj, _schema(kind), cls=jsonschema.Draft202012Validator)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("endpoints", 0, "intervall"), "30s"),  # misspelled field
        (("endpoints", 0, "interval"), "30 seconds"),  # not a Prometheus duration
        (("endpoints", 0, "scheme"), "tcp"),
        (("selector", "matchExpressions"), [{"key": "a", "operator": "Equals"}]),
    ],
)
def test_servicemonitor_schema_rejects_what_the_crd_rejects(
    path: tuple[Any, ...], value: Any
) -> None:
    (obj,) = [o for o in render(MONITORING) if o["kind"] == "ServiceMonitor"]
    node = obj["spec"]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(obj, _schema("ServiceMonitor"), cls=jsonschema.Draft202012Validator)


@pytest.mark.parametrize("target", sorted(BOT_TARGETS))
def test_the_servicemonitor_reaches_the_port_the_bot_serves_metrics_on(target: str) -> None:
    """ServiceMonitor -> Service (by labels, port by name) -> pod (by selector, container
    port by name) -> the bot's metrics.port setting: one chain, in both transports."""
    from bot.config import load_settings

    monitoring = render(MONITORING)
    bot = render(BOT_TARGETS[target])
    monitor = find(monitoring, "ServiceMonitor", "gpunode")["spec"]
    services = [o for o in monitoring + bot if o["kind"] == "Service"]
    selected = [
        s for s in services if _matches(monitor["selector"]["matchLabels"], s["metadata"]["labels"])
    ]
    assert [s["metadata"]["name"] for s in selected] == ["gpunode-metrics"]
    (service,) = selected
    assert service["metadata"]["namespace"] in monitor["namespaceSelector"]["matchNames"]
    (endpoint,) = monitor["endpoints"]
    (port,) = [p for p in service["spec"]["ports"] if p["name"] == endpoint["port"]]
    assert endpoint["path"] == "/metrics"

    pod = find(bot, "Deployment", "gpunode")["spec"]["template"]
    assert _matches(service["spec"]["selector"], pod["metadata"]["labels"])
    container = _container(bot)
    (named,) = [p for p in container["ports"] if p["name"] == port["targetPort"]]
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    settings = load_settings({**env, "GPUNODE_KUBE__NAMESPACE": "gpunode"})
    assert settings.metrics.enabled
    assert settings.metrics.port == named["containerPort"]

    policy = find(monitoring, "NetworkPolicy", "gpunode-metrics")["spec"]
    assert _matches(policy["podSelector"]["matchLabels"], pod["metadata"]["labels"])
    (rule,) = policy["ingress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": named["containerPort"]}]
    assert [p["namespaceSelector"]["matchLabels"] for p in rule["from"]] == [
        {"kubernetes.io/metadata.name": "monitoring"}
    ]


def test_the_job_label_the_rules_expect_is_the_one_the_servicemonitor_sets() -> None:
    monitoring = render(MONITORING)
    monitor = find(monitoring, "ServiceMonitor", "gpunode")["spec"]
    service = find(monitoring, "Service", "gpunode-metrics")
    job = service["metadata"]["labels"][monitor["jobLabel"]]
    assert f'job="{job}"' in (PROM / "bot-rules.yml").read_text()


def test_the_prometheus_rule_spec_equals_the_plain_rule_file() -> None:
    rule = find(render(MONITORING), "PrometheusRule", "gpunode-bot-health")
    plain = yaml.safe_load((PROM / "bot-rules.yml").read_text())
    assert rule["spec"]["groups"] == plain["groups"]
    alerts = {r["alert"] for g in plain["groups"] for r in g["rules"]}
    assert alerts == EXPECTED_ALERTS


@pytest.mark.parametrize(
    "rule",
    [r for g in yaml.safe_load((PROM / "bot-rules.yml").read_text())["groups"] for r in g["rules"]],
    ids=lambda r: r["alert"],
)
def test_each_bot_alert_has_a_severity_and_full_annotations(rule: dict[str, Any]) -> None:
    assert rule["labels"]["severity"] in {"info", "warning", "critical"}
    # monitoring-mixins: a runbook_url (a page in docs/runbook.md) and a dashboard_url
    assert set(rule["annotations"]) == {"summary", "description", "runbook_url", "dashboard_url"}
    anchor = rule["annotations"]["runbook_url"].split("#")[1]
    assert f"\n## {rule['alert']}\n" in RUNBOOK_PAGE and anchor == rule["alert"].lower()


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
def test_pure_python_render_equals_kubectl_kustomize() -> None:
    out = subprocess.run(
        ["kubectl", "kustomize", str(MONITORING)],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    expected = sorted(
        (d["kind"], d["metadata"]["name"], json.dumps(d, sort_keys=True))
        for d in yaml.safe_load_all(out)
        if d
    )
    got = sorted(
        (d["kind"], d["metadata"]["name"], json.dumps(d, sort_keys=True))
        for d in render(MONITORING)
    )
    assert got == expected


def _promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run(
        [PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


@needs_promtool
def test_promtool_checks_the_bot_rule_file() -> None:
    result = _promtool("check", "rules", "bot-rules.yml", cwd=PROM)
    assert result.returncode == 0, result.stdout + result.stderr


@needs_promtool
def test_promtool_unit_tests_of_the_bot_rules_pass() -> None:
    result = _promtool("test", "rules", "bot-rules.test.yml", cwd=PROM)
    assert result.returncode == 0, result.stdout + result.stderr


@needs_promtool
@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("(gpunode_leader) == 0", "(gpunode_leader) == 2"),
        ("[30m])) > 0.5", "[30m])) > 0.9"),
        ('status!~"404|409|429"', 'status!~"404|409"'),
        ("[10m])) > 3", "[10m])) > 30"),
    ],
)
def test_promtool_unit_tests_catch_a_changed_bot_rule(
    tmp_path: Path, before: str, after: str
) -> None:
    text = (PROM / "bot-rules.yml").read_text()
    assert before in text
    (tmp_path / "bot-rules.yml").write_text(text.replace(before, after))
    shutil.copy(PROM / "bot-rules.test.yml", tmp_path / "bot-rules.test.yml")
    assert _promtool("test", "rules", "bot-rules.test.yml", cwd=tmp_path).returncode != 0
