"""One ``Settings`` model, read in one place (``load_settings``), passed explicitly.

Sources, later wins: defaults < optional YAML file (``GPUNODE_CONFIG`` or ``--config``) <
environment variables ``GPUNODE_<GROUP>__<FIELD>`` (e.g. ``GPUNODE_SLACK__BOT_TOKEN``).
Nothing here is read at import time. Secrets are ``SecretStr`` and never logged, and no
error message echoes a value: a YAML syntax error names the line and column (never the
line's text, which may hold a token), a validation error the key and the problem (never
the input), and neither chains the original exception (its text would hold both).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from bot.core.model.clusters import DEFAULT_CLUSTER, cluster_name_problem
from bot.core.model.locales import parse_channel_locales
from bot.core.model.validation import KeyedValueError, problems, validation_message
from bot.core.model.workloads import HELM_KEYS_FAULTS, HelmField, helm_keys_fault
from bot.core.reporting.links import template_fault, template_problem
from bot.errors import ConfigError

#: libyaml's safe loader when built (several times faster), else the pure-Python one
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

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
    channel_locales: dict[str, str] = Field(
        default_factory=dict,
        description="per-channel language override, channel ID -> en | zh-CN (env: "
        "'C0123=zh-CN,C0456=en'); wins over the thread's and the person's locale, ephemeral "
        "replies included",
    )
    user_locale_cache_ttl_s: float = Field(
        3600, ge=0, description="how long a person's Slack locale (users.info) is cached"
    )

    _channel_locales = field_validator("channel_locales", mode="before")(parse_channel_locales)


class KubeSettings(_Group):
    mode: Literal["auto", "in_cluster", "kubeconfig", "server"] = Field(
        "auto", description="auto = in-cluster when available, else kubeconfig"
    )
    kubeconfig: str | None = Field(None, description="kubeconfig path")
    context: str | None = Field(None, description="kubeconfig context")
    server: str | None = Field(None, description="explicit API server URL (mode=server)")
    token: SecretStr | None = Field(None, description="bearer token for mode=server")
    token_file: str | None = Field(
        None, description="file holding the bearer token for mode=server (re-read as it rotates)"
    )
    ca_file: str | None = Field(None, description="CA bundle that signed the API server's cert")
    verify_tls: bool = Field(True, description="verify the API server certificate")
    request_timeout_s: float = Field(
        30.0, gt=0, le=300, description="seconds one API request may take (connect + read)"
    )
    fleet_cache_s: float = Field(
        30.0,
        ge=0,
        le=3600,
        description="seconds a fleet read (every node's requests and room, for `top` and the "
        "plans' 'where can it go') is shared before the next one lists nodes and pods again",
    )
    discovery_cache_s: float = Field(
        300.0,
        ge=0,
        le=86400,
        description="seconds API discovery, the priority classes and built-in controllers' "
        "own controller references (the gangs' owner chains) are reused across diagnoses",
    )
    namespace: str = Field("gpunode", description="namespace of the diagnostic Jobs")
    image: str = Field(
        "ghcr.io/gpunode/gpunode-collector:0.1.0",
        description="the diagnostic Job's image: the slim collector (Dockerfile target "
        "`collector`: `gpunode collect` and NVML only, no bot dependencies)",
    )
    job_timeout_s: int = Field(120, ge=10, le=3600, description="activeDeadlineSeconds")
    job_ttl_s: int = Field(
        300,
        ge=0,
        le=86400,
        description="ttlSecondsAfterFinished (the admission policy admits <= 1 day)",
    )
    nvidia_runtime_class: str | None = Field(
        "nvidia",
        description="runtimeClassName of the collector pod on NVIDIA GPU nodes, so the NVIDIA "
        "runtime injects NVML (GPU Operator / Container Toolkit create 'nvidia'); when it is "
        "empty or the class does not exist, NVML is asked of the node's default runtime",
    )
    nvidia_visible_devices_all: bool = Field(
        True,
        description="set NVIDIA_VISIBLE_DEVICES=all (+ capabilities utility) for NVML; false "
        "turns GPU evidence off",
    )
    dcgm_exporter_services: list[str] = Field(
        default_factory=lambda: ["nvidia-dcgm-exporter", "dcgm-exporter"],
        description="names of dcgm-exporter's Service (GPU Operator, Helm chart): when NVML "
        "gives no per-process GPU memory, the bot reads the exporter's per-pod figures from "
        "its endpoint on the node, found through this Service's EndpointSlices; [] turns it off",
    )
    diagnostic_priority_class: str | None = Field(
        None,
        description="optional priorityClassName of the collector pod (e.g. system-node-critical) "
        "so the kubelet admits it on a node under pressure or with full requests; needs the "
        "ResourceQuota in deploy/overlays/critical-collector",
    )
    service_account: str = Field("gpunode-collector", description="SA of the diagnostic pod")
    kernel_log_window_s: int = Field(
        86400, ge=0, le=30 * 86400, description="kernel log (OOM kills, XIDs) kept; 0: not read"
    )
    collector_mode: Literal["job", "daemonset"] = Field(
        "job",
        description="how evidence is collected: job = a diagnostic Job per diagnosis (the "
        "default; needs `jobs create`); daemonset = ask the node's resident agent "
        "(deploy/overlays/daemonset, for clusters that forbid `jobs create`)",
    )
    agent_daemonset: str = Field(
        "gpunode-agent", description="daemonset mode: the agents' DaemonSet in kube.namespace"
    )
    agent_port: int = Field(8443, ge=1, le=65535, description="daemonset mode: the agents' port")
    agent_server_name: str = Field(
        "gpunode-agent",
        description="daemonset mode: the name the agents' certificate must carry (checked)",
    )
    agent_ca_file: str = Field(
        "/etc/gpunode/agent-tls/ca.crt",
        description="daemonset mode: the CA that signed the agents' certificate",
    )
    agent_token_file: str = Field(
        "/var/run/secrets/gpunode/agent/token",
        description="daemonset mode: the bot's projected ServiceAccount token for the agents' "
        "audience (re-read at each request: the kubelet rotates it)",
    )
    agent_timeout_s: float = Field(
        120.0, gt=0, le=3600, description="daemonset mode: seconds the agent may take to answer"
    )
    helm_values_keys: dict[str, dict[HelmField, str]] = Field(
        default_factory=dict,
        description="for Helm-managed workloads, the values key each chart renders a field "
        "from: chart name (label helm.sh/chart without its version) -> memory-limit | "
        "priority-class -> the key ('{container}' stands for the container's name) or "
        "'container=key' pairs separated by commas; a workload's own annotation "
        "gpunode.io/helm-values-key.<field> wins. The plans name the key after 'helm upgrade "
        "reverts this change' (the bot never reads a release's values: they are in Helm's "
        "release Secret)",
    )

    @field_validator("helm_values_keys")
    @classmethod
    def _helm_keys(cls, v: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        for chart, fields in v.items():
            for field, text in fields.items():
                fault = helm_keys_fault(text)
                if fault is not None:
                    raise KeyedValueError(
                        f"helm_values_keys[{chart!r}][{field!r}]: {HELM_KEYS_FAULTS[fault]}, "
                        "e.g. 'resources.limits.memory' or 'main=server.resources.limits.memory'",
                        key="setting_helm_keys",
                        params={"chart": chart, "field": field, "fault": fault},
                    )
        return v


class StoreSettings(_Group):
    path: str = Field(".gpunode/gpunode.db", description="SQLite file (WAL mode)")
    dsn: SecretStr | None = Field(
        None,
        description="the store as a DSN, overriding path: postgresql://user:pass@host/db for "
        "PostgreSQL (two or more replicas), sqlite:///path for SQLite",
    )
    audit_to_log: bool = Field(
        False, description="also log each audit row (with its chain hash) as JSON on gpunode.audit"
    )
    audit_key: SecretStr | None = Field(
        None,
        description="a secret that signs each audit row (HMAC), so a row forged by someone "
        "who can write the store but lacks this key fails `gpunode audit --verify`; keep it "
        "in its own Secret, apart from the store's DSN",
    )
    evidence_days: int | None = Field(
        90,
        ge=1,
        description="days an incident's full evidence (collector bundle, cluster view) is kept; "
        "after that only its diagnosis (the summary) stays; unset keeps everything",
    )

    @property
    def target(self) -> str:
        """What ``Store.open`` takes: the DSN when set, else the SQLite path."""
        return self.dsn.get_secret_value() if self.dsn is not None else self.path

    anchor_every: int = Field(
        100,
        ge=0,
        description="anchor the audit chain's head outside the store (an Event on the bot's "
        "Deployment) every this many rows, and at each resolve; 0: at resolves only",
    )
    anchor_deployment: str = Field(
        "gpunode", description="the bot's Deployment (in kube.namespace) that anchors are about"
    )

    @property
    def audit_key_bytes(self) -> bytes | None:
        """The audit key as the store takes it (None: rows are not signed)."""
        key = self.audit_key.get_secret_value() if self.audit_key is not None else ""
        return key.encode() if key else None


class LeaderSettings(_Group):
    """Which replica does the background work (approval expiry, reconciliation, sweeps):
    the holder of a Kubernetes Lease. Unset ``lease_name``: one replica, always the leader."""

    lease_name: str | None = Field(
        None, description="coordination.k8s.io Lease to elect the leader with (e.g. gpunode)"
    )
    lease_namespace: str | None = Field(None, description="its namespace; default kube.namespace")
    identity: str | None = Field(
        None, description="this replica's holderIdentity (the pod name); default a random id"
    )
    lease_duration_s: int = Field(
        15, ge=1, le=3600, description="leaseDurationSeconds: a silent leader is replaced after"
    )
    renew_deadline_s: float = Field(
        10, gt=0, description="a leader that could not renew for this long steps down"
    )
    retry_s: float = Field(2, gt=0, description="seconds between acquire/renew attempts")
    reconcile_s: float = Field(
        10, gt=0, description="how often the leader looks for actions of stopped replicas"
    )


class HttpSettings(_Group):
    host: str = Field("0.0.0.0", description="listen address for HTTP mode")
    port: int = Field(
        3000, ge=0, le=65535, description="listen port (0: any free port; the log says which)"
    )
    alertmanager_token: SecretStr | None = Field(None, description="bearer for /alertmanager")


class MetricsSettings(_Group):
    """``/metrics`` (Prometheus text format): the bot's own health."""

    enabled: bool = Field(True, description="serve /metrics")
    port: int | None = Field(
        None,
        ge=0,
        le=65535,
        description="serve /metrics on this port only (its own listener, for a NetworkPolicy "
        "that lets Prometheus in; 0: any free port, the log says which); unset: on the HTTP "
        "server's port (http.port)",
    )
    host: str = Field("0.0.0.0", description="listen address of the metrics port")


