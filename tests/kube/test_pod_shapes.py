"""A pod's requests and limits as the fleet informer keeps them (``cutting.pod_shape``) are
worked out once per spec and reused: whatever pods came before, each pod's shape is the one
its own spec sums to."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from bot.core.diagnosis.requests import pod_requests_and_limits
from bot.kube import cutting

Obj = dict[str, Any]


def summed(pod: Obj) -> str:
    return cutting._shape(*pod_requests_and_limits(pod))


def base_pod() -> Obj:
    return {
        "metadata": {"namespace": "ml", "name": "trainer-0"},
        "spec": {
            "nodeName": "gpu-node-01",
            "containers": [
                {"name": "main", "resources": {"requests": {"cpu": "2", "memory": "8Gi"}}},
                {"name": "log", "resources": {"limits": {"memory": "256Mi"}}},
            ],
            "initContainers": [
                {"name": "fetch", "resources": {"requests": {"memory": "1Gi"}}},
            ],
        },
        "status": {"phase": "Running"},
    }


def variants() -> list[tuple[str, Obj]]:
    """The base pod, then one pod per field the sum reads, each differing from it there only."""
    out: list[tuple[str, Obj]] = [("base", base_pod())]

    def variant(what: str, change: Any) -> None:
        pod = base_pod()
        change(pod["spec"])
        out.append((what, pod))

    variant(
        "a container's request",
        lambda s: s["containers"][0]["resources"]["requests"].update(memory="10Gi"),
    )
    variant(
        "a container's limit",
        lambda s: s["containers"][1]["resources"]["limits"].update(memory="1Gi"),
    )
    variant(
        "one more container",
        lambda s: s["containers"].append(
            {"name": "x", "resources": {"requests": {"memory": "3Gi"}}}
        ),
    )
    variant(
        "an init container's request",
        lambda s: s["initContainers"][0]["resources"]["requests"].update(memory="20Gi"),
    )
    variant(
        "an init container made a sidecar",
        lambda s: s["initContainers"][0].update(restartPolicy="Always"),
    )
    variant("the overhead", lambda s: s.update(overhead={"memory": "300Mi"}))
    variant("pod-level requests", lambda s: s.update(resources={"requests": {"memory": "24Gi"}}))
    variant("pod-level limits", lambda s: s.update(resources={"limits": {"memory": "30Gi"}}))
    variant(
        "a quantity written otherwise",
        lambda s: s["containers"][1]["resources"]["limits"].update(memory="256M"),
    )
    return out


def test_each_field_the_sum_reads_gives_its_own_shape_whatever_came_before() -> None:
    cutting._SHAPES.clear()
    pods = variants()
    for _ in range(2):  # the second time round, every spec is already known
        for what, pod in pods:
            assert cutting.pod_record(pod)[2] == summed(pod), what
    assert len({summed(pod) for _, pod in pods}) == len(pods)  # each variant sums otherwise


def test_a_spec_written_in_another_key_order_gets_the_order_its_own_sum_has() -> None:
    pod = base_pod()
    reordered = copy.deepcopy(pod)
    resources = reordered["spec"]["containers"][0]["resources"]
    resources["requests"] = dict(reversed(list(resources["requests"].items())))
    assert cutting.pod_shape(pod) == summed(pod)
    assert cutting.pod_shape(reordered) == summed(reordered) != summed(pod)


def test_the_remembered_shapes_are_bounded() -> None:
    cutting._SHAPES.clear()
    for i in range(cutting._SHAPES_MAX + 10):
        pod = base_pod()
        pod["spec"]["containers"][0]["resources"]["requests"]["memory"] = f"{i + 1}Mi"
        assert cutting.pod_shape(pod) == summed(pod)
    assert len(cutting._SHAPES) <= cutting._SHAPES_MAX


QUANTITY = st.sampled_from(["1", "2", "500m", "1Gi", "1024Mi", "3G", "0", 2, "1.5"])
RESOURCES = st.fixed_dictionaries(
    {},
    optional={
        "requests": st.dictionaries(
            st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]), QUANTITY, max_size=3
        ),
        "limits": st.dictionaries(
            st.sampled_from(["cpu", "memory", "hugepages-2Mi"]), QUANTITY, max_size=3
        ),
    },
)
CONTAINER = st.fixed_dictionaries({"name": st.just("c"), "resources": RESOURCES})
INIT = st.fixed_dictionaries(
    {"name": st.just("i"), "resources": RESOURCES},
    optional={"restartPolicy": st.sampled_from(["Always", "Never"])},
)
SPEC = st.fixed_dictionaries(
    {"nodeName": st.just("n1"), "containers": st.lists(CONTAINER, min_size=1, max_size=3)},
    optional={
        "initContainers": st.lists(INIT, max_size=2),
        "overhead": st.dictionaries(st.sampled_from(["cpu", "memory"]), QUANTITY, max_size=2),
        "resources": RESOURCES,
    },
)


@given(st.lists(SPEC, min_size=1, max_size=8))
def test_any_run_of_pods_gets_the_shapes_their_specs_sum_to(specs: list[Obj]) -> None:
    for spec in specs + specs[::-1]:
        pod = {"metadata": {"namespace": "ns", "name": "p"}, "spec": spec, "status": {}}
        assert cutting.pod_record(pod)[2] == summed(pod)
