"""End to end: in impersonation mode a tier action runs as the person.

The cluster runs deploy/overlays/impersonation (the bot may read, run its Job and
impersonate the mapped people, nothing else), plus the people's own RBAC: alice may patch
deployments in data-prep, liwei may only read them. The same tier 3 on the same Deployment is
refused by the cluster for liwei (said in the thread as the cluster said it) and carried out
for alice; the stand-in's audit record names alice, with gpunode as the impersonator and the
Slack ids as extras. Two-person approval still applies on top (tier 1 here).
"""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.render.errors import error_text
from bot.render.filters import mrkdwn
from gpunode_sandbox.demo import POLICY, Demo, running_demo
from gpunode_sandbox.kubesim.access import ADMIN_TOKEN
from tests.conftest import kube_call
from tests.e2e.conftest import diagnose, ephemeral_texts, press, submit_modal, text_of, thread
from tests.render.test_catalogs import _texts, english_words

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
ALICE, LIWEI, BOB = "U0ALICE", "U0LIWEI", "U0BOB"
PEOPLE: dict[str, dict[str, Any]] = {
    ALICE: {"user": "alice@example.com", "groups": ["ml-oncall"]},
    LIWEI: {"user": "liwei@example.com", "groups": ["ml-oncall"]},
    BOB: {"user": "bob@example.com", "groups": ["sre"]},
}
BOT = "system:serviceaccount:gpunode:gpunode"


def _cluster_access(tmp: Path) -> Path:
    """deploy/overlays/impersonation with the people listed, as an installer edits it."""
    (tmp / "impersonator.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": "gpunode-impersonator"},
                "rules": [
                    {
                        "apiGroups": [""],
                        "resources": ["users"],
                        "verbs": ["impersonate"],
                        "resourceNames": sorted(p["user"] for p in PEOPLE.values()),
                    },
                    {
                        "apiGroups": [""],
                        "resources": ["groups"],
                        "verbs": ["impersonate"],
                        "resourceNames": ["ml-oncall", "sre"],
                    },
                    {
                        "apiGroups": ["authentication.k8s.io"],
                        "resources": [
                            "userextras/gpunode.io/slack-user",
                            "userextras/gpunode.io/approved-by",
                            "userextras/gpunode.io/action-id",
                        ],
                        "verbs": ["impersonate"],
                    },
                ],
            }
        )
    )
    overlay = ROOT / "deploy" / "overlays" / "impersonation"
    (tmp / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [str(overlay)],
                "patches": [{"path": "impersonator.yaml"}],
            }
        )
    )
    return tmp


def _policy(tmp: Path) -> Path:
    policy = yaml.safe_load(POLICY.read_text())
    policy["impersonation"] = {"enabled": True, "users": PEOPLE}
    path = tmp / "policy.yaml"
    path.write_text(yaml.safe_dump(policy))
    return path


def _binding(name: str, namespace: str, role: str, kind: str, subject: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding" if namespace else "ClusterRoleBinding",
        "metadata": {"name": name, **({"namespace": namespace} if namespace else {})},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": subject}],
    }


async def _grant(demo: Demo, binding: dict[str, Any]) -> None:
    ns = binding["metadata"].get("namespace")
    path = (
        f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings"
        if ns
        else "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"
    )
    status, body = await kube_call(demo.kube.url, "POST", path, token=ADMIN_TOKEN, body=binding)
    assert status == 201, body


async def _revoke(demo: Demo, namespace: str, name: str) -> None:
    """An admin deletes the RoleBinding ``namespace/name`` (the person loses that right)."""
    path = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings/{name}"
    status, body = await kube_call(demo.kube.url, "DELETE", path, token=ADMIN_TOKEN)
    assert status == 200, body


@pytest.fixture
async def demo(tmp_path: Path) -> AsyncIterator[Demo]:
    access = tmp_path / "access"
    access.mkdir()
    async with running_demo(
        "seed", policy_file=_policy(tmp_path), access_dir=_cluster_access(access)
    ) as d:
        reader = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "workload-reader"},
            "rules": [
                {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]},
                {"apiGroups": [""], "resources": ["pods", "nodes"], "verbs": ["get", "list"]},
            ],
        }
        status, body = await kube_call(
            d.kube.url,
            "POST",
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            token=ADMIN_TOKEN,
            body=reader,
        )
        assert status == 201, body
        # the on-call group reads workloads everywhere; only alice may change data-prep's
        await _grant(d, _binding("oncall-read", "", "workload-reader", "Group", "ml-oncall"))
        await _grant(
            d,
            _binding(
                "alice-acts", "data-prep", "gpunode-tier-actions", "User", PEOPLE[ALICE]["user"]
            ),
        )
        yield d


TIER3 = {
    "memory_limit": "32Gi",
    "memory_request": "28Gi",
    "omp_num_threads": "4",
    "accept_oom": True,
}


async def _request_tier3(demo: Demo, root_ts: str, user: str) -> None:
    await press(demo, root_ts, user, "gpunode_tier3")
    view, errors = await submit_modal(demo, user, {"reason": "memory incident", **TIER3})
    assert errors == {}, errors
    assert "Deployment/data-prep/preprocess" in json.dumps(view)


def _said(demo: Demo, root_ts: str, user: str) -> str:
    return "\n".join([*ephemeral_texts(demo.slack, user), *map(text_of, thread(demo, root_ts))])