class AlertSettings(_Group):
    """The Alertmanager intake (``/alertmanager``): closed unless a bearer token is set."""

    allow_unauthenticated: bool = Field(
        False,
        description="serve /alertmanager WITHOUT a token (anyone who reaches the port can open "
        "incidents and start Jobs); only behind a proxy that authenticates",
    )
    max_diagnoses_per_request: int = Field(3, ge=1, description="per webhook request")
    max_diagnoses_per_node: int = Field(1, ge=1, description="per node in window_s")
    max_diagnoses_per_window: int = Field(10, ge=1, description="all nodes in window_s")
    window_s: int = Field(600, ge=1, description="the caps' sliding window, seconds")
    cluster_label: str = Field(
        "cluster",
        description="the alert label naming the cluster; an alert without it goes to the "
        "default cluster",
    )


class ActionSettings(_Group):
    policy_file: str | None = Field(None, description="role policy YAML")
    evidence_max_age_s: int = Field(900, ge=30, description="refuse actions on older evidence")
    approval_ttl_s: int = Field(900, ge=30, description="approvals expire after this")
    usergroup_cache_ttl_s: int = Field(300, ge=0, description="usergroups.users.list cache")
    watch_timeout_s: float = Field(
        180, ge=0, description="how long to watch a rollout/eviction land before reporting"
    )
    watch_interval_s: float = Field(2, gt=0, description="seconds between rollout checks")


