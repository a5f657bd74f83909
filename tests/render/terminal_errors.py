"""The errors a terminal command (and the incident commands behind it) raises, each made by
the code that raises it: the input files of ``gpunode analyze``, ``--server``, ``--format``,
the chart and kit files the terminal writes, ``migrate``, the sandbox-only commands, an
Alertmanager payload, the incidents a command names, and ``serve``'s settings and refusal to
start. tests/render/test_error_words.py words every one of them in each locale."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import io
import json
import os
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from bot.cli import migrate, presenter
from bot.cli.common import cluster_settings
from bot.cli.diagnose import read_bundle, read_view
from bot.config.settings import Settings
from bot.core.model.evidence import SCHEMA_VERSION
from bot.core.reporting.analysis import analyze
from bot.core.reporting.checkup import Row
from bot.errors import GpunodeError
from bot.services import doctor
from bot.services.alerts import parse_payload
from bot.services.clusters import ClusterRegistry
from bot.services.operations import IncidentOps
from bot.services.prevention import kit_from_incident, prevent_incident
from bot.store.engines import require_existing
from tests.services.fakes import load_scenario as load_fixture

AT = datetime(2026, 12, 1, 2, 0, tzinfo=UTC)


def _raised(call: Callable[[], object]) -> GpunodeError:
    with pytest.raises(GpunodeError) as caught:
        call()
    return caught.value


def _awaited(call: Callable[[], Coroutine[Any, Any, object]]) -> GpunodeError:
    return _raised(lambda: asyncio.run(call()))


def _input_files(tmp: Path) -> list[GpunodeError]:
    """``gpunode analyze``'s files: missing, not UTF-8, not JSON, not an object, another
    schema version, not the schema (more problems than it names); and a cluster view that is
    missing or not an object (a problem at the top level)."""
    files = {
        "binary.json": b"\xff\xfe",
        "broken.json": b'{"schema_version": ',
        "list.json": b"[]",
        "future.json": json.dumps({"schema_version": "99.0"}).encode(),
        "empty.json": json.dumps({"schema_version": SCHEMA_VERSION}).encode(),
        "wrong.json": json.dumps(
            {
                "schema_version": SCHEMA_VERSION,
                "collector_version": 1,
                "hostname": [],
                "x": 1,
                "y": 2,
                "z": 3,
            }
        ).encode(),
    }
    for name, body in files.items():
        (tmp / name).write_bytes(body)
    return [
        _raised(lambda: read_bundle(str(tmp / "absent.json"))),
        *(_raised(partial(read_bundle, str(tmp / name))) for name in files),
        _raised(lambda: read_view(str(tmp / "absent-view.json"))),
        _raised(lambda: read_view(str(tmp / "list.json"))),
    ]


def _server(url: str) -> GpunodeError:
    args = argparse.Namespace(server=url, token=None, config=None, kubeconfig=None, context=None)
    return _raised(lambda: cluster_settings(args))


def _outputs(tmp: Path) -> list[GpunodeError]:
    """What the terminal writes: a format it does not know, a chart it cannot write, and a
    kit whose directory cannot be made, whose files exist, are symbolic links or
    directories."""
    bundle, view = load_fixture("seed")
    diagnosis = analyze(bundle, view, now=bundle.collected_at)
    files = {"README.md": "kit\n"}
    (tmp / "a-file").write_text("")
    written, linked, blocked = tmp / "written", tmp / "linked", tmp / "blocked"
    presenter.write_kit(files, written)
    linked.mkdir()
    os.symlink(tmp / "elsewhere", linked / "README.md")
    (blocked / "README.md").mkdir(parents=True)
    return [
        _raised(lambda: presenter.render_output(diagnosis, "yaml", locale="en")),
        _raised(
            lambda: presenter.write_chart(
                diagnosis, bundle, str(tmp / "no-dir" / "c.png"), locale="en"
            )
        ),
        _raised(lambda: presenter.write_kit(files, tmp / "a-file" / "kit")),
        _raised(lambda: presenter.write_kit(files, written)),
        _raised(lambda: presenter.write_kit(files, linked, force=True)),
        _raised(lambda: presenter.write_kit(files, blocked, force=True)),
    ]


def _commands(tmp: Path) -> list[GpunodeError]:
    """``migrate --app-role`` on SQLite, a sandbox-only command without the sandbox, and an
    Alertmanager payload that is not one, or of another version."""
    migrating = argparse.Namespace(dsn=str(tmp / "m.db"), app_role="gpunode", config=None)
    alert = {"version": "3", "groupKey": "g", "status": "firing", "alerts": []}
    return [
        _raised(lambda: migrate.main(migrating, out=io.StringIO())),
        _raised(
            lambda: importlib.import_module("bot.cli.main")._resolve(
                "gpunode_sandbox.no_such_stand_in:main", "demo"
            )
        ),
        _raised(lambda: parse_payload(b"{}")),
        _raised(lambda: parse_payload(json.dumps(alert).encode())),
    ]


def _settings_errors() -> list[GpunodeError]:
    """``serve``'s settings: every one missing (HTTP mode with the alert intake open, then
    Socket Mode), a user token where the bot's goes, a bot token where the app-level goes."""
    from bot.wiring.serve import check_settings  # the Slack SDKs: only this test needs them

    def checked(settings: dict[str, Any]) -> GpunodeError:
        return _raised(lambda: check_settings(Settings.model_validate(settings)))

    return [
        checked({"alerts": {"allow_unauthenticated": True}}),
        checked({"slack": {"socket_mode": True}}),
        checked({"slack": {"bot_token": "xoxp-1", "signing_secret": "s"}}),
        checked({"slack": {"bot_token": "xoxb-1", "socket_mode": True, "app_token": "xoxb-2"}}),
    ]


