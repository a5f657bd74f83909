"""Every scenario's prevention kit is schema-valid, and the schemas can fail.

Each shipped scenario runs in the Kubernetes stand-in; the kit of each of its nodes is
computed through the real gateway (``gpunode prevent``'s path) and checked:
ResourceQuota and LimitRange with kubernetes-validate (strict, oldest and newest supported
Kubernetes), the kubelet settings against deploy/schemas/kubeletconfiguration-v1beta1
(KubeletConfiguration is a file, not an API object), the descheduler policy against
deploy/schemas/deschedulerpolicy-v1alpha2 (mirrors the descheduler's own v1alpha2 types), the
PrometheusRule against its CRD schema and its rules with ``promtool check rules`` and
``promtool test rules``. The promtool tests skip, saying why, where promtool is absent.
"""

from __future__ import annotations

import asyncio
import copy
import json
import shutil
import subprocess
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from bot.config import KubeSettings
from bot.core.model.quantity import parse_quantity
from bot.kube.gateway import Gateway
from bot.render.prevention import render_prevention_files
from bot.services.prevention import Kit, kit_from_cluster
from gpunode_sandbox.kubesim import KubeSim, load_scenario
from gpunode_sandbox.kubesim.access import BOT_TOKEN
from gpunode_sandbox.kubesim.scenarios import list_scenarios
from tests.schemas import validate_strict

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = REPO / "deploy" / "schemas"
VERSIONS = ("1.31.0", "1.37.0")  # the oldest and newest supported Kubernetes
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool not installed (run `make system-deps`)"
)
#: the seed runs in every test run; the other scenarios (a stand-in each) with the slow tests
SCENARIOS = [
    s if s == "seed" else pytest.param(s, marks=pytest.mark.slow) for s in list_scenarios()
]


def schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    return loaded


DESCHEDULER = schema("deschedulerpolicy-v1alpha2.schema.json")
KUBELET = schema("kubeletconfiguration-v1beta1.schema.json")
PROMETHEUS_RULE = schema("prometheusrule.schema.json")


@cache
def kits(scenario: str) -> dict[str, Kit]:
    """The kit of every node of ``scenario``, read through the real gateway."""

    async def read(url: str, nodes: list[str]) -> dict[str, Kit]:
        gw = Gateway.from_settings(
            KubeSettings(mode="server", server=url, token=BOT_TOKEN, verify_tls=False)
        )
        try:
            at = datetime(2026, 12, 1, tzinfo=UTC)
            return {n: await kit_from_cluster(gw, n, at=at) for n in nodes}
        finally:
            gw.close()

    loaded = load_scenario(scenario)
    with KubeSim.running_in_thread(loaded) as sim:
        return asyncio.run(read(sim.url, [n.name for n in loaded.nodes]))


def docs(kit: Kit, name: str) -> list[dict[str, Any]]:
    text = render_prevention_files(kit.params, source=kit.source, locale="en")[name]
    return [d for d in yaml.safe_load_all(text) if d is not None]


def validate(doc: Any, against: dict[str, Any]) -> None:
    jsonschema.validate(doc, against, cls=jsonschema.Draft202012Validator)


