"""`gpunode doctor` on the demo cluster (the stand-in with deploy/base's RBAC and admission
policies, the bot's own token) is clean; with one grant removed it names the grant and exits
non-zero. The stand-in answers the SelfSubjectRulesReview from its own RBAC model."""

from __future__ import annotations

import argparse
import asyncio
import io
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from bot.cli import doctor as doctor_cli
from bot.errors import ConfigError
from bot.kube import selfcheck
from bot.render.checkup import row_words
from bot.services import doctor
from bot.store import Store
from bot.store.checkup import check_store
from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim.access import BOT_TOKEN, deploy_base
from tests.conftest import kube_call
from tests.render.test_catalogs import english_words

REPO = Path(__file__).resolve().parents[2]

if TYPE_CHECKING:
    from bot.config import Settings
    from bot.kube.gateway import Gateway


async def _at_start(settings: Settings, gateway: Gateway) -> list[doctor.Row]:
    """``serve``'s checks at start, as it wires them, with a 1 s settle for the replicas."""
    return await doctor.at_start(
        gateway,
        namespace=settings.kube.namespace,
        lease_name=settings.leader.lease_name,
        collector_mode=settings.kube.collector_mode,
        store_rows=lambda: check_store(
            settings, clock=lambda: datetime.now(UTC), starting=True, settle_s=1.0
        ),
        logger=logging.getLogger("test"),
    )


@pytest.fixture
def store_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    folder = tmp_path / "state"
    folder.mkdir(mode=0o700)
    path = str(folder / "gpunode.db")

    async def create() -> None:
        async with await Store.open(path):
            pass

    asyncio.run(create())
    os.chmod(path, 0o600)
    monkeypatch.setenv("GPUNODE_STORE__PATH", path)
    monkeypatch.setenv("GPUNODE_STORE__AUDIT_KEY", "doctor-test-key")
    monkeypatch.setenv("GPUNODE_KUBE__NAMESPACE", "gpunode")
    monkeypatch.delenv("GPUNODE_CONFIG", raising=False)
    return path


def run_doctor(sim: KubeSim) -> tuple[int, str]:
    out = io.StringIO()
    args = argparse.Namespace(
        config=None, kubeconfig=None, context=None, server=sim.url, token=BOT_TOKEN
    )
    return doctor_cli.main(args, out=out), out.getvalue()


async def test_doctor_on_the_demo_cluster_is_clean(
    make_kubesim: Callable[..., Awaitable[KubeSim]], store_env: str
) -> None:
    sim = await make_kubesim("seed")

    code, text = await asyncio.to_thread(run_doctor, sim)

    print(text)
    assert code == 0, text
    assert "FAIL" not in text
    assert "missing:" not in text
    for policy in selfcheck.REQUIRED_POLICIES:
        assert f"policy {policy} installed and bound" in text
    assert "the collector Job is admitted" in text
    assert text.rstrip().endswith("doctor: all required checks pass")


async def test_doctor_names_a_removed_grant_and_exits_non_zero(
    make_kubesim: Callable[..., Awaitable[KubeSim]], store_env: str
) -> None:
    sim = await make_kubesim("seed")
    status, role = await kube_call(
        sim.url, "GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/gpunode"
    )
    assert status == 200
    role["rules"] = [r for r in role["rules"] if r.get("resources") != ["pods/eviction"]]
    status, _ = await kube_call(
        sim.url, "PUT", "/apis/rbac.authorization.k8s.io/v1/clusterroles/gpunode", body=role
    )
    assert status == 200

    code, text = await asyncio.to_thread(run_doctor, sim)

    print(text)
    assert code == 1
    (line,) = [line for line in text.splitlines() if "missing:" in line]
    assert line.split()[0] == "FAIL"
    assert "missing: create pods/eviction (core) cluster-wide" in line
    assert text.rstrip().endswith("doctor: FAILED (fix the FAIL rows)")


async def test_doctor_names_an_extra_grant_without_failing(
    make_kubesim: Callable[..., Awaitable[KubeSim]], store_env: str
) -> None:
    sim = await make_kubesim("seed")
    status, role = await kube_call(
        sim.url, "GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/gpunode"
    )
    assert status == 200
    role["rules"].append({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]})
    await kube_call(
        sim.url, "PUT", "/apis/rbac.authorization.k8s.io/v1/clusterroles/gpunode", body=role
    )

    code, text = await asyncio.to_thread(run_doctor, sim)

    assert code == 0, text
    (line,) = [line for line in text.splitlines() if "extra:" in line]
    assert line.split()[0] == "warn"
    assert "extra: get secrets (core) cluster-wide" in line


def test_the_policies_doctor_requires_are_the_ones_deploy_base_installs() -> None:
    import yaml

    docs = list(yaml.safe_load_all((deploy_base() / "admission-policies.yaml").read_text()))
    installed = {
        d["metadata"]["name"] for d in docs if d and d["kind"] == "ValidatingAdmissionPolicy"
    }
    assert installed == set(selfcheck.REQUIRED_POLICIES)


async def test_the_stand_in_answers_a_rules_review_from_its_rbac(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await make_kubesim("seed")
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectRulesReview",
        "spec": {"namespace": "gpunode"},
    }
    status, answer = await kube_call(
        sim.url,
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        token=BOT_TOKEN,
        body=review,
    )

    assert status == 201
    rules = answer["status"]["resourceRules"]
    assert {"verbs": ["create"], "apiGroups": [""], "resources": ["pods/eviction"]} in rules
    assert {"verbs": ["create", "delete"], "apiGroups": ["batch"], "resources": ["jobs"]} in rules
    assert answer["status"]["incomplete"] is False
    assert any("/version" in r["nonResourceURLs"] for r in answer["status"]["nonResourceRules"])


