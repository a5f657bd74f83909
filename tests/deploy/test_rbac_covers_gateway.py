"""The roles in deploy/base grant every API call bot/kube makes, and nothing more.

bot/kube publishes its calls as ``bot.kube.permissions.API_CALLS``: items with ``api_group``
("" for core), ``resource`` (subresources as ``pods/log``), ``verb`` and an optional
``scope`` ("cluster", or "own_namespace" for calls made only in the bot's namespace, which
the namespaced Role may grant). Plain tuples ``(api_group, resource, verb[, scope])`` work
too. Until that module exists these tests skip and say so.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.kustomizing import find, grants, render

BASE = Path(__file__).resolve().parents[2] / "deploy" / "base"
Call = tuple[str, str, str, str]  # api_group, resource, verb, scope


def _normalize(item: Any) -> Call:
    if isinstance(item, tuple):
        group, resource, verb, *rest = item
        scope = rest[0] if rest else "cluster"
    else:
        group = getattr(item, "api_group", getattr(item, "group", None))
        resource, verb = item.resource, item.verb
        scope = getattr(item, "scope", "cluster") or "cluster"
    scope = str(getattr(scope, "value", scope))
    assert scope in {"cluster", "own_namespace"}, f"unknown scope {scope!r}"
    return str(group or ""), str(resource), str(verb), scope


def _api_calls() -> set[Call]:
    try:
        module = importlib.import_module("bot.kube.permissions")
    except ModuleNotFoundError:
        pytest.skip("bot/kube/permissions.py (API_CALLS) is not written yet")
    calls: Iterable[Any] = module.API_CALLS
    return {_normalize(c) for c in calls}


def _granted() -> tuple[dict[tuple[str, str], set[str]], dict[tuple[str, str], set[str]]]:
    objects = render(BASE)
    return grants(find(objects, "ClusterRole", "gpunode")), grants(
        find(objects, "Role", "gpunode-diagnostics")
    )


def test_every_gateway_call_is_granted() -> None:
    cluster, namespaced = _granted()
    missing = []
    for group, resource, verb, scope in sorted(_api_calls()):
        allowed = set(cluster.get((group, resource), set()))
        if scope == "own_namespace":
            allowed |= namespaced.get((group, resource), set())
        if verb not in allowed:
            missing.append((group, resource, verb, scope))
    assert not missing, f"calls the roles do not grant: {missing}"


def test_roles_grant_nothing_the_gateway_does_not_use() -> None:
    calls = _api_calls()
    used = {(g, r, v) for g, r, v, _ in calls}
    cluster_wide = {(g, r, v) for g, r, v, s in calls if s == "cluster"}
    cluster, namespaced = _granted()
    unused = [
        ("ClusterRole", g, r, v)
        for (g, r), verbs in cluster.items()
        for v in sorted(verbs)
        if (g, r, v) not in cluster_wide
    ]
    unused += [
        ("Role", g, r, v)
        for (g, r), verbs in namespaced.items()
        for v in sorted(verbs)
        if (g, r, v) not in used
    ]
    assert not unused, f"granted but never called: {unused}"


def test_normalizer_accepts_tuples_and_objects() -> None:
    class Item:
        api_group = "batch"
        resource = "jobs"
        verb = "create"
        scope = "own_namespace"

    assert _normalize(("", "nodes", "patch")) == ("", "nodes", "patch", "cluster")
    assert _normalize(Item()) == ("batch", "jobs", "create", "own_namespace")
