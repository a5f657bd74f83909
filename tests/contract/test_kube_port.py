"""One contract for the Kubernetes port, run over the test fake and over the real gateway.

The use-case tests (tests/services) run over ``FakeKube``; these cases keep it honest: each
case below runs against the real ``Gateway`` talking to the Kubernetes stand-in (seed
scenario, the bot's own token) and against a ``FakeKube`` built from what that gateway read
(the node's cluster view, the scenario's PodDisruptionBudgets). Every case states what the
port must answer, and both ports must answer it; then the two answers must be equal, field
by field (``Change`` records included), except the resourceVersion and generation values a
real API server assigns.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from bot.config import KubeSettings
from bot.core.model.changes import Change, EvictionOutcome
from bot.errors import GpunodeError, InvalidObjectError, NotFoundError
from bot.kube.gateway import Gateway
from bot.services.ports import KubePort
from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim.access import BOT_TOKEN
from tests.services.fakes import Budget, FakeKube, load_scenario

NODE = "gpu-node-01"
PREPROCESS = ("Deployment", "data-prep", "preprocess")
Case = Callable[[KubePort], Awaitable[object]]


async def _both(sim: KubeSim) -> tuple[Gateway, FakeKube]:
    settings = KubeSettings(
        mode="server", server=sim.url, token=BOT_TOKEN, verify_tls=False, namespace="gpunode"
    )
    gateway = Gateway.from_settings(settings)
    view = await gateway.get_cluster_view(NODE)
    others = sorted(n.node.name for n in await gateway.gpu_node_loads() if n.node.name != NODE)
    budgets = tuple(
        Budget(
            namespace=p["metadata"]["namespace"],
            name=p["metadata"]["name"],
            selector=dict(p["spec"]["selector"].get("matchLabels") or {}),
            min_available=p["spec"].get("minAvailable"),
            max_unavailable=p["spec"].get("maxUnavailable"),
        )
        for p in sim.list("poddisruptionbudgets")
    )
    bundle, _ = load_scenario("seed")
    return gateway, FakeKube(bundle, view, extra_nodes=tuple(others), budgets=budgets)


@pytest.fixture
async def ports(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> AsyncIterator[dict[str, KubePort]]:
    sim = await make_kubesim("seed")
    gateway, fake = await _both(sim)
    yield {"gateway": gateway, "fake": fake}
    # off the loop: the stand-in answers on this loop, so a call still in flight on one of
    # the gateway's threads could not end while its close waits for it here
    await asyncio.to_thread(gateway.close)


def _normal(value: Any) -> Any:
    """JSON of an answer with the server-assigned versions blanked (the fake has its own)."""
    if isinstance(value, Change | EvictionOutcome):
        return _normal(value.model_dump(mode="json"))
    if isinstance(value, dict):
        return {
            k: "<version>" if k in ("resourceVersion", "generation") else _normal(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_normal(v) for v in value]
    return value


async def _error(call: Awaitable[object]) -> str:
    """The error's class and code: what a use-case branches on."""
    try:
        await call
    except GpunodeError as err:
        return f"{type(err).__name__}:{err.code}"
    raise AssertionError("expected an error")


def _container(obj: dict[str, object], name: str) -> dict[str, Any]:
    spec: Any = obj["spec"]
    return next(c for c in spec["template"]["spec"]["containers"] if c["name"] == name)


async def _template_facts(kube: KubePort, container: str) -> dict[str, Any]:
    obj = await kube.read_controller(*PREPROCESS)
    spec: Any = obj["spec"]
    c = _container(obj, container)
    env = {e["name"]: e.get("value") for e in c.get("env") or []}
    return {
        "priorityClassName": spec["template"]["spec"].get("priorityClassName"),
        "resources": c.get("resources") or {},
        "OMP_NUM_THREADS": env.get("OMP_NUM_THREADS"),
    }


# -- the cases: each asserts what any KubePort must answer and returns what it saw ---------


async def view_of_the_node(kube: KubePort) -> object:
    view = await kube.get_cluster_view(NODE)
    keys = sorted(p.key for p in view.pods)
    assert view.node.name == NODE and not view.node.unschedulable
    assert {"research/jupyter-alice", "research/jupyter-bob"} <= set(keys)
    return {"node": view.node.name, "pods": keys}