async def _beat_until(store: Store, replica: str, stop: asyncio.Event) -> None:
    while not stop.is_set():
        await store.beat(replica, at=datetime.now(UTC))
        await asyncio.sleep(0.2)


async def test_serve_refuses_to_start_beside_a_live_replica_without_a_lease(
    make_kubesim: Callable[..., Awaitable[KubeSim]], store_env: str
) -> None:
    from bot.config import load_settings
    from bot.kube.gateway import Gateway
    from tests.kube.conftest import settings_for

    sim = await make_kubesim("seed")
    settings = load_settings(config_file=None)
    gateway = Gateway.from_settings(settings_for(sim.url))
    stop = asyncio.Event()
    async with await Store.open(store_env) as store:
        beating = asyncio.create_task(_beat_until(store, "replica-running", stop))
        try:
            with pytest.raises(
                ConfigError, match="refusing to start: replicas share this store"
            ) as err:
                await _at_start(settings, gateway)
            assert (err.value.key, err.value.params) == (
                "replicas_shared",
                {"replicas": ["replica-running"]},
            )
        finally:
            stop.set()
            await beating
    gateway.close()


async def test_serve_refuses_to_start_in_the_operators_language(
    make_kubesim: Callable[..., Awaitable[KubeSim]], store_env: str
) -> None:
    """The production entry point, beside a live replica on its store and without a Lease:
    ``gpunode serve --lang zh-CN`` says why it will not start in Chinese, naming the replica
    and the setting; without ``--lang`` it says so in English."""
    sim = await make_kubesim("seed")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUNODE_")} | {
        "GPUNODE_SLACK__BOT_TOKEN": "xoxb-abc",
        "GPUNODE_SLACK__SIGNING_SECRET": "serve-refusal-secret",
        "GPUNODE_KUBE__MODE": "server",
        "GPUNODE_KUBE__SERVER": sim.url,
        "GPUNODE_KUBE__TOKEN": BOT_TOKEN,
        "GPUNODE_KUBE__VERIFY_TLS": "false",
        "GPUNODE_KUBE__NAMESPACE": "gpunode",
        "GPUNODE_STORE__PATH": store_env,
        "GPUNODE_STORE__AUDIT_KEY": "doctor-test-key",
        "GPUNODE_HTTP__PORT": "18731",  # never bound: it refuses before listening
    }
    said: dict[str, tuple[int | None, str]] = {}
    stop = asyncio.Event()
    async with await Store.open(store_env) as store:
        beating = asyncio.create_task(_beat_until(store, "replica-running", stop))
        try:
            for lang in ("zh-CN", "en"):
                proc = await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-m",
                    "bot",
                    "serve",
                    *(["--lang", lang] if lang != "en" else []),
                    env=env,
                    cwd=REPO,
                    stdout=asyncio.subprocess.DEVNULL,
                    stderr=asyncio.subprocess.PIPE,
                )
                _, err = await asyncio.wait_for(proc.communicate(), timeout=180)
                said[lang] = proc.returncode, err.decode()
        finally:
            stop.set()
            await beating

    code, zh = said["zh-CN"]
    last = zh.strip().splitlines()[-1]
    assert code == 1 and last.startswith("gpunode: 拒绝启动"), zh
    assert "replica-running" in last and "leader.lease_name" in last
    assert english_words(last) == [], last
    code, en = said["en"]
    assert code == 1 and en.strip().splitlines()[-1] == (
        "gpunode: refusing to start: replicas share this store without a Lease: "
        "replica-running alive: set leader.lease_name (each replica would mark the other's "
        "running actions interrupted)"
    ), en


async def test_a_restarted_single_replica_starts_its_old_beat_does_not_count(
    make_kubesim: Callable[..., Awaitable[KubeSim]], store_env: str
) -> None:
    from bot.config import load_settings
    from bot.kube.gateway import Gateway
    from tests.kube.conftest import settings_for

    sim = await make_kubesim("seed")
    settings = load_settings(config_file=None)
    gateway = Gateway.from_settings(settings_for(sim.url))
    async with await Store.open(store_env) as store:
        await store.beat("replica-before-restart", at=datetime.now(UTC))

    rows = await _at_start(settings, gateway)
    gateway.close()

    assert [row_words(r, locale="en")[0] for r in rows if r.area == "replicas"] == [
        "one replica on this store"
    ]


@pytest.mark.parametrize("lease", [False, True], ids=["no-lease", "lease-configured"])
async def test_the_lease_rights_count_as_needed_only_when_a_lease_is_configured(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
    store_env: str,
    monkeypatch: pytest.MonkeyPatch,
    lease: bool,
) -> None:
    from tests.e2e.replicas import install_lease_rbac

    sim = await make_kubesim("seed")
    await install_lease_rbac(sim.url)
    if lease:
        monkeypatch.setenv("GPUNODE_LEADER__LEASE_NAME", "gpunode-leader")

    code, text = await asyncio.to_thread(run_doctor, sim)

    assert code == 0, text
    assert ("extra: create leases" in text) is not lease
