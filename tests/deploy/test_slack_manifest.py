"""The Slack app manifest fits Slack's schema limits and asks only for what gpunode uses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
MANIFEST = REPO / "deploy" / "slack-app-manifest.yaml"
SCHEMA = REPO / "deploy" / "schemas" / "slack-app-manifest.schema.json"


def _manifest() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    return data


def _validate(manifest: dict[str, Any]) -> None:
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(manifest, schema, cls=jsonschema.Draft202012Validator)


def test_manifest_matches_the_schema_subset() -> None:
    _validate(_manifest())


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("display_information", "name"), "x" * 36),
        (("display_information", "description"), "x" * 141),
        (("features", "bot_user", "display_name"), "x" * 81),
        (("features", "slash_commands", 0, "command"), "gpunode"),
        (("features", "slash_commands", 0, "command"), "/" + "x" * 32),
        (("features", "slash_commands", 0, "url"), "ftp://example.com"),
        (("settings", "interactivity", "is_enabled"), "yes"),
        (("oauth_config", "scopes", "bot"), ["commands", "commands"]),
    ],
)
def test_schema_rejects_values_over_slack_limits(path: tuple[Any, ...], value: Any) -> None:
    manifest = _manifest()
    node: Any = manifest
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(jsonschema.ValidationError):
        _validate(manifest)


def test_the_slash_command_is_gpunode_and_points_at_bolt_events_path() -> None:
    (command,) = _manifest()["features"]["slash_commands"]
    assert command["command"] == "/gpunode"
    assert command["url"].endswith("/slack/events")
    settings = _manifest()["settings"]
    assert settings["interactivity"]["request_url"] == command["url"]
    assert settings["event_subscriptions"]["request_url"] == command["url"]


def test_bot_scopes_are_exactly_the_ones_gpunode_uses() -> None:
    assert set(_manifest()["oauth_config"]["scopes"]["bot"]) == {
        "commands",
        "chat:write",
        "chat:write.public",
        "users:read",
        "usergroups:read",
        "files:write",
        "channels:history",
        "groups:history",
        "app_mentions:read",
        "pins:write",
    }


def test_every_event_has_the_scope_it_needs() -> None:
    needs = {
        "app_home_opened": None,  # Slack's event reference: no scope required
        "app_mention": "app_mentions:read",
        "message.channels": "channels:history",
        "message.groups": "groups:history",
    }
    manifest = _manifest()
    scopes = set(manifest["oauth_config"]["scopes"]["bot"])
    for event in manifest["settings"]["event_subscriptions"]["bot_events"]:
        needed = needs[event]
        assert needed is None or needed in scopes


def test_the_home_tab_is_enabled_for_the_app_home_opened_event() -> None:
    manifest = _manifest()
    assert manifest["features"]["app_home"]["home_tab_enabled"] is True
    assert "app_home_opened" in manifest["settings"]["event_subscriptions"]["bot_events"]


def test_http_mode_manifest_keeps_socket_mode_off() -> None:
    assert _manifest()["settings"]["socket_mode_enabled"] is False
