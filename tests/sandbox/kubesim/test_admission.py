"""ValidatingAdmissionPolicy semantics of the stand-in (CEL through cel-python)."""

from __future__ import annotations

from typing import Any

import pytest

from gpunode_sandbox.kubesim import KubeSim
from tests.conftest import kube_call

ADM = "/apis/admissionregistration.k8s.io/v1"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"


def _policy(name: str, **spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": ["coordination.k8s.io"],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": ["leases"],
                }
            ]
        },
        "validations": [{"expression": "object.spec.holderIdentity.startsWith('ok-')"}],
    }
    base.update(spec)
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": base,
    }


def _binding(name: str, policy: str, actions: list[str], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": policy, "validationActions": actions, **spec},
    }


def _lease(holder: str, name: str = "l") -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name},
        "spec": {"holderIdentity": holder},
    }


async def _install(sim: KubeSim, policy: dict[str, Any], binding: dict[str, Any]) -> None:
    for path, obj in (
        (f"{ADM}/validatingadmissionpolicies", policy),
        (f"{ADM}/validatingadmissionpolicybindings", binding),
    ):
        status, body = await kube_call(sim.url, "POST", path, body=obj)
        assert status == 201, body


async def _create_lease(sim: KubeSim, holder: str, ns: str = "default") -> tuple[int, Any]:
    return await kube_call(sim.url, "POST", LEASES.format(ns=ns), body=_lease(holder))


async def test_a_failed_expression_denies_in_the_api_servers_words(kubesim: KubeSim) -> None:
    await _install(kubesim, _policy("p"), _binding("b", "p", ["Deny"]))

    status, body = await _create_lease(kubesim, "bad")

    assert status == 422 and body["reason"] == "Invalid"
    assert body["message"] == (
        "leases.coordination.k8s.io \"l\" is forbidden: ValidatingAdmissionPolicy 'p' with "
        "binding 'b' denied request: failed expression: "
        "object.spec.holderIdentity.startsWith('ok-')"
    )
    assert (await _create_lease(kubesim, "ok-1"))[0] == 201


@pytest.mark.parametrize(
    ("validation", "code", "message_end"),
    [
        ({"message": "holders start with ok-"}, 422, "denied request: holders start with ok-"),
        (
            {"messageExpression": "'holder ' + object.spec.holderIdentity + ' refused'"},
            422,
            "denied request: holder bad refused",
        ),
        (
            {"reason": "Forbidden"},
            403,
            "failed expression: object.spec.holderIdentity.startsWith('ok-')",
        ),
    ],
)
async def test_message_message_expression_and_reason_shape_the_denial(
    kubesim: KubeSim, validation: dict[str, str], code: int, message_end: str
) -> None:
    rule = {"expression": "object.spec.holderIdentity.startsWith('ok-')", **validation}
    await _install(kubesim, _policy("p", validations=[rule]), _binding("b", "p", ["Deny"]))

    status, body = await _create_lease(kubesim, "bad")

    assert status == code and body["message"].endswith(message_end), body


@pytest.mark.parametrize(
    ("binding", "policy", "denied"),
    [
        (_binding("b", "p", ["Warn", "Audit"]), _policy("p"), False),
        (_binding("b", "missing", ["Deny"]), _policy("p"), False),
        (
            _binding(
                "b",
                "p",
                ["Deny"],
                matchResources={
                    "namespaceSelector": {
                        "matchLabels": {"kubernetes.io/metadata.name": "ml-train"}
                    }
                },
            ),
            _policy("p"),
            False,
        ),
        (
            _binding("b", "p", ["Deny"]),
            _policy(
                "p",
                matchConditions=[
                    {"name": "c", "expression": "request.userInfo.username == 'someone-else'"}
                ],
            ),
            False,
        ),
        (
            _binding("b", "p", ["Deny"]),
            _policy(
                "p", validations=[{"expression": "object.spec.nope == 1"}], failurePolicy="Ignore"
            ),
            False,
        ),
        (
            _binding("b", "p", ["Deny"]),
            _policy("p", validations=[{"expression": "object.spec.nope == 1"}]),
            True,
        ),
        (
            _binding("b", "p", ["Deny"]),
            _policy(
                "p",
                variables=[{"name": "h", "expression": "object.spec.holderIdentity"}],
                validations=[{"expression": "variables.h == 'ok'"}],
            ),
            True,
        ),
    ],
)
async def test_bindings_actions_selectors_conditions_and_failure_policy_decide_if_it_applies(
    kubesim: KubeSim, binding: dict[str, Any], policy: dict[str, Any], denied: bool
) -> None:
    await _install(kubesim, policy, binding)

    status, body = await _create_lease(kubesim, "bad")

    assert (status == 422) is denied, body
    assert (status == 201) is not denied, body


async def test_a_policy_that_does_not_compile_is_refused(kubesim: KubeSim) -> None:
    bad = _policy("p", validations=[{"expression": "object.spec.("}])
    status, body = await kube_call(
        kubesim.url, "POST", f"{ADM}/validatingadmissionpolicies", body=bad
    )
    assert status == 422 and "spec.validations[0].expression" in body["message"], body
    assert "compilation failed" in body["message"]


def _params(name: str, prefix: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
        "data": {"prefix": prefix},
    }


DENY = {"parameterNotFoundAction": "Deny"}
PARAM_POLICY = {
    "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
    "validations": [{"expression": "object.spec.holderIdentity.startsWith(params.data.prefix)"}],
}


@pytest.mark.parametrize(
    ("param_ref", "holder", "admitted"),
    [
        ({"name": "p1", "namespace": "default", "parameterNotFoundAction": "Deny"}, "a-1", True),
        ({"name": "p1", "namespace": "default", "parameterNotFoundAction": "Deny"}, "b-1", False),
        # a selector: every matching parameter object must pass
        ({"selector": {"matchLabels": {"set": "x"}}, **DENY}, "a-1", False),
        ({"selector": {"matchLabels": {"set": "y"}}, **DENY}, "a-1", True),
        # no parameter found: Allow admits, Deny follows failurePolicy (Fail)
        ({"name": "gone", "parameterNotFoundAction": "Allow"}, "z", True),
        ({"name": "gone", "parameterNotFoundAction": "Deny"}, "z", False),
    ],
)
async def test_params_are_the_objects_the_bindings_param_ref_selects(
    kubesim: KubeSim, param_ref: dict[str, Any], holder: str, admitted: bool
) -> None:
    for cm in (
        _params("p1", "a-", {"set": "x"}),
        _params("p2", "b-", {"set": "x"}),
        _params("p3", "a-", {"set": "y"}),
    ):
        status, body = await kube_call(
            kubesim.url, "POST", "/api/v1/namespaces/default/configmaps", body=cm
        )
        assert status == 201, body
    await _install(
        kubesim, _policy("p", **PARAM_POLICY), _binding("b", "p", ["Deny"], paramRef=param_ref)
    )

    status, body = await _create_lease(kubesim, holder)

    assert (status == 201) is admitted, body
    if param_ref.get("name") == "gone" and not admitted:
        assert (
            "no params found for policy binding with `Deny` parameterNotFoundAction"
            in (body["message"])
        )