async def test_a_tier3_apply_is_refused_by_the_cluster_for_liwei_and_carried_out_for_alice(
    demo: Demo,
) -> None:
    root_ts = await diagnose(demo)
    before = copy.deepcopy(demo.kube.get("deployments", "data-prep", "preprocess"))

    await _request_tier3(demo, root_ts, LIWEI)

    said = _said(demo, root_ts, LIWEI)
    assert (
        "the cluster refused: liwei@example.com may not patch deployments in data-prep" in said
    ), said
    assert demo.kube.get("deployments", "data-prep", "preprocess") == before

    await _request_tier3(demo, root_ts, ALICE)
    await press(demo, root_ts, ALICE, "gpunode_apply")

    after = demo.kube.get("deployments", "data-prep", "preprocess")
    assert after is not None
    pandas = after["spec"]["template"]["spec"]["containers"][0]
    assert pandas["resources"]["limits"]["memory"] == "32Gi"
    writes = [
        (sender.username, acting)
        for method, path, sender, acting in demo.kube.authorizer.impersonated
        if method == "PATCH" and path.endswith("/deployments/preprocess")
    ]
    assert writes, "no impersonated PATCH of the Deployment"
    assert {sender for sender, _ in writes} == {BOT}
    assert {a.username for _, a in writes} == {"liwei@example.com", "alice@example.com"}
    alice = [a for _, a in writes if a.username == "alice@example.com"]
    assert all(("gpunode.io/slack-user", (ALICE,)) in a.extra for a in alice)
    assert all("ml-oncall" in a.groups and "system:authenticated" in a.groups for a in alice)
    rows = list(await demo.runtime.store.audit_since(None))
    executed = [r for r in rows if r.tier == 3 and r.decision == "executed"]
    assert len(executed) == 1
    changes = executed[0].changes
    assert isinstance(changes, dict) and changes["acting_as"]["user"] == "alice@example.com"


async def test_an_approved_tier1_runs_as_the_requester_with_the_approver_in_the_audit(
    demo: Demo,
) -> None:
    await _grant(
        demo, _binding("alice-cordons", "", "gpunode-tier-actions", "User", "alice@example.com")
    )
    root_ts = await diagnose(demo)
    await press(demo, root_ts, ALICE, "gpunode_tier1")
    _, errors = await submit_modal(demo, ALICE, {"reason": "memory incident"})
    assert errors == {}, errors
    await press(demo, root_ts, ALICE, "gpunode_apply")
    assert (demo.kube.get("nodes", None, "gpu-node-01") or {})["spec"].get(
        "unschedulable"
    ) is not True

    await press(demo, root_ts, BOB, "gpunode_approve")

    node = demo.kube.get("nodes", None, "gpu-node-01")
    assert node is not None and node["spec"].get("unschedulable") is True
    cordons = [
        acting
        for method, path, _, acting in demo.kube.authorizer.impersonated
        if method == "PATCH" and path == "/api/v1/nodes/gpu-node-01"
    ]
    real = cordons[-1]
    assert real.username == "alice@example.com"
    assert ("gpunode.io/approved-by", (BOB,)) in real.extra
    rows = list(await demo.runtime.store.audit_since(None))
    executed = [r for r in rows if r.tier == 1 and r.decision == "executed"]
    assert executed and isinstance(executed[-1].changes, dict)
    acting = executed[-1].changes["acting_as"]
    assert acting["user"] == "alice@example.com"
    assert ["gpunode.io/approved-by", [BOB]] in acting["extra"]


async def test_an_apply_the_cluster_no_longer_allows_fails_with_the_clusters_refusal(
    demo: Demo,
) -> None:
    grant = _binding("liwei-acts", "data-prep", "gpunode-tier-actions", "User", "liwei@example.com")
    await _grant(demo, grant)
    root_ts = await diagnose(demo)
    await _request_tier3(demo, root_ts, LIWEI)  # the dry run passes: liwei may patch
    before = copy.deepcopy(demo.kube.get("deployments", "data-prep", "preprocess"))
    await _revoke(demo, "data-prep", "liwei-acts")

    await press(demo, root_ts, LIWEI, "gpunode_apply")

    said = _said(demo, root_ts, LIWEI)
    assert "the cluster refused: liwei@example.com may not patch deployments in data-prep" in said
    assert demo.kube.get("deployments", "data-prep", "preprocess") == before
    rows = list(await demo.runtime.store.audit_since(None))
    assert [r.decision for r in rows if r.tier == 3 and r.action == "tier3.execute"][-1] == "failed"


async def test_in_a_chinese_thread_the_clusters_refusal_of_an_apply_reads_in_chinese(
    demo: Demo,
) -> None:
    """liwei, who reads Chinese, opens the thread and asks for tier 3; the cluster takes the
    right away before the apply: the action's failed step says who may not do what in
    Chinese, with no English sentence, as the cluster refused it."""
    grant = _binding("liwei-acts", "data-prep", "gpunode-tier-actions", "User", "liwei@example.com")
    await _grant(demo, grant)
    root_ts = await diagnose(demo, user=LIWEI)
    await _request_tier3(demo, root_ts, LIWEI)
    await _revoke(demo, "data-prep", "liwei-acts")

    await press(demo, root_ts, LIWEI, "gpunode_apply")

    refused = {
        "who": "liwei@example.com",
        "act": "",
        "verb": "patch",
        "resource": "deployments",
        "namespace": "data-prep",
    }
    words = error_text("cluster_refused", refused, "", "zh-CN")
    failed = [
        line
        for m in thread(demo, root_ts)
        for text in _texts(m.get("blocks") or [])
        for line in text.splitlines()
        if line.startswith(":x:")
    ]
    assert failed, [text_of(m) for m in thread(demo, root_ts)]
    assert any(mrkdwn(words) in line for line in failed), failed
    assert [english_words(line) for line in failed] == [[] for _ in failed], failed
    assert "the cluster refused" not in _said(demo, root_ts, LIWEI)
