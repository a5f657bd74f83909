"""Settings that list clusters: each reached in-cluster, through a kubeconfig context, or by
URL with a token file; today's single-cluster settings keep working as the cluster
``default``; mistakes are named with the key to fix."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest

from bot.config import KubeSettings, load_settings
from bot.config.settings import cluster_kube_settings
from bot.errors import ConfigError, UnknownClusterError
from bot.kube.connecting import build_api_client
from bot.services.clusters import ClusterRegistry
from bot.services.ports import KubePort

TWO = """
kube: {namespace: gpu-ops, image: "registry.example/gpunode:1.2"}
clusters:
  prod-eu: {mode: kubeconfig, kubeconfig: /etc/gpunode/kubeconfig, context: prod-eu-admin}
  prod-us:
    mode: server
    server: https://prod-us.example:6443
    token_file: /var/run/secrets/prod-us/token
    ca_file: /var/run/secrets/prod-us/ca.crt
    timeout_s: 4
  local: {mode: in_cluster}
default_cluster: prod-us
channel_clusters: {C0EUROPE: prod-eu}
"""


def test_clusters_are_listed_by_name_and_share_the_job_settings(tmp_path: Path) -> None:
    settings = load_settings({}, config_file=_write(tmp_path, TWO))
    per = cluster_kube_settings(settings)

    assert list(per) == ["prod-eu", "prod-us", "local"]
    assert (per["prod-eu"].mode, per["prod-eu"].context) == ("kubeconfig", "prod-eu-admin")
    assert (per["prod-us"].server, per["prod-us"].token_file) == (
        "https://prod-us.example:6443",
        "/var/run/secrets/prod-us/token",
    )
    assert per["prod-us"].request_timeout_s == 4
    assert per["local"].mode == "in_cluster"
    assert {k.namespace for k in per.values()} == {"gpu-ops"}
    assert {k.image for k in per.values()} == {"registry.example/gpunode:1.2"}


def test_the_registry_picks_named_then_channel_then_default_cluster(tmp_path: Path) -> None:
    settings = load_settings({}, config_file=_write(tmp_path, TWO))
    built: list[str] = []

    def build(ks: KubeSettings) -> KubePort:
        built.append(ks.context or ks.server or ks.mode)
        return cast(KubePort, object())

    registry = ClusterRegistry.from_settings(settings, build=build)

    assert registry.multi and registry.default == "prod-us"
    assert registry.choose(channel="C0EUROPE") == "prod-eu"
    assert registry.choose(channel="C0OTHER") == "prod-us"
    assert registry.choose("local", channel="C0EUROPE") == "local"
    assert registry.timeout_s("prod-us") == 4
    assert built == []  # nothing is built (or connected to) before it is used
    registry.port("prod-eu")
    registry.port("prod-eu")
    assert built == ["prod-eu-admin"]
    with pytest.raises(UnknownClusterError, match="knows are: local, prod-eu, prod-us"):
        registry.port("prod-ap")


def test_priming_starts_the_default_clusters_port_and_connects_to_no_other(
    tmp_path: Path,
) -> None:
    settings = load_settings({}, config_file=_write(tmp_path, TWO))
    primed: list[str] = []

    class Port:
        def __init__(self, name: str) -> None:
            self.name = name

        def prime(self) -> None:
            primed.append(self.name)

    registry = ClusterRegistry.from_settings(
        settings, build=lambda ks: cast(KubePort, Port(ks.context or ks.server or ks.mode))
    )
    registry.prime_default()

    assert primed == [registry.default_port().name]  # type: ignore[attr-defined]
    assert list(registry._ports) == ["prod-us"]
    bare = ClusterRegistry.from_settings(settings, build=lambda ks: cast(KubePort, object()))
    bare.prime_default()  # a port with nothing to keep: nothing to start, no error


def test_settings_without_clusters_are_one_cluster_named_default(tmp_path: Path) -> None:
    text = "kube: {mode: server, server: http://127.0.0.1:1, token: t, namespace: gpunode}\n"
    settings = load_settings({}, config_file=_write(tmp_path, text))
    registry = ClusterRegistry.from_settings(settings, build=lambda ks: ks)  # type: ignore[arg-type, return-value]

    assert registry.names == ("default",) and not registry.multi
    port = registry.port("default")
    assert isinstance(port, KubeSettings) and port == settings.kube


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (
            "clusters: {prod-eu: {mode: server, server: https://x}}\n",
            "clusters.prod-eu: Value error, mode 'server' needs token_file (or token)",
        ),
        (
            "clusters: {prod-eu: {mode: server, token_file: /t}}\n",
            "clusters.prod-eu: Value error, mode 'server' needs server",
        ),
        (
            "clusters: {prod-eu: {mode: kubeconfig}}\n",
            "clusters.prod-eu: Value error, mode 'kubeconfig' needs context",
        ),
        (
            "clusters: {Prod_EU: {mode: in_cluster}}\n",
            "clusters: name number 1 is not a DNS-1123 label",
        ),
        (
            "clusters: {prod-eu: {mode: in_cluster}}\ndefault_cluster: prod-us\n",
            "default_cluster is not one of the clusters (prod-eu)",
        ),
        (
            "clusters: {prod-eu: {mode: in_cluster}}\nchannel_clusters: {C1: prod-us}\n",
            "channel C1 maps to a cluster that is not listed (prod-eu)",
        ),
        ("clusters: {prod-eu: {mode: in_cluster, timeout_s: 0}}\n", "clusters.prod-eu.timeout_s"),
    ],
)
def test_cluster_settings_mistakes_name_the_key_to_fix(
    text: str, says: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings({}, config_file=_write(tmp_path, text))
    assert says in caught.value.message


def test_a_server_cluster_reads_its_token_from_the_file_and_again_after_rotation(
    tmp_path: Path,
) -> None:
    token = tmp_path / "token"
    token.write_text("first-token\n", encoding="utf-8")
    ca = tmp_path / "ca.crt"
    ca.write_text("-----BEGIN CERTIFICATE-----\n", encoding="utf-8")
    ks = KubeSettings(
        mode="server", server="https://127.0.0.1:6443", token_file=str(token), ca_file=str(ca)
    )
    api = build_api_client(ks)
    cfg = api.configuration

    assert cfg.ssl_ca_cert == str(ca)
    assert cfg.get_api_key_with_prefix("authorization") == "Bearer first-token"
    token.write_text("rotated-token\n", encoding="utf-8")
    assert cfg.get_api_key_with_prefix("authorization") == "Bearer rotated-token"
    api.close()


@pytest.mark.parametrize(
    ("token_text", "ca_exists", "says"),
    [
        (None, True, "cannot read the token file"),
        ("", True, "is empty"),
        ("t", False, "kube.ca_file"),
    ],
)
def test_a_missing_token_or_ca_file_is_a_config_error_naming_it(
    tmp_path: Path, token_text: str | None, ca_exists: bool, says: str
) -> None:
    token = tmp_path / "token"
    if token_text is not None:
        token.write_text(token_text, encoding="utf-8")
    ca = tmp_path / "ca.crt"
    if ca_exists:
        ca.write_text("x", encoding="utf-8")
    ks = KubeSettings(mode="server", server="https://h", token_file=str(token), ca_file=str(ca))
    with pytest.raises(ConfigError, match=says):
        build_api_client(ks)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "gpunode.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_policy_role_scoped_to_a_cluster_the_settings_do_not_list_stops_the_start() -> None:
    from bot.core.governance.policy import parse_policy
    from bot.wiring.runtime import check_policy_clusters

    registry = ClusterRegistry({"prod-eu": object, "prod-us": object})  # type: ignore[dict-item]
    good = parse_policy(
        {"roles": {"sre": {"allows": [2], "can_approve": [1], "clusters": ["prod-eu"]}}}
    )
    typo = parse_policy(
        {"roles": {"sre": {"allows": [2], "can_approve": [1], "clusters": ["prod-ue"]}}}
    )

    check_policy_clusters(good, registry)
    with pytest.raises(ConfigError) as caught:
        check_policy_clusters(typo, registry)
    assert caught.value.message.startswith(
        "the policy's role sre is scoped to cluster prod-ue, which the settings do not list "
        "(clusters: prod-eu, prod-us)"
    )


def test_a_tier_requestable_in_a_cluster_where_nobody_may_approve_it_stops_the_start() -> None:
    from bot.core.governance.policy import parse_policy
    from bot.wiring.runtime import check_policy_clusters

    registry = ClusterRegistry({"prod-eu": object, "prod-us": object})  # type: ignore[dict-item]
    policy = parse_policy(
        {
            "roles": {
                "sre": {"allows": [1, 2]},
                "lead": {"can_approve": [1], "clusters": ["prod-eu"]},
            }
        }
    )
    with pytest.raises(ConfigError) as caught:
        check_policy_clusters(policy, registry)
    assert caught.value.message.startswith(
        "tier 1 needs approval, and may be requested in cluster prod-us, but no role may "
        "approve it there"
    )