async def view_of_an_unknown_node(kube: KubePort) -> object:
    error = await _error(kube.get_cluster_view("gpu-node-99"))
    assert error == "NotFoundError:not_found"
    return error


async def node_known_and_unknown(kube: KubePort) -> object:
    node = await kube.get_node(NODE)
    assert node.name == NODE and node.ready and not node.unschedulable
    error = await _error(kube.get_node("gpu-node-99"))
    assert error == "NotFoundError:not_found"
    return [node.name, node.allocatable, error]


async def gpu_nodes(kube: KubePort) -> object:
    names = sorted(n.name for n in await kube.list_gpu_nodes())
    loads = sorted(n.node.name for n in await kube.gpu_node_loads())
    assert names == loads == ["gpu-node-01", "gpu-node-02"]
    return names


async def cordon_dry_run(kube: KubePort) -> object:
    change = await kube.cordon(NODE, dry_run=True)
    assert change.dry_run and not change.noop
    assert change.before == {"unschedulable": False} and change.after["unschedulable"] is True
    assert not (await kube.get_cluster_view(NODE)).node.unschedulable
    return _normal(change)


async def cordon_then_uncordon(kube: KubePort) -> object:
    first = await kube.cordon(NODE, dry_run=False)
    assert (await kube.get_cluster_view(NODE)).node.unschedulable
    again = await kube.cordon(NODE, dry_run=False)
    assert again.noop and again.after == {}
    back = await kube.uncordon(NODE, dry_run=False)
    assert back.before == {"unschedulable": True}
    assert not (await kube.get_cluster_view(NODE)).node.unschedulable
    return _normal([first, again, back])


async def uncordon_a_schedulable_node(kube: KubePort) -> object:
    change = await kube.uncordon(NODE, dry_run=False)
    assert change.noop
    return _normal(change)


async def cordon_an_unknown_node(kube: KubePort) -> object:
    error = await _error(kube.cordon("gpu-node-99", dry_run=True))
    assert error == "NotFoundError:not_found"
    return error


SCALE_DOWN = {
    "cluster-autoscaler.kubernetes.io/scale-down-disabled": "true",
    "karpenter.sh/do-not-disrupt": "true",
}


async def node_annotated_against_scale_down_and_back(kube: KubePort) -> object:
    dry = await kube.annotate_node(NODE, dict(SCALE_DOWN), dry_run=True)
    assert dry.dry_run and not dry.noop
    assert (await kube.get_cluster_view(NODE)).node.annotations == {}
    first = await kube.annotate_node(NODE, dict(SCALE_DOWN), dry_run=False)
    assert first.before == {"annotations": dict.fromkeys(sorted(SCALE_DOWN))}
    assert (await kube.get_cluster_view(NODE)).node.annotations == SCALE_DOWN
    again = await kube.annotate_node(NODE, dict(SCALE_DOWN), dry_run=False)
    assert again.noop
    removed: dict[str, str | None] = dict.fromkeys(SCALE_DOWN)
    back = await kube.annotate_node(NODE, removed, dry_run=False)
    assert back.before == {"annotations": SCALE_DOWN}
    assert (await kube.get_cluster_view(NODE)).node.annotations == {}
    return _normal([dry, first, again, back])


async def evict_dry_run(kube: KubePort) -> object:
    outcome = await kube.evict("research", "jupyter-bob", dry_run=True)
    assert outcome.status == "dry_run"
    pods = {p.key for p in (await kube.get_cluster_view(NODE)).pods}
    assert "research/jupyter-bob" in pods
    return _normal(outcome)


async def evict_for_real(kube: KubePort) -> object:
    outcome = await kube.evict("research", "jupyter-bob", dry_run=False)
    assert outcome.status == "evicted"
    pods = {p.key for p in (await kube.get_cluster_view(NODE)).pods}
    assert "research/jupyter-bob" not in pods
    gone = await kube.evict("research", "jupyter-bob", dry_run=False)
    assert gone.status == "not_found"
    return _normal([outcome, gone])