def _invalid_settings(tmp: Path) -> list[GpunodeError]:
    """Settings pydantic refuses (``load_settings``, as from the environment): a port that is
    no number, out of range or zero, a flag that is no flag, a mode that is not one of its
    choices, a time that must be above zero, a key no group has; a cluster whose mode misses
    what it needs (each mode), a cluster name that is no DNS label, a default cluster or a
    channel's cluster that is not listed; a Helm values-key text with each of its faults, a
    dashboard URL template that is no http(s) URL or names unknown placeholders (a stray
    brace quotes Python's English: tests/slack/test_serve.py checks it); and the config
    file: absent, not YAML, no mapping."""
    from bot.config.settings import load_settings

    def loaded(env: dict[str, str], config: Path | None = None) -> GpunodeError:
        return _raised(lambda: load_settings(env, config_file=config))

    (tmp / "broken.yaml").write_text("slack:\n  bot_token: x: y\n")
    (tmp / "list.yaml").write_text("- slack\n")
    return [
        loaded(
            {
                "GPUNODE_HTTP__PORT": "not-a-port",
                "GPUNODE_METRICS__PORT": "70000",
                "GPUNODE_KUBE__AGENT_PORT": "0",
                "GPUNODE_SLACK__SOCKET_MODE": "maybe",
                "GPUNODE_KUBE__COLLECTOR_MODE": "pod",
                "GPUNODE_LEADER__RETRY_S": "0",
                "GPUNODE_SLACK__NONSENSE": "x",
            }
        ),
        loaded(
            {
                "GPUNODE_CLUSTERS__EU__MODE": "server",
                "GPUNODE_CLUSTERS__US__MODE": "server",
                "GPUNODE_CLUSTERS__US__SERVER": "https://10.0.0.1:6443",
                "GPUNODE_CLUSTERS__ASIA__MODE": "kubeconfig",
            }
        ),
        loaded({"GPUNODE_CLUSTERS__PROD_EU__MODE": "in_cluster"}),
        loaded({"GPUNODE_DEFAULT_CLUSTER": "prod-us"}),
        loaded({"GPUNODE_CHANNEL_CLUSTERS__C0INC": "prod-us"}),
        *(
            loaded({"GPUNODE_KUBE__HELM_VALUES_KEYS__VLLM__MEMORY-LIMIT": keys})
            for keys in ("a,,b", "main=a, b", "main=, x=b", "main=a b")
        ),
        loaded({"GPUNODE_LINKS__DASHBOARD_URL": "grafana/d/x?var-node={node}"}),
        loaded({"GPUNODE_LINKS__DASHBOARD_URL": "https://g/d/x?n={host}&c={zone}"}),
        loaded({}, tmp / "absent.yaml"),
        loaded({}, tmp / "broken.yaml"),
        loaded({}, tmp / "list.yaml"),
    ]


