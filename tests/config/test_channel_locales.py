"""The per-channel language override in the settings: read from YAML or the environment,
normalised, and refused with a clear error (that never echoes the value)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import load_settings
from bot.errors import ConfigError


def test_channel_locales_default_to_none() -> None:
    assert load_settings({}).slack.channel_locales == {}


def test_a_yaml_mapping_is_normalised(tmp_path: Path) -> None:
    cfg = tmp_path / "gpunode.yaml"
    cfg.write_text("slack:\n  channel_locales:\n    C0INCIDENT: zh_CN\n    G0PRIVATE: en-US\n")
    settings = load_settings({}, config_file=cfg)
    assert settings.slack.channel_locales == {"C0INCIDENT": "zh-CN", "G0PRIVATE": "en"}


def test_the_environment_form_lists_pairs() -> None:
    env = {"GPUNODE_SLACK__CHANNEL_LOCALES": "C0INCIDENT=zh-CN, C0OPS=en"}
    assert load_settings(env).slack.channel_locales == {"C0INCIDENT": "zh-CN", "C0OPS": "en"}


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("C0INCIDENT=fr-FR", "channel C0INCIDENT: unsupported locale; use one of en, zh-CN"),
        ("C0INCIDENT=zh-TW", "channel C0INCIDENT: unsupported locale; use one of en, zh-CN"),
        ("general=zh-CN", "a key is not a Slack channel ID"),
        ("C0INCIDENT", "write each entry as CHANNEL_ID=LOCALE"),
    ],
)
def test_a_bad_override_names_the_setting_and_what_to_do(value: str, says: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_settings({"GPUNODE_SLACK__CHANNEL_LOCALES": value})
    assert "slack.channel_locales" in err.value.message
    assert says in err.value.message


def test_a_bad_value_is_never_echoed() -> None:
    secret_looking = "xoxb-1234-not-a-locale"
    with pytest.raises(ConfigError) as err:
        load_settings({"GPUNODE_SLACK__CHANNEL_LOCALES": f"C0INCIDENT={secret_looking}"})
    assert secret_looking not in err.value.message
