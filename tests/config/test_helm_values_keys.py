"""The Helm values keys named in the settings, per chart: read from YAML, and a key that does
not parse is refused with the chart, the field and what to write (never the value)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import load_settings
from bot.core.model.workloads import parse_helm_keys
from bot.errors import ConfigError
from bot.kube.rollouts import chart_name


def test_a_chart_maps_each_field_to_its_values_key(tmp_path: Path) -> None:
    cfg = tmp_path / "gpunode.yaml"
    cfg.write_text(
        "kube:\n  helm_values_keys:\n    redis:\n"
        "      memory-limit: redis=master.resources.limits.memory\n"
        "      priority-class: master.priorityClassName\n"
    )
    keys = load_settings({}, config_file=cfg).kube.helm_values_keys
    assert keys == {
        "redis": {
            "memory-limit": "redis=master.resources.limits.memory",
            "priority-class": "master.priorityClassName",
        }
    }


@pytest.mark.parametrize("value", ["", "zq=", "=zq", "zq=a,zr", "zq zr", "zq=zr=zs", "zq,,zr"])
def test_a_key_that_does_not_parse_is_refused_without_echoing_it(
    tmp_path: Path, value: str
) -> None:
    cfg = tmp_path / "gpunode.yaml"
    cfg.write_text(f'kube:\n  helm_values_keys:\n    redis:\n      memory-limit: "{value}"\n')
    with pytest.raises(ConfigError) as err:
        load_settings({}, config_file=cfg)
    text = str(err.value)
    assert "redis" in text and "memory-limit" in text
    assert "e.g. 'resources.limits.memory'" in text
    assert "zq" not in text


def test_an_unknown_field_is_refused(tmp_path: Path) -> None:
    cfg = tmp_path / "gpunode.yaml"
    cfg.write_text("kube:\n  helm_values_keys:\n    redis:\n      cpu-limit: resources\n")
    with pytest.raises(ConfigError):
        load_settings({}, config_file=cfg)


@pytest.mark.parametrize(
    ("label", "name"),
    [
        ("prep-1.2.0", "prep"),
        ("kube-prometheus-stack-55.5.0", "kube-prometheus-stack"),
        ("my-chart-2-1.0.0-rc.1", "my-chart-2"),
        ("gpu-operator-v24.9.0", "gpu-operator"),
        ("app-1.0.0_build.5", "app"),
    ],
)
def test_the_chart_name_is_the_label_without_its_version(label: str, name: str) -> None:
    assert chart_name(label) == name


def test_pairs_name_a_key_per_container_and_one_key_serves_any_container() -> None:
    pairs = parse_helm_keys("memory-limit", "main=a.b, side=c", source="settings", where="x")
    assert [(k.container, k.key) for k in pairs] == [("main", "a.b"), ("side", "c")]
    [one] = parse_helm_keys("memory-limit", "{container}.resources", source="settings", where="x")
    assert (one.container, one.key) == (None, "{container}.resources")