class PrometheusSettings(_Group):
    url: str | None = Field(
        None, description="Prometheus base URL (e.g. http://prometheus:9090); unset: no history"
    )
    bearer_token: SecretStr | None = Field(None, description="sent as Authorization: Bearer")
    verify_tls: bool = Field(True, description="verify the Prometheus server certificate")
    window_s: int = Field(6 * 3600, ge=600, le=7 * 86400, description="history window")
    step_s: int = Field(60, ge=5, le=3600, description="query_range resolution")
    timeout_s: float = Field(
        3.0, gt=0, le=30, description="the longest a diagnosis waits for Prometheus"
    )


class ClusterSettings(_Group):
    """How to reach one cluster of several (``clusters.<name>``). Everything else about the
    diagnostic Jobs (namespace, image, timeouts) comes from ``kube``, shared by all."""

    mode: Literal["in_cluster", "kubeconfig", "server"] = Field(
        description="in_cluster (gpunode's own), kubeconfig (+ context) or server (+ token)"
    )
    kubeconfig: str | None = Field(None, description="kubeconfig path (mode=kubeconfig)")
    context: str | None = Field(None, description="kubeconfig context (mode=kubeconfig)")
    server: str | None = Field(None, description="API server URL (mode=server)")
    token_file: str | None = Field(None, description="bearer token file (mode=server)")
    token: SecretStr | None = Field(None, description="bearer token itself (mode=server)")
    ca_file: str | None = Field(None, description="CA bundle of the API server (mode=server)")
    verify_tls: bool = Field(True, description="verify the API server certificate")
    timeout_s: float = Field(
        10.0,
        gt=0,
        le=120,
        description="the longest one request to this cluster, and its share of a command "
        "across clusters (top), may take: a slow cluster never delays the others longer",
    )

    @model_validator(mode="after")
    def _complete(self) -> ClusterSettings:
        if self.mode == "server" and not self.server:
            raise KeyedValueError(
                "mode 'server' needs server (the API server URL)",
                key="setting_mode_needs",
                params={"mode": "server", "needs": "server"},
            )
        if self.mode == "server" and self.token is None and self.token_file is None:
            raise KeyedValueError(
                "mode 'server' needs token_file (or token)",
                key="setting_mode_needs",
                params={"mode": "server", "needs": "token_file"},
            )
        if self.mode == "kubeconfig" and not self.context:
            raise KeyedValueError(
                "mode 'kubeconfig' needs context (the kubeconfig context to use)",
                key="setting_mode_needs",
                params={"mode": "kubeconfig", "needs": "context"},
            )
        return self


