"""Build the ``kubernetes`` ApiClient from ``KubeSettings``.

Modes: ``in_cluster`` (service-account token), ``kubeconfig`` (file + optional context),
``server`` (explicit URL + a bearer token, inline or from a file that is re-read on each
request so a rotated token is picked up; an optional CA bundle; TLS verification
switchable), and
``auto`` (in-cluster when ``KUBERNETES_SERVICE_HOST`` is set, else kubeconfig).
Configuration errors become ``ConfigError`` saying which setting to fix.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

from kubernetes import client, config

from bot.config import KubeSettings
from bot.errors import ConfigError
from bot.kube.doing import Doing
from bot.kube.errors import translating

#: urllib3 retries on connection/read errors; one retry rides over a dropped keep-alive
#: connection without multiplying long timeouts.
DEFAULT_RETRIES = 1
#: keep-alive connections per cluster: one per gateway thread (gateway.THREADS_PER_CLUSTER,
#: 16) and one per informer's watch (10: pods, nodes, pod events, six kinds of controller,
#: PodDisruptionBudgets), so no call opens a connection the pool then discards (the client's
#: default is 5 per CPU: 10 on a 2-core pod, fewer than the threads)
POOL_SIZE = 26


def server_url_cause(url: str) -> tuple[str, str] | None:
    """Why ``url`` cannot be an API server's URL, as a cause (``not_url``: the parser's
    ``detail``; ``no_scheme_or_host``), or None."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  # raises ValueError on a port that is not a number
    except ValueError as exc:
        return "not_url", str(exc)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "no_scheme_or_host", ""
    return None


def server_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be an API server's URL (scheme and host), or None. Checked before
    the client sees it: urllib3 reads a URL without a scheme with a FutureWarning, then fails
    somewhere less clear."""
    found = server_url_cause(url)
    if found is None:
        return None
    if found[0] == "not_url":
        return f"{url!r} is not a URL ({found[1]})"
    return f"{url!r} is not an API server URL: give the scheme and host, e.g. https://10.0.0.1:6443"


def _server_configuration(settings: KubeSettings) -> client.Configuration:
    if not settings.server:
        raise ConfigError("kube.mode is 'server' but kube.server is empty; set the API URL.")
    if problem := server_url_problem(settings.server):
        raise ConfigError(f"kube.server {problem}.")
    cfg = client.Configuration()
    cfg.host = settings.server.rstrip("/")
    cfg.verify_ssl = settings.verify_tls
    if settings.ca_file:
        if not Path(settings.ca_file).is_file():
            raise ConfigError(f"kube.ca_file {settings.ca_file} does not exist; fix the path")
        cfg.ssl_ca_cert = settings.ca_file
    if settings.token is not None:
        cfg.api_key = {"authorization": settings.token.get_secret_value()}
        cfg.api_key_prefix = {"authorization": "Bearer"}
    elif settings.token_file:
        token_file = settings.token_file
        cfg.api_key = {"authorization": _read_token(token_file)}
        cfg.api_key_prefix = {"authorization": "Bearer"}

        def refresh(c: client.Configuration) -> None:
            c.api_key["authorization"] = _read_token(token_file)

        cfg.refresh_api_key_hook = refresh  # type: ignore[assignment]  # stubbed as None
    return cfg


def _read_token(path: str) -> str:
    try:
        token = Path(path).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(
            f"cannot read the token file {path}: {exc.strerror}; check token_file"
        ) from exc
    if not token:
        raise ConfigError(f"the token file {path} is empty; check token_file")
    return token


def _kubeconfig_configuration(settings: KubeSettings) -> client.Configuration:
    """The kubeconfig's context, or ``ConfigError`` naming what is wrong with the file: the
    client indexes the YAML as it finds it, so a list, a string or a number where a mapping
    belongs fails inside it with a TypeError."""
    cfg = client.Configuration()
    where = settings.kubeconfig or "~/.kube/config"
    try:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=settings.kubeconfig,
            context=settings.context,
            client_configuration=cfg,
        )
    except (TypeError, AttributeError, KeyError, IndexError) as exc:
        raise ConfigError(
            f"the kubeconfig {where} is not a kubeconfig (a field has the wrong shape: "
            f"{type(exc).__name__}: {exc}); check it with `kubectl config view "
            f"--kubeconfig {where}`, or pass another with --kubeconfig"
        ) from exc
    if problem := server_url_problem(cfg.host or ""):
        raise ConfigError(f"the kubeconfig {where}: its cluster's server {problem}")
    return cfg


def build_api_client(settings: KubeSettings, *, retries: int = DEFAULT_RETRIES) -> client.ApiClient:
    """A configured ApiClient; nothing is contacted yet."""
    mode = settings.mode
    if mode == "auto":
        mode = "in_cluster" if os.environ.get("KUBERNETES_SERVICE_HOST") else "kubeconfig"
    with translating(Doing.of("load_config")):
        if mode == "server":
            cfg = _server_configuration(settings)
        elif mode == "in_cluster":
            cfg = client.Configuration()
            config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        else:
            cfg = _kubeconfig_configuration(settings)
    cfg.retries = retries
    cfg.connection_pool_maxsize = POOL_SIZE  # this cluster's one pool, shared by its threads
    return client.ApiClient(configuration=cfg)