async def evict_blocked_by_a_budget(kube: KubePort) -> object:
    outcomes = [
        await kube.evict("research", "jupyter-alice", dry_run=dry_run) for dry_run in (True, False)
    ]
    for outcome in outcomes:
        assert outcome.status == "blocked" and outcome.pdb_name == "jupyter-alice"
        assert (outcome.pdb_needs, outcome.pdb_has) == (1, 1)
    pods = {p.key for p in (await kube.get_cluster_view(NODE)).pods}
    assert "research/jupyter-alice" in pods
    return _normal(outcomes)


async def evict_a_missing_pod(kube: KubePort) -> object:
    outcome = await kube.evict("research", "no-such-pod", dry_run=False)
    assert outcome.status == "not_found"
    return _normal(outcome)


async def priority_class_created_once(kube: KubePort) -> object:
    args: dict[str, Any] = {"description": "gpunode: contract", "preemption_policy": "Never"}
    value = 1_000_000  # tier 2's: the admission policy admits no other value from the bot
    dry = await kube.ensure_priority_class("gpunode-contract", value, dry_run=True, **args)
    dry_again = await kube.ensure_priority_class("gpunode-contract", value, dry_run=True, **args)
    made = await kube.ensure_priority_class("gpunode-contract", value, dry_run=False, **args)
    again = await kube.ensure_priority_class("gpunode-contract", value, dry_run=False, **args)
    assert not dry.noop and not dry_again.noop and not made.noop and again.noop
    assert made.before == {"exists": False} and again.before == {"exists": True, "value": value}
    return _normal([dry, dry_again, made, again])


async def priority_class_with_another_value(kube: KubePort) -> object:
    error = await _error(
        kube.ensure_priority_class(
            "system-node-critical", 5, description="x", dry_run=True, preemption_policy="Never"
        )
    )
    assert error == "ConflictError:conflict"
    return error


async def priority_class_name_set_and_removed(kube: KubePort) -> object:
    dry = await kube.set_priority_class_name(*PREPROCESS, "gpunode-critical", dry_run=True)
    assert (await _template_facts(kube, "pandas"))["priorityClassName"] is None
    made = await kube.set_priority_class_name(*PREPROCESS, "gpunode-critical", dry_run=False)
    assert (await _template_facts(kube, "pandas"))["priorityClassName"] == "gpunode-critical"
    again = await kube.set_priority_class_name(*PREPROCESS, "gpunode-critical", dry_run=False)
    removed = await kube.set_priority_class_name(*PREPROCESS, None, dry_run=False)
    assert again.noop and not removed.noop
    assert (await _template_facts(kube, "pandas"))["priorityClassName"] is None
    return _normal([dry, made, again, removed])


async def priority_class_name_on_a_kind_gpunode_does_not_patch(kube: KubePort) -> object:
    error = await _error(
        kube.set_priority_class_name("ReplicaSet", "data-prep", "x", "p", dry_run=True)
    )
    assert error == f"{InvalidObjectError.__name__}:invalid"
    return error


async def priority_class_name_on_a_missing_controller(kube: KubePort) -> object:
    error = await _error(
        kube.set_priority_class_name("Deployment", "data-prep", "nope", "p", dry_run=True)
    )
    assert error == f"{NotFoundError.__name__}:not_found"
    return error


async def resources_patched(kube: KubePort) -> object:
    before = await _template_facts(kube, "pandas")
    values: dict[str, Any] = {
        "requests": {"memory": "40Gi"},
        "limits": {"memory": "48Gi"},
        "env": {"OMP_NUM_THREADS": "4"},
    }
    dry = await kube.patch_container_resources(*PREPROCESS, "pandas", dry_run=True, **values)
    assert await _template_facts(kube, "pandas") == before
    made = await kube.patch_container_resources(*PREPROCESS, "pandas", dry_run=False, **values)
    after = await _template_facts(kube, "pandas")
    assert after["resources"]["limits"]["memory"] == "48Gi"
    assert after["resources"]["requests"]["memory"] == "40Gi"
    assert after["OMP_NUM_THREADS"] == "4"
    undo: dict[str, Any] = {
        "requests": {"memory": before["resources"]["requests"]["memory"]},
        "limits": {"memory": before["resources"]["limits"]["memory"]},
        "env": {"OMP_NUM_THREADS": None},
    }
    back = await kube.patch_container_resources(*PREPROCESS, "pandas", dry_run=False, **undo)
    restored = await _template_facts(kube, "pandas")
    assert restored["resources"] == before["resources"] and restored["OMP_NUM_THREADS"] is None
    return _normal([dry, made, back])