class LinksSettings(_Group):
    """Links from gpunode's messages to where people already look."""

    dashboard_url: str | None = Field(
        None,
        description="dashboard URL template; {node}, {cluster}, {from} and {to} (Unix ms) are "
        "filled in, e.g. https://grafana.example.com/d/gpunode-node/gpunode-node-memory"
        "?var-node={node}&var-cluster={cluster}&from={from}&to={to} "
        "(deploy/monitoring/grafana-node-memory.json); unset: no link",
    )

    @field_validator("dashboard_url")
    @classmethod
    def _template(cls, value: str | None) -> str | None:
        if value is not None and (fault := template_fault(value)):
            key, params = fault
            raise KeyedValueError(str(template_problem(value)), key=key, params=params)
        return value


class Settings(_Group):
    clusters: dict[str, ClusterSettings] = Field(
        default_factory=dict,
        description="clusters by name; empty: one cluster named 'default', reached as `kube` says",
    )
    default_cluster: str | None = Field(
        None, description="the cluster of a command that names none (default: the first listed)"
    )
    channel_clusters: dict[str, str] = Field(
        default_factory=dict, description="channel id -> the default cluster of that channel"
    )
    slack: SlackSettings = SlackSettings()
    kube: KubeSettings = KubeSettings()
    store: StoreSettings = StoreSettings()
    http: HttpSettings = HttpSettings()
    metrics: MetricsSettings = MetricsSettings()
    actions: ActionSettings = ActionSettings()
    alerts: AlertSettings = AlertSettings()
    prometheus: PrometheusSettings = PrometheusSettings()
    leader: LeaderSettings = LeaderSettings()
    links: LinksSettings = LinksSettings()
    thresholds_file: str | None = Field(None, description="analysis thresholds YAML")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"

    @model_validator(mode="after")
    def _clusters_known(self) -> Settings:
        for index, name in enumerate(self.clusters, 1):
            if cluster_name_problem(name):  # the name is not echoed: it may be a pasted secret
                raise KeyedValueError(
                    f"clusters: name number {index} is not a DNS-1123 label (lowercase "
                    "letters, digits and '-', at most 63, starting and ending alphanumeric)",
                    key="setting_cluster_name",
                    params={"index": index},
                )
        names = sorted(self.clusters) or ["default"]
        listed = ", ".join(names)
        if self.default_cluster is not None and self.default_cluster not in names:
            raise KeyedValueError(
                f"default_cluster is not one of the clusters ({listed})",
                key="setting_default_cluster",
                params={"clusters": names},
            )
        for channel, cluster in self.channel_clusters.items():
            if cluster not in names:
                raise KeyedValueError(
                    f"channel_clusters: channel {channel} maps to a cluster that is not listed "
                    f"({listed})",
                    key="setting_channel_cluster",
                    params={"channel": channel, "clusters": names},
                )
        return self

    def cluster_connections(self) -> dict[str, KubeSettings]:
        """Each cluster's effective ``KubeSettings`` (``cluster_kube_settings``)."""
        return cluster_kube_settings(self)

    def cluster_timeouts(self) -> dict[str, float]:
        """Each listed cluster's ``timeout_s`` (none for the single ``kube`` cluster)."""
        return {name: c.timeout_s for name, c in self.clusters.items()}