def _invalid_thresholds(tmp: Path) -> list[GpunodeError]:
    """The thresholds file (``read_thresholds``, as serve and the terminal read it): absent,
    not a mapping, and keys pydantic refuses (a ratio above 1, a number that is none, an
    unknown key)."""
    from bot.config.thresholds import read_thresholds

    def read(text: str | None) -> GpunodeError:
        path = tmp / f"thresholds-{len(text or '')}.yaml"
        if text is not None:
            path.write_text(text, encoding="utf-8")
        return _raised(lambda: read_thresholds(Settings(thresholds_file=str(path))))

    return [
        read(None),
        read("- 0.5\n"),
        read("container_near_limit_ratio: 1.5\nmin_consumer_bytes: lots\nslab_share: 0.2\n"),
    ]


#: a policy file with a problem of every kind its keys can have: ids that are not Slack ids
#: (a user, a user group, a channel), a quorum that is no number or too large, a key no
#: policy has, a role's cluster that is no cluster name
BAD_POLICY = """\
roles:
  sre: {allows: [1], can_approve: [1], clusters: [Prod-EU]}
bindings:
  sre: {users: [alice], usergroups: [sre-team]}
channels: [general]
approvals:
  1: {quorum: many}
  2: {quorum: 11}
owner: alice
"""


def _invalid_policies(tmp: Path) -> list[GpunodeError]:
    """The policy file (``read_policy``, with its lines): absent, not YAML, no mapping, every
    problem of ``BAD_POLICY``, a binding of a role it does not define (with roles, and with
    none), a quorum no role may approve, and an impersonated user or group name that is
    blank, holds a control character or is a Kubernetes system identity."""
    from bot.config.policy import read_policy

    files = {
        "policy-absent.yaml": None,
        "policy-broken.yaml": "roles: [\n",
        "policy-list.yaml": "- sre\n",
        "bad.yaml": BAD_POLICY,
        "unbound.yaml": "roles: {sre: {allows: [2]}}\nbindings: {oncall: {users: [U0ALICE1]}}\n",
        "no-roles.yaml": "bindings: {oncall: {users: [U0ALICE1]}}\n",
        "quorum.yaml": "roles: {sre: {allows: [1]}}\n",
        **{
            f"identity-{n}.yaml": f"impersonation:\n  users:\n    U0ALICE1: {identity}\n"
            for n, identity in enumerate(
                (
                    '{user: " alice"}',
                    '{user: "alice\\x07"}',
                    "{user: system:admin}",
                    '{user: alice, groups: [""]}',
                    '{user: alice, groups: ["o\\tps"]}',
                    "{user: alice, groups: [system:masters]}",
                )
            )
        },
    }
    for name, text in files.items():
        if text is not None:
            (tmp / name).write_text(text)
    return [_raised(partial(read_policy, tmp / name)) for name in files]


def _refusal_to_start() -> GpunodeError:
    """``serve``'s refusal beside live replicas that share its store without a Lease (the
    replicas row as ``gpunode doctor`` shows it)."""
    shared = Row("replicas", "FAIL", "replicas_shared", {"replicas": ["gpunode-a", "gpunode-b"]})
    refusal = doctor.refusal_to_start([Row("replicas", "ok", "one_replica"), shared])
    assert refusal is not None
    return refusal


