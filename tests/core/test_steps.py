"""A plan step's parameters are typed by its verb; a stored plan reads back the same."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bot.core.model.actions import (
    PARAMS,
    NoParams,
    PatchResourcesParams,
    PriorityClassParams,
    ResizePodParams,
    Step,
)
from bot.core.model.refs import ObjectRef

PATCH = {
    "container": "pandas",
    "requests": {"memory": "40Gi"},
    "limits": {"memory": "48Gi", "cpu": None},
    "env": {"OMP_NUM_THREADS": "4", "OLD": None, "TOKEN": {"valueFrom": {"secretKeyRef": {}}}},
}


@pytest.mark.parametrize(
    ("verb", "params", "model"),
    [
        ("cordon", {}, NoParams),
        ("evict", None, NoParams),
        ("ensure_priority_class", {"value": 1000, "description": "d"}, PriorityClassParams),
        ("patch_resources", PATCH, PatchResourcesParams),
        ("resize_pod", {"container": "c", "limits": {"memory": "1Gi"}}, ResizePodParams),
    ],
)
def test_a_dict_of_params_is_read_as_the_verbs_model(
    verb: str, params: dict[str, object] | None, model: type
) -> None:
    data: dict[str, object] = {"verb": verb, "kind": "Deployment", "name": "x"}
    if params is not None:
        data["params"] = params
    step = Step.model_validate(data)
    assert type(step.params) is model is PARAMS[step.verb]


@pytest.mark.parametrize(
    ("verb", "params"),
    [
        ("evict", {"value": 1}),
        ("ensure_priority_class", {}),
        ("set_priority_class", {"priority": "x"}),
        ("resize_pod", {"container": "c", "env": {"A": "1"}}),
    ],
)
def test_params_another_verb_takes_are_refused(verb: str, params: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Step.model_validate({"verb": verb, "kind": "K", "name": "x", "params": params})


def test_a_model_of_another_verb_is_refused() -> None:
    with pytest.raises(ValidationError, match="takes NoParams"):
        Step(verb="cordon", kind="Node", name="n", params=PriorityClassParams(value=1))


def test_a_stored_step_reads_back_equal_and_dumps_the_same_json() -> None:
    step = Step(verb="patch_resources", kind="Deployment", namespace="ns", name="x", params=PATCH)
    text = step.model_dump_json()
    assert Step.model_validate_json(text) == step
    assert step.model_dump(mode="json")["params"] == PATCH


def test_templates_read_params_like_a_mapping() -> None:
    step = Step(verb="patch_resources", kind="Deployment", name="x", params=PATCH)
    assert step.params.get("container") == "pandas" and step.params["limits"] == PATCH["limits"]
    assert step.params.get("value") is None and step.params.get("value", 0) == 0
    with pytest.raises(KeyError):
        step.params["value"]


def test_a_step_names_its_object_and_container() -> None:
    step = Step(verb="resize_pod", kind="Pod", namespace="ml", name="p", params={"container": "c"})
    assert step.ref == ObjectRef("Pod", "ml", "p") and step.ref.key == "Pod/ml/p"
    assert step.container == "c"
    node = Step(verb="cordon", kind="Node", name="n")
    assert node.ref.key == "Node//n" and node.container == ""


def test_a_cluster_scoped_step_names_its_object_without_a_namespace() -> None:
    """A plan writes no namespace (None) for a Node or a PriorityClass; the step's object
    says it is cluster-scoped, as the KubePort takes it (namespace ''), and the plan's JSON
    keeps None (plan ids hash it)."""
    node = Step(verb="cordon", kind="Node", name="n")
    assert node.ref == ObjectRef.cluster_scoped("Node", "n") == ObjectRef("Node", "", "n")
    assert node.model_dump(mode="json")["namespace"] is None
    pod = Step(verb="evict", kind="Pod", namespace="ml", name="p")
    assert pod.ref.namespace == "ml"