def cluster_kube_settings(settings: Settings) -> dict[str, KubeSettings]:
    """Each cluster's effective ``KubeSettings``: ``kube`` with the cluster's connection;
    without ``clusters``, the one ``kube`` cluster named ``default``."""
    if not settings.clusters:
        return {DEFAULT_CLUSTER: settings.kube}
    out: dict[str, KubeSettings] = {}
    for name, c in settings.clusters.items():
        out[name] = settings.kube.model_copy(
            update={
                "mode": c.mode,
                "kubeconfig": c.kubeconfig,
                "context": c.context,
                "server": c.server,
                "token": c.token,
                "token_file": c.token_file,
                "ca_file": c.ca_file,
                "verify_tls": c.verify_tls,
                "request_timeout_s": c.timeout_s,
            }
        )
    return out


def alerts_enabled(settings: Settings) -> bool:
    """The intake is served with a token, or with the explicit unauthenticated opt-out."""
    return settings.http.alertmanager_token is not None or settings.alerts.allow_unauthenticated


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
            loaded = yaml.load(Path(path).read_text(encoding="utf-8"), Loader=LOADER)  # noqa: S506 or {}
        except OSError as exc:
            raise ConfigError(
                f"cannot read config file {path}: {exc.strerror}",
                key="config_unreadable",
                params={"path": str(path), "error": exc.strerror},
            ) from None
        except yaml.YAMLError as exc:
            raise ConfigError(
                f"config file {path} is not valid YAML: {_yaml_problem(exc)}",
                key="config_not_yaml",
                params={"path": str(path), "error": _yaml_problem(exc)},
            ) from None
        if not isinstance(loaded, dict):
            raise ConfigError(
                f"config file {path} must hold a mapping at the top level",
                key="config_not_mapping",
                params={"path": str(path)},
            )
        data = loaded
    data = _merge(data, _env_overrides(env))
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        said = validation_message(exc, where=_key_path)
        raise ConfigError(
            f"invalid settings ({said}). Set them in the config file or as "
            f"{ENV_PREFIX}<GROUP>__<FIELD> environment variables.",
            key="settings_invalid",
            params={"problems": problems(exc, where=_key_path)},
        ) from None


_SETTING_NAME = re.compile(r"[a-z][a-z0-9_]{0,29}")  # every field name fits; 32-hex secrets not


def _key_path(loc: tuple[str | int, ...]) -> str:
    """``slack.bot_token``; a key that cannot be a setting's name (a value pasted one line
    too far left, say) is shown as ``<unknown key>`` rather than echoed. The one place
    names are the user's own is ``clusters.<name>``: a name listed there is shown."""
    return ".".join(
        str(p)
        if isinstance(p, int)
        or _SETTING_NAME.fullmatch(p)
        or (i == 1 and loc[0] == "clusters" and cluster_name_problem(p) is None)
        else "<unknown key>"
        for i, p in enumerate(loc)
    )


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """What and where, without the snippet of the file PyYAML's ``str()`` quotes."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        return where + (exc.problem or exc.context or "syntax error")
    return type(exc).__name__