@pytest.mark.parametrize("against", [DESCHEDULER, KUBELET], ids=["descheduler", "kubelet"])
def test_the_schemas_are_valid_json_schemas(against: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator.check_schema(against)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_scenario_kit_quota_and_limitrange_pass_kubernetes_validate(
    scenario: str, version: str
) -> None:
    for node, kit in kits(scenario).items():
        quotas, ranges = docs(kit, "resourcequota.yaml"), docs(kit, "limitrange.yaml")
        assert len(quotas) == len(ranges) == len(kit.params.namespaces), node
        for doc in [*quotas, *ranges]:
            validate_strict(doc, version)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_scenario_kit_kubelet_config_matches_the_kubelet_v1beta1_fields(
    scenario: str,
) -> None:
    for kit in kits(scenario).values():
        [config] = docs(kit, "kubelet-config.yaml")
        validate(config, KUBELET)
        # the kubelet's own cross-field rules: a soft threshold needs a grace period, and
        # (ours) fires before the hard one
        assert set(config["evictionSoft"]) <= set(config["evictionSoftGracePeriod"])
        soft = parse_quantity(config["evictionSoft"]["memory.available"]).as_float()
        hard = parse_quantity(config["evictionHard"]["memory.available"]).as_float()
        assert soft > hard


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_scenario_kit_descheduler_policy_matches_the_v1alpha2_schema(
    scenario: str,
) -> None:
    for kit in kits(scenario).values():
        [policy] = docs(kit, "descheduler-policy.yaml")
        validate(policy, DESCHEDULER)
        # nodeutilization/validation.go: same resources, thresholds <= targetThresholds
        for profile in policy["profiles"]:
            for cfg in profile["pluginConfig"]:
                if cfg["name"] == "LowNodeUtilization":
                    low, high = cfg["args"]["thresholds"], cfg["args"]["targetThresholds"]
                    assert set(low) == set(high)
                    assert all(low[r] <= high[r] for r in low)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_scenario_kit_prometheus_rule_matches_its_crd_schema(scenario: str) -> None:
    for kit in kits(scenario).values():
        [rule] = docs(kit, "prometheusrule.yaml")
        validate(rule, PROMETHEUS_RULE)


def _promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run(
        [PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def _rule_file(kit: Kit, path: Path) -> None:
    [rule] = docs(kit, "prometheusrule.yaml")
    path.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}), encoding="utf-8")


@needs_promtool
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_scenario_kit_alert_rules_pass_promtool_check(scenario: str, tmp_path: Path) -> None:
    for node, kit in kits(scenario).items():
        _rule_file(kit, tmp_path / f"{node}.yml")
    result = _promtool("check", "rules", *sorted(p.name for p in tmp_path.iterdir()), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def _unit_tests(kit: Kit, *, slab_over: float, available_under: float) -> dict[str, Any]:
    """promtool unit tests around the kit's own thresholds: the node's RAM, slab
    ``slab_over`` above the slab ratio and MemAvailable ``available_under`` below the
    available ratio (negative: on the other side), for 20 minutes."""
    p = kit.params
    total = p.kubelet.capacity_memory_bytes
    labels = '{instance="10.0.0.7:9100"}'
    slab = int(total * (p.slab_alert_ratio + slab_over))
    available = int(total * (p.available_alert_ratio - available_under))
    alerts: list[dict[str, Any]] = []

    def expect(name: str, severity: str, fires: bool) -> None:
        alerts.append(
            {
                "eval_time": "20m",
                "alertname": name,
                "exp_alerts": [
                    {
                        "exp_labels": {
                            "severity": severity,
                            "instance": "10.0.0.7:9100",
                            "node": "10.0.0.7",
                        }
                    }
                ]
                if fires
                else [],
            }
        )

    expect("GpunodeKernelUnreclaimableSlabHigh", "warning", slab_over > 0)
    expect("GpunodeMemoryAvailableLow", "critical", available_under > 0)
    return {
        "rule_files": ["rules.yml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [
                    {"series": f"node_memory_MemTotal_bytes{labels}", "values": f"{total}x20"},
                    {"series": f"node_memory_SUnreclaim_bytes{labels}", "values": f"{slab}x20"},
                    {
                        "series": f"node_memory_MemAvailable_bytes{labels}",
                        "values": f"{available}x20",
                    },
                ],
                "alert_rule_test": alerts,
            }
        ],
    }


def _without_annotations(rules: Path) -> None:
    """promtool compares annotations too; the unit tests here are about when alerts fire."""
    data = yaml.safe_load(rules.read_text())
    for group in data["groups"]:
        for rule in group["rules"]:
            rule.pop("annotations", None)
    rules.write_text(yaml.safe_dump(data))


