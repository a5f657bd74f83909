"""``landing``: whether a write that got no answer is in the object re-read afterwards, for
every step verb (the HTTP-level cases are in tests/e2e/test_unanswered_writes.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from bot.core.model.actions import Step
from bot.core.remedies.landing import landing

SENT = datetime(2026, 12, 2, 11, 0, 0, 500_000, tzinfo=UTC)
CORDON = Step(verb="cordon", kind="Node", name="gpu-node-01")
EVICT = Step(verb="evict", kind="Pod", namespace="data-prep", name="preprocess-1")
PC = Step(
    verb="ensure_priority_class",
    kind="PriorityClass",
    name="gpunode-critical",
    params={"value": 1000000},
)
SET_PC = Step(
    verb="set_priority_class",
    kind="StatefulSet",
    namespace="ml",
    name="train",
    params={"priority_class": "gpunode-critical"},
)
PATCH = Step(
    verb="patch_resources",
    kind="Deployment",
    namespace="data-prep",
    name="preprocess",
    params={
        "container": "pandas",
        "limits": {"memory": "32Gi"},
        "requests": {"memory": "28Gi"},
        "env": {"OMP_NUM_THREADS": "4"},
    },
)
RESIZE = Step(
    verb="resize_pod",
    kind="Pod",
    namespace="data-prep",
    name="preprocess-1",
    params={"container": "pandas", "limits": {"memory": "32Gi"}},
)


def template(container: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"spec": {"template": {"spec": {"containers": [container], **spec}}}}


@pytest.mark.parametrize(
    ("step", "obj", "landed", "seen"),
    [
        (CORDON, {"spec": {"unschedulable": True}}, True, "cordoned"),
        (CORDON, {"spec": {}}, False, "schedulable"),
        (EVICT, None, True, "gone"),
        (EVICT, {"metadata": {"deletionTimestamp": "2026-12-02T11:00:01Z"}}, True, "terminating"),
        (EVICT, {"metadata": {"creationTimestamp": "2026-12-02T11:00:00Z"}}, True, "replaced"),
        (EVICT, {"metadata": {"creationTimestamp": "2026-12-01T09:00:00Z"}}, False, "running"),
        (PC, {"value": 1000000}, True, "present"),
        (PC, None, False, "absent"),
        (SET_PC, template({"name": "t"}, priorityClassName="gpunode-critical"), True, "set"),
        (SET_PC, template({"name": "t"}), False, "not_set"),
        (
            PATCH,
            template(
                {
                    "name": "pandas",
                    "resources": {
                        "limits": {"memory": "34359738368"},
                        "requests": {"memory": "28Gi"},
                    },
                    "env": [{"name": "OMP_NUM_THREADS", "value": "4"}],
                }
            ),
            True,
            "set",
        ),
        (
            PATCH,
            template(
                {
                    "name": "pandas",
                    "resources": {"limits": {"memory": "64Gi"}, "requests": {"memory": "28Gi"}},
                    "env": [{"name": "OMP_NUM_THREADS", "value": "4"}],
                }
            ),
            False,
            "not_set",
        ),
        (
            RESIZE,
            {
                "spec": {
                    "containers": [
                        {"name": "pandas", "resources": {"limits": {"memory": "32Gi"}}},
                    ]
                }
            },
            True,
            "set",
        ),
    ],
)
def test_a_reread_tells_whether_the_write_landed(
    step: Step, obj: dict[str, Any] | None, landed: bool, seen: str
) -> None:
    found = landing(step, obj, sent_at=SENT)

    assert (found.landed, found.seen) == (landed, seen)


def test_a_landed_cordon_reports_the_taint_but_is_decided_by_unschedulable() -> None:
    obj = {"spec": {"unschedulable": True, "taints": []}}

    found = landing(CORDON, obj, sent_at=SENT)

    assert found.landed and found.taint is False
    assert found.after == {"unschedulable": True}


def test_a_patch_names_every_field_it_set_for_the_message() -> None:
    found = landing(PATCH, None, sent_at=SENT)

    assert not found.landed
    assert found.fields == [
        "resources.limits.memory",
        "resources.requests.memory",
        "env.OMP_NUM_THREADS",
    ]
