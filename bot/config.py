"""One ``Settings`` model, read in one place (``load_settings``), passed explicitly.

Sources, later wins: defaults < optional YAML file (``GPUNODE_CONFIG`` or ``--config``) <
environment variables ``GPUNODE_<GROUP>__<FIELD>`` (e.g. ``GPUNODE_SLACK__BOT_TOKEN``).
Nothing here is read at import time. Secrets are ``SecretStr`` and never logged.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from bot.errors import ConfigError

ENV_PREFIX = "GPUNODE_"


class _Group(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SlackSettings(_Group):
    bot_token: SecretStr | None = Field(None, description="xoxb- bot token")
    signing_secret: SecretStr | None = Field(None, description="verifies HTTP-mode requests")
    app_token: SecretStr | None = Field(None, description="xapp- token; enables Socket Mode")
    socket_mode: bool = Field(False, description="use Socket Mode instead of HTTP")
    api_base_url: str = Field("https://slack.com/api/", description="Web API base (stand-in)")
    incident_channel: str = Field("", description="channel for alert-opened incidents")


class KubeSettings(_Group):
    mode: Literal["auto", "in_cluster", "kubeconfig", "server"] = Field(
        "auto", description="auto = in-cluster when available, else kubeconfig"
    )
    kubeconfig: str | None = Field(None, description="kubeconfig path")
    context: str | None = Field(None, description="kubeconfig context")
    server: str | None = Field(None, description="explicit API server URL (mode=server)")
    token: SecretStr | None = Field(None, description="bearer token for mode=server")
    verify_tls: bool = Field(True, description="verify the API server certificate")
    namespace: str = Field("gpunode", description="namespace of the diagnostic Jobs")
    image: str = Field("ghcr.io/gpunode/gpunode:0.1.0", description="collector image")
    job_timeout_s: int = Field(120, ge=10, le=3600, description="activeDeadlineSeconds")
    job_ttl_s: int = Field(300, ge=0, description="ttlSecondsAfterFinished")
    nvidia_runtime_class: str | None = Field(None, description="runtimeClassName for NVML")
    nvidia_visible_devices_all: bool = Field(False, description="set NVIDIA_VISIBLE_DEVICES=all")
    service_account: str = Field("gpunode-collector", description="SA of the diagnostic pod")


class StoreSettings(_Group):
    path: str = Field(".gpunode/gpunode.db", description="SQLite file (WAL mode)")


class HttpSettings(_Group):
    host: str = Field("0.0.0.0", description="listen address for HTTP mode")
    port: int = Field(3000, ge=1, le=65535, description="listen port")
    alertmanager_token: SecretStr | None = Field(None, description="bearer for /alertmanager")


class ActionSettings(_Group):
    policy_file: str | None = Field(None, description="role policy YAML")
    evidence_max_age_s: int = Field(900, ge=30, description="refuse actions on older evidence")
    approval_ttl_s: int = Field(900, ge=30, description="approvals expire after this")
    usergroup_cache_ttl_s: int = Field(300, ge=0, description="usergroups.users.list cache")
    watch_timeout_s: float = Field(
        180, ge=0, description="how long to watch a rollout/eviction land before reporting"
    )
    watch_interval_s: float = Field(2, gt=0, description="seconds between rollout checks")


class Settings(_Group):
    slack: SlackSettings = SlackSettings()
    kube: KubeSettings = KubeSettings()
    store: StoreSettings = StoreSettings()
    http: HttpSettings = HttpSettings()
    actions: ActionSettings = ActionSettings()
    thresholds_file: str | None = Field(None, description="analysis thresholds YAML")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"


def _env_overrides(environ: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in environ.items():
        if not key.startswith(ENV_PREFIX) or key == ENV_PREFIX + "CONFIG":
            continue
        path = key[len(ENV_PREFIX) :].lower().split("__")
        node = out
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    return out


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def load_settings(
    environ: Mapping[str, str] | None = None, *, config_file: str | Path | None = None
) -> Settings:
    """Build Settings from the file and the environment; raise ConfigError saying what to fix."""
    env = os.environ if environ is None else environ
    data: dict[str, Any] = {}
    path = config_file or env.get(ENV_PREFIX + "CONFIG")
    if path:
        try:
            loaded = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        except OSError as exc:
            raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from exc
        except yaml.YAMLError as exc:
            raise ConfigError(f"config file {path} is not valid YAML: {exc}") from exc
        if not isinstance(loaded, dict):
            raise ConfigError(f"config file {path} must hold a mapping at the top level")
        data = loaded
    data = _merge(data, _env_overrides(env))
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise ConfigError(
            f"invalid settings ({problems}). Set them in the config file or as "
            f"{ENV_PREFIX}<GROUP>__<FIELD> environment variables."
        ) from exc
