"""DaemonSet collector mode end to end: the bot (the official kubernetes client, the bot's
token, deploy/overlays/daemonset's RBAC: no `jobs create`) finds the node's agent through the
stand-in's API, verifies it over TLS, sends its agent-audience token, and gets the evidence
the agent read from the node's fake files over real HTTPS. A pod the DaemonSet does not own,
or one without the agents' certificate, never sees the token."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.errors import DiagnosticJobError
from bot.kube.gateway import Gateway
from bot.render import checkup
from bot.render.checkup import row_words
from bot.services import doctor
from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim.access import BOT_TOKEN
from tests.conftest import kube_call
from tests.kube.agents import (
    AUDIENCE,
    OVERLAY,
    RunningAgent,
    Tls,
    agent_daemonset,
    install_daemonset,
    make_tls,
    place_agent_pod,
    start_agent,
)
from tests.kube.conftest import settings_for
from tests.services.test_doctor import run_doctor, store_env  # noqa: F401 (a fixture)

NODE = "gpu-node-01"
Make = Callable[..., Awaitable[KubeSim]]


class Setup:
    def __init__(self, sim: KubeSim, tls: Tls, folder: Path) -> None:
        self.sim, self.tls, self.folder = sim, tls, folder
        self.agents: list[RunningAgent] = []
        self.gateways: list[Gateway] = []
        self.seen: list[list[str]] = []

    def agent(self, address: str, *, tls: Tls | None = None) -> RunningAgent:
        """An agent of NODE on ``address`` that records each Authorization it receives."""
        agent = start_agent(self.sim, NODE, tls or self.tls, self.folder / address, address=address)
        seen: list[str] = []
        check = agent.server.agent.check

        def recording(authorization: str) -> str:
            seen.append(authorization)
            return check(authorization)

        agent.server.agent.check = recording  # type: ignore[method-assign]
        self.agents.append(agent)
        self.seen.append(seen)
        return agent

    def gateway(self, agent: RunningAgent, **overrides: Any) -> Gateway:
        token_file = self.folder / "bot-agent-token"
        token_file.write_text(self.sim.authn.issue("gpunode", "gpunode", (AUDIENCE,)))
        settings = settings_for(
            self.sim.url,
            collector_mode="daemonset",
            agent_port=agent.port,
            agent_ca_file=str(self.tls.ca),
            agent_token_file=str(token_file),
            agent_timeout_s=60,
            **overrides,
        )
        gw = Gateway.from_settings(settings)
        self.gateways.append(gw)
        return gw


@pytest.fixture
async def setup(make_kubesim: Make, tmp_path: Path) -> AsyncIterator[Setup]:
    sim = await make_kubesim("seed", access_dir=OVERLAY)
    s = Setup(sim, make_tls(tmp_path / "tls"), tmp_path)
    yield s
    for gw in s.gateways:
        gw.close()
    for agent in s.agents:
        await asyncio.to_thread(agent.stop)


def _job_requests(sim: KubeSim) -> list[tuple[str, str, str]]:
    return [r for r in sim.requests if "/jobs" in r[1] and r[0] != "GET"]


async def test_a_diagnosis_in_daemonset_mode_gets_the_evidence_from_the_nodes_agent(
    setup: Setup,
) -> None:
    agent = setup.agent("127.0.0.2")
    place_agent_pod(setup.sim, NODE, "127.0.0.2")
    gw = setup.gateway(agent)

    bundle = await gw.run_diagnostic(NODE)

    assert bundle.node_name == NODE and bundle.hostname == NODE
    assert bundle.gpus, "NVML read through the fake driver, as the Job's collector reads it"
    assert bundle.processes and bundle.containers
    assert _job_requests(setup.sim) == []  # no Job was created, nor deleted
    assert len(setup.seen[0]) == 1 and setup.seen[0][0].startswith("Bearer ")


async def test_the_bots_token_in_daemonset_mode_may_not_create_a_job(setup: Setup) -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x"}, "spec": {}}
    status, body = await kube_call(
        setup.sim.url, "POST", "/apis/batch/v1/namespaces/gpunode/jobs", token=BOT_TOKEN, body=job
    )

    assert status == 403, body


async def test_a_pod_the_daemonset_does_not_own_never_gets_the_token(setup: Setup) -> None:
    impostor = setup.agent("127.0.0.3")
    # same labels, same template, owned by another DaemonSet (of the same name elsewhere)
    copy = agent_daemonset()
    copy["metadata"]["name"] = "gpunode-agent-copy"
    place_agent_pod(setup.sim, NODE, "127.0.0.3", owner=install_daemonset(setup.sim, copy))
    gw = setup.gateway(impostor)

    with pytest.raises(DiagnosticJobError) as err:
        await gw.run_diagnostic(NODE)

    assert err.value.code == "agent_not_found"
    assert setup.seen[0] == []  # the impostor was never asked


async def test_a_pod_whose_owner_reference_names_the_daemonset_with_another_uid_is_not_it(
    setup: Setup,
) -> None:
    impostor = setup.agent("127.0.0.4")
    place_agent_pod(setup.sim, NODE, "127.0.0.9")  # the real DaemonSet and its pod exist
    ds = setup.sim.api.store.get("daemonsets", "gpunode", "gpunode-agent")
    assert ds is not None
    forged = {**ds, "metadata": {**ds["metadata"], "uid": "0f0f0000-0000-4000-8000-000000000000"}}
    # remove the real pod: only the forged one is on the node
    for pod in list(setup.sim.api.store.list("pods")):
        if pod["metadata"]["name"].startswith("gpunode-agent"):
            setup.sim.api.store.remove("pods", "gpunode", pod["metadata"]["name"])
    place_agent_pod(setup.sim, NODE, "127.0.0.4", owner=forged)
    gw = setup.gateway(impostor)

    with pytest.raises(DiagnosticJobError) as err:
        await gw.run_diagnostic(NODE)

    assert err.value.code == "agent_not_found"
    assert setup.seen[0] == []


async def test_an_agent_without_the_agents_certificate_never_gets_the_token(
    setup: Setup, tmp_path: Path
) -> None:
    other_ca = make_tls(tmp_path / "other-ca")  # same name, another CA: not the Secret's
    impostor = setup.agent("127.0.0.5", tls=other_ca)
    place_agent_pod(setup.sim, NODE, "127.0.0.5")
    gw = setup.gateway(impostor)

    with pytest.raises(DiagnosticJobError) as err:
        await gw.run_diagnostic(NODE)

    assert err.value.code == "agent_unverified"
    assert "sent it no token" in err.value.message
    assert setup.seen[0] == []


async def test_an_agent_that_answers_another_identity_refuses_the_bot(
    setup: Setup, tmp_path: Path
) -> None:
    agent = start_agent(
        setup.sim,
        NODE,
        setup.tls,
        tmp_path / "strict",
        address="127.0.0.6",
        allow="system:serviceaccount:gpunode:someone-else",
    )
    setup.agents.append(agent)
    place_agent_pod(setup.sim, NODE, "127.0.0.6")
    gw = setup.gateway(agent)

    with pytest.raises(DiagnosticJobError) as err:
        await gw.run_diagnostic(NODE)

    assert err.value.code == "agent_refused"
    assert "403" in err.value.message


async def test_no_agent_on_the_node_is_named_with_what_to_check(setup: Setup) -> None:
    agent = setup.agent("127.0.0.7")
    install_daemonset(setup.sim)
    gw = setup.gateway(agent)

    with pytest.raises(DiagnosticJobError) as err:
        await gw.run_diagnostic(NODE)

    assert err.value.code == "agent_not_found"
    assert f"no pod of the agent DaemonSet gpunode/gpunode-agent runs on {NODE}" in (
        err.value.message
    )


async def test_doctor_in_daemonset_mode_needs_no_job_rights_and_finds_the_agent(
    setup: Setup,
) -> None:
    agent = setup.agent("127.0.0.8")
    for node in ("gpu-node-01", "gpu-node-02"):
        place_agent_pod(setup.sim, node, "127.0.0.8")
    gw = setup.gateway(agent)

    rows = await doctor.check_cluster(gw, "gpunode", collector_mode="daemonset")
    in_job_mode = await doctor.check_cluster(gw, "gpunode", collector_mode="job")

    shown = checkup.table(rows, locale="en")
    print(shown)
    assert not doctor.failed(rows), shown
    assert not [r for r in rows if r.area == "grants" and r.level != "ok"], shown
    assert any(row_words(r, locale="en")[0] == "the collector agent runs" for r in rows)
    missing = {
        row_words(r, locale="en")[0]
        for r in in_job_mode
        if r.level == "FAIL" and r.area == "grants"
    }
    assert "missing: create jobs (batch) in its namespace" in missing
    assert "missing: get runtimeclasses (node.k8s.io) cluster-wide" in missing


async def test_gpunode_diagnose_in_daemonset_mode_reaches_the_job_modes_verdict(
    setup: Setup,
    make_kubesim: Make,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from bot.cli import main

    job_cluster = await make_kubesim("seed")  # deploy/base: the Job mode's rights
    agent = setup.agent("127.0.0.10")
    place_agent_pod(setup.sim, NODE, "127.0.0.10")
    token_file = setup.folder / "cli-agent-token"
    token_file.write_text(setup.sim.authn.issue("gpunode", "gpunode", (AUDIENCE,)))
    monkeypatch.delenv("GPUNODE_CONFIG", raising=False)
    monkeypatch.setenv("GPUNODE_KUBE__NAMESPACE", "gpunode")
    monkeypatch.setenv("GPUNODE_KUBE__VERIFY_TLS", "false")

    def diagnose(url: str) -> dict[str, Any]:
        assert (
            main(
                [
                    "diagnose",
                    NODE,
                    "--server",
                    url,
                    "--token",
                    BOT_TOKEN,
                    "--format",
                    "json",
                    "--quiet",
                ]
            )
            == 0
        )
        return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]

    by_job = await asyncio.to_thread(diagnose, job_cluster.url)
    for name, value in {
        "COLLECTOR_MODE": "daemonset",
        "AGENT_PORT": str(agent.port),
        "AGENT_CA_FILE": str(setup.tls.ca),
        "AGENT_TOKEN_FILE": str(token_file),
    }.items():
        monkeypatch.setenv(f"GPUNODE_KUBE__{name}", value)
    by_agent = await asyncio.to_thread(diagnose, setup.sim.url)

    assert _job_requests(setup.sim) == [] and _job_requests(job_cluster) != []
    assert by_agent["verdict"]["cause"] == by_job["verdict"]["cause"]
    assert {f["code"] for f in by_agent["findings"]} == {f["code"] for f in by_job["findings"]}
    assert len(setup.seen[0]) == 1


@pytest.mark.usefixtures("store_env")
async def test_gpunode_doctor_in_daemonset_mode_exits_zero_on_the_overlay(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = setup.agent("127.0.0.11")
    for node in ("gpu-node-01", "gpu-node-02"):
        place_agent_pod(setup.sim, node, "127.0.0.11")
    monkeypatch.setenv("GPUNODE_KUBE__COLLECTOR_MODE", "daemonset")
    monkeypatch.setenv("GPUNODE_KUBE__AGENT_PORT", str(agent.port))

    code, text = await asyncio.to_thread(run_doctor, setup.sim)

    print(text)
    assert code == 0, text
    assert "(daemonset mode)" in text and "the collector agent runs" in text
    assert "extra:" not in text and "missing:" not in text
