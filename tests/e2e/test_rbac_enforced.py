"""The bot runs with exactly the rights deploy/base grants it, and no more.

The Kubernetes stand-in installs deploy/base's Roles, ClusterRoles, bindings and admission
policies and authorizes every request by its token (``gpunode_sandbox.kubesim.authz``); the demo's
bot sends its ServiceAccount token. The whole demo story (diagnose, tier 3, tier 1 with
approval, timeline) passes with the shipped roles and is never refused; removing one grant
makes exactly the operation that needs it fail, with the API server's words in the thread.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpunode_sandbox.demo import Demo
from gpunode_sandbox.kubesim.access import BOT_TOKEN
from gpunode_sandbox.story import CHANNEL, run_story
from tests.conftest import kube_call
from tests.e2e.conftest import diagnose, text_of, thread

BOT_USER = "system:serviceaccount:gpunode:gpunode"


async def test_the_whole_story_passes_with_the_shipped_roles_and_is_never_refused(
    demo: Demo,
) -> None:
    log = await run_story(demo.slack, demo.drain)

    assert any("tier 3 applied" in s for s in log.steps)
    # after tier 3 the node is no longer at risk: tier 1 is not offered
    assert any("tier 1 not offered" in s for s in log.steps)
    assert demo.kube.authorizer.denied == []
    assert set(demo.kube.tokens) == {BOT_TOKEN}  # every call the bot made carried its token
    assert demo.kube.get("nodes", None, "gpu-node-01")["spec"].get("unschedulable") is not True  # type: ignore[index]


async def _revoke(demo: Demo, kind: str, name: str, group: str, resource: str, verb: str) -> None:
    """As an admin would with ``kubectl edit``: drop ``verb`` on ``resource`` from one role."""
    plural, namespace = ("clusterroles", None) if kind == "ClusterRole" else ("roles", "gpunode")
    base = "/apis/rbac.authorization.k8s.io/v1"
    path = (
        f"{base}/{plural}/{name}"
        if namespace is None
        else (f"{base}/namespaces/{namespace}/{plural}/{name}")
    )
    status, role = await kube_call(demo.kube.url, "GET", path)
    assert status == 200, role
    rules: list[dict[str, Any]] = []
    found = False
    for rule in role["rules"]:
        if group in rule["apiGroups"] and resource in rule["resources"] and verb in rule["verbs"]:
            found = True
            for res in rule["resources"]:
                kept = [v for v in rule["verbs"] if res != resource or v != verb]
                if kept:
                    rules.append({**copy.deepcopy(rule), "resources": [res], "verbs": kept})
        else:
            rules.append(rule)
    assert found, f"{kind}/{name} does not grant {verb} {resource}"
    status, body = await kube_call(demo.kube.url, "PUT", path, body={**role, "rules": rules})
    assert status == 200, body


@pytest.mark.parametrize(
    ("kind", "name", "group", "resource", "verb", "scope"),
    [
        ("Role", "gpunode-diagnostics", "", "pods/log", "get", 'in the namespace "gpunode"'),
        ("Role", "gpunode-diagnostics", "batch", "jobs", "create", 'in the namespace "gpunode"'),
        ("ClusterRole", "gpunode", "", "nodes", "get", "at the cluster scope"),
    ],
)
async def test_removing_one_grant_fails_the_diagnosis_that_needs_it_with_the_servers_words(
    demo: Demo, kind: str, name: str, group: str, resource: str, verb: str, scope: str
) -> None:
    await _revoke(demo, kind, name, group, resource, verb)

    await demo.slack.slash_command("U0ALICE", CHANNEL, "diagnose gpu-node-01")
    await demo.drain()

    roots = demo.slack.messages(CHANNEL)
    said = " ".join(text_of(m) for r in roots for m in [r, *thread(demo, str(r["ts"]))])
    said += " ".join(text_of(m) for m in demo.slack.ephemerals("U0ALICE"))
    expected = (
        f'User \\"{BOT_USER}\\" cannot {verb} resource \\"{resource}\\" in API group '
        f'\\"{group}\\" {scope}'.replace('"gpunode"', '\\"gpunode\\"')
    )
    assert "forbidden" in said and expected in said, said[-1500:]
    assert [
        (a.verb, a.resource + (f"/{a.subresource}" if a.subresource else ""))
        for a in demo.kube.authorizer.denied
    ] == [(verb, resource)]


async def test_removing_the_eviction_grant_fails_the_tier_1_dry_run_and_the_thread_says_why(
    demo: Demo,
) -> None:
    from tests.e2e.test_actions_flow import request_tier

    root_ts = await diagnose(demo)
    await _revoke(demo, "ClusterRole", "gpunode", "", "pods/eviction", "create")
    await request_tier(demo, root_ts, 1)

    said = " ".join(text_of(m) for m in thread(demo, root_ts))
    assert 'cannot create resource \\"pods/eviction\\"' in said, said[-2000:]
    assert {a.subresource for a in demo.kube.authorizer.denied} == {"eviction"}