async def _incident_errors(path: Path) -> list[GpunodeError]:
    """The incident a command names: none named, unknown, none in the thread, resolved
    already; a kit with no evidence stored, and one already shared for that evidence."""
    from bot.store.storing import Store

    out: list[GpunodeError] = []

    async def caught(call: Coroutine[Any, Any, object]) -> None:
        with pytest.raises(GpunodeError) as err:
            await call
        out.append(err.value)

    class _Files:
        async def kit(self, *args: object, **kwargs: object) -> list[str]:
            return ["README.md"]

    bundle, view = load_fixture("seed")
    diagnosis = analyze(bundle, view, now=bundle.collected_at)
    async with await Store.open(str(path)) as store:
        ops = IncidentOps(store, clock=lambda: AT, clusters=ClusterRegistry.single(object()))  # type: ignore[arg-type]
        bare, _ = await store.open_or_join_incident(
            "gpu-node-01", "C1", opened_by="U1", at=AT, locale="en"
        )
        await caught(ops.resolve_id(None, channel="C1", thread_ts=None))
        await caught(ops.resolve_id("INC-0099", channel="C1", thread_ts=None))
        await caught(ops.resolve_id(None, channel="C1", thread_ts="1700000000.000100"))
        await ops.resolve(bare.id, by="U1", note="")
        await caught(ops.resolve(bare.id, by="U1", note=""))
        await caught(kit_from_incident(store, bare))
        await caught(prevent_incident(store, _Files(), "INC-0099", user="U1", now=AT))  # type: ignore[arg-type]
        seen, _ = await store.open_or_join_incident(
            "gpu-node-02", "C1", opened_by="U1", at=AT, locale="en"
        )
        await store.save_snapshot(seen.id, at=AT, bundle=bundle, view=view, diagnosis=diagnosis)
        await prevent_incident(store, _Files(), seen.id, user="U1", now=AT)  # type: ignore[arg-type]
        await caught(prevent_incident(store, _Files(), seen.id, user="U1", now=AT))  # type: ignore[arg-type]
    return out


def terminal_errors(tmp: Path) -> list[GpunodeError]:
    """One of every keyed error above, made by the code that raises it."""
    return [
        *_input_files(tmp),
        _server("10.0.0.1:6443"),
        _server("https://10.0.0.1:port"),
        _raised(partial(require_existing, str(tmp / "no-such.db"))),
        *_outputs(tmp),
        *_commands(tmp),
        _refusal_to_start(),
        *_settings_errors(),
        *_invalid_settings(tmp),
        *_invalid_policies(tmp),
        *_invalid_thresholds(tmp),
        *asyncio.run(_incident_errors(tmp / "incidents.db")),
    ]


#: keyed errors the tests above do not make, each with where its English is checked
NOT_DRIVEN = {
    # needs BotServices (the details modal): tests/services cover load_details
    "incident_no_evidence": "the details modal before any diagnosis",
    # needs two diagnoses racing for one thread's root past the claim's deadline
    "thread_being_opened": "two diagnoses racing for one incident thread",
    # needs a PostgreSQL store (SQLite has no roles): `migrate --app-role` with a name that is
    # not a plain role name; bot.store.roles.grant_app_role raises the English text
    "app_role_name": "migrate --app-role NAME against PostgreSQL",
    # needs Slack refusing serve's app-level token over Socket Mode: the real serve against
    # the Slack stand-in, tests/e2e/test_socket_mode.py, checks its English and Chinese
    "app_token_refused": "serve in Socket Mode with an app-level token Slack refuses",
    # needs serve to reach its listener (both stand-ins) on a port something else holds:
    # the real serve, tests/e2e/test_serve_ports.py, checks its English and Chinese
    "listen_refused": "serve on a port another process holds",
}