async def resources_of_a_missing_container(kube: KubePort) -> object:
    error = await _error(
        kube.patch_container_resources(
            *PREPROCESS, "nope", requests={}, limits={"memory": "1Gi"}, env={}, dry_run=True
        )
    )
    assert error == "NotFoundError:not_found"
    return error


def _feature_cache(view: Any) -> Any:
    return next(p for p in view.pods if p.name.startswith("feature-cache-"))


async def pod_resized_in_place(kube: KubePort) -> object:
    pod = _feature_cache(await kube.get_cluster_view(NODE))
    assert pod.containers[0].limits["memory"] == "12Gi"
    calls = [
        kube.resize_pod(
            "serving", pod.name, "redis", requests={}, limits={"memory": "16Gi"}, dry_run=dry_run
        )
        for dry_run in (True, False)
    ]
    dry = await calls[0]
    assert _feature_cache(await kube.get_cluster_view(NODE)).containers[0].limits == {
        "memory": "12Gi"
    }
    made = await calls[1]
    after = _feature_cache(await kube.get_cluster_view(NODE))
    assert dry.before == made.before == {"container": "redis", "resources": _resources(pod)}
    assert after.containers[0].limits == {"memory": "16Gi"}
    assert made.after["resources"] == _resources(after)
    missing = await _error(
        kube.resize_pod("serving", pod.name, "nope", requests={}, limits={}, dry_run=True)
    )
    assert missing == "NotFoundError:not_found"
    return _normal([dry, made, missing])


def _resources(pod: Any) -> dict[str, Any]:
    c = pod.containers[0]
    out: dict[str, Any] = {}
    if c.requests:
        out["requests"] = dict(c.requests)
    if c.limits:
        out["limits"] = dict(c.limits)
    return out


async def controller_of_an_unsupported_kind(kube: KubePort) -> object:
    error = await _error(kube.read_controller("PyTorchJob", "ml-train", "llm-ft"))
    assert error == "InvalidObjectError:invalid"
    return error


async def diagnostic_on_an_unknown_node(kube: KubePort) -> object:
    error = await _error(kube.run_diagnostic("gpu-node-99"))
    assert error == "DiagnosticJobError:node_not_found"
    return error


CASES: dict[str, Case] = {
    case.__name__: case
    for case in (
        view_of_the_node,
        view_of_an_unknown_node,
        node_known_and_unknown,
        gpu_nodes,
        cordon_dry_run,
        cordon_then_uncordon,
        uncordon_a_schedulable_node,
        cordon_an_unknown_node,
        node_annotated_against_scale_down_and_back,
        evict_dry_run,
        evict_for_real,
        evict_blocked_by_a_budget,
        evict_a_missing_pod,
        priority_class_created_once,
        priority_class_with_another_value,
        priority_class_name_set_and_removed,
        priority_class_name_on_a_kind_gpunode_does_not_patch,
        priority_class_name_on_a_missing_controller,
        resources_patched,
        resources_of_a_missing_container,
        pod_resized_in_place,
        controller_of_an_unsupported_kind,
        diagnostic_on_an_unknown_node,
    )
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("impl", ["fake", "gateway"])
async def test_each_kube_port_keeps_the_contract(
    ports: dict[str, KubePort], impl: str, case: str
) -> None:
    await CASES[case](ports[impl])


@pytest.mark.parametrize("case", sorted(CASES))
async def test_the_fake_answers_exactly_as_the_gateway(
    ports: dict[str, KubePort], case: str
) -> None:
    real = await CASES[case](ports["gateway"])
    fake = await CASES[case](ports["fake"])
    assert fake == real


def test_the_fake_is_checked_against_the_port_it_stands_in_for() -> None:
    """mypy checks this assignment (tests/ are type-checked): the fake has every method of
    ``KubePort`` with compatible types. At run time: no method of the port is missing."""
    bundle, view = load_scenario("seed")
    fake: KubePort = FakeKube(bundle, view)
    missing = [m for m in _port_methods(KubePort) if not callable(getattr(fake, m, None))]
    assert missing == []


def _port_methods(port: type) -> list[str]:
    return sorted(m for m in vars(port) if not m.startswith("_") and callable(vars(port)[m]))
