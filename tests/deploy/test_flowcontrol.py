"""deploy/flowcontrol: the bot's API Priority and Fairness objects are valid for every
supported Kubernetes version and classify exactly the bot's service account into a level
of its own that exists and queues instead of rejecting."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.deploy.kustomizing import find, render
from tests.schemas import validate_strict

REPO = Path(__file__).resolve().parents[2]
FLOWCONTROL = REPO / "deploy" / "flowcontrol"
BASE = REPO / "deploy" / "base"
VERSIONS = ("1.31.0", "1.37.0")
#: the built-in FlowSchema every service account falls into without ours
SERVICE_ACCOUNTS_PRECEDENCE = 9000


@pytest.mark.parametrize("version", VERSIONS)
def test_the_flowcontrol_objects_pass_strict_schema_validation(version: str) -> None:
    objects = render(FLOWCONTROL)
    assert sorted(o["kind"] for o in objects) == ["FlowSchema", "PriorityLevelConfiguration"]
    for obj in objects:
        validate_strict(obj, version)


def test_the_flowschema_sends_the_bots_service_account_to_its_own_queued_level() -> None:
    objects = render(FLOWCONTROL)
    schema = find(objects, "FlowSchema", "gpunode")["spec"]
    level = find(
        objects, "PriorityLevelConfiguration", schema["priorityLevelConfiguration"]["name"]
    )
    bot = find(render(BASE), "Deployment", "gpunode")
    account = bot["spec"]["template"]["spec"]["serviceAccountName"]
    subjects = [s for rule in schema["rules"] for s in rule["subjects"]]
    assert subjects == [
        {
            "kind": "ServiceAccount",
            "serviceAccount": {"namespace": bot["metadata"]["namespace"], "name": account},
        }
    ]
    assert schema["matchingPrecedence"] < SERVICE_ACCOUNTS_PRECEDENCE
    assert level["spec"]["type"] == "Limited"
    assert level["spec"]["limited"]["limitResponse"]["type"] == "Queue"