@needs_promtool
@pytest.mark.parametrize(
    ("slab_over", "available_under"), [(0.05, 0.01), (-0.05, -0.01), (0.05, -0.01)]
)
def test_the_seed_kit_alerts_fire_exactly_past_their_thresholds_in_promtool_unit_tests(
    tmp_path: Path, slab_over: float, available_under: float
) -> None:
    kit = kits("seed")["gpu-node-01"]
    _rule_file(kit, tmp_path / "rules.yml")
    _without_annotations(tmp_path / "rules.yml")
    tests = _unit_tests(kit, slab_over=slab_over, available_under=available_under)
    (tmp_path / "tests.yml").write_text(yaml.safe_dump(tests))
    result = _promtool("test", "rules", "tests.yml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


@needs_promtool
def test_promtool_unit_tests_fail_when_the_alert_does_not_fire_as_expected(
    tmp_path: Path,
) -> None:
    kit = kits("seed")["gpu-node-01"]
    _rule_file(kit, tmp_path / "rules.yml")
    _without_annotations(tmp_path / "rules.yml")
    tests = _unit_tests(kit, slab_over=-0.05, available_under=-0.01)
    tests["tests"][0]["alert_rule_test"][0]["exp_alerts"] = [{"exp_labels": {}}]  # claims a firing
    (tmp_path / "tests.yml").write_text(yaml.safe_dump(tests))
    assert _promtool("test", "rules", "tests.yml", cwd=tmp_path).returncode != 0


def _seed_policy() -> dict[str, Any]:
    [policy] = docs(kits("seed")["gpu-node-01"], "descheduler-policy.yaml")
    return policy


def _set(doc: dict[str, Any], path: tuple[str | int, ...], key: str, value: Any) -> None:
    target: Any = doc
    for step in path:
        target = target[step]
    target[key] = value


def _rename(doc: dict[str, Any], path: tuple[str | int, ...], old: str, new: str) -> None:
    target: Any = doc
    for step in path:
        target = target[step]
    target[new] = target.pop(old)


ARGS_LOW = ("profiles", 0, "pluginConfig", 1, "args")


@pytest.mark.parametrize(
    ("edit", "what"),
    [
        (lambda d: _rename(d, (), "profiles", "profile"), "top-level field"),
        (lambda d: _rename(d, ARGS_LOW, "thresholds", "threshold"), "LowNodeUtilization arg"),
        (lambda d: _rename(d, ARGS_LOW, "targetThresholds", "targetThreshold"), "required arg"),
        (
            lambda d: _rename(
                d,
                ("profiles", 0, "pluginConfig", 0, "args"),
                "evictLocalStoragePods",
                "evictLocalStoragePod",
            ),
            "DefaultEvictor arg",
        ),
        (lambda d: _rename(d, ("profiles", 0, "plugins"), "balance", "balanse"), "extension"),
        (
            lambda d: _set(
                d, ("profiles", 0, "plugins", "balance"), "enabled", ["LowNodeUtilisation"]
            ),
            "plugin name",
        ),
        (lambda d: _set(d, (*ARGS_LOW, "thresholds"), "memory", 140), "percentage over 100"),
        (lambda d: _set(d, (), "apiVersion", "descheduler/v1alpha1"), "removed apiVersion"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_a_typo_in_the_descheduler_policy_is_rejected_by_the_v1alpha2_schema(
    edit: Any, what: str
) -> None:
    policy = copy.deepcopy(_seed_policy())
    validate(policy, DESCHEDULER)  # the kit as rendered passes ...
    edit(policy)
    with pytest.raises(jsonschema.ValidationError):  # ... and the one edit fails
        validate(policy, DESCHEDULER)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("evictionHrad", {"memory.available": "1Gi"}),
        ("evictionHard", {"memory.availabe": "1Gi"}),
        ("evictionSoftGracePeriod", {"memory.available": "90 seconds"}),
        ("kubeReserved", {"memory": "12 GiB"}),
        ("enforceNodeAllocatable", ["pod"]),
    ],
)
def test_a_typo_in_the_kubelet_config_is_rejected_by_the_kubelet_schema(
    key: str, value: Any
) -> None:
    [config] = docs(kits("seed")["gpu-node-01"], "kubelet-config.yaml")
    validate(config, KUBELET)
    config[key] = value
    with pytest.raises(jsonschema.ValidationError):
        validate(config, KUBELET)
