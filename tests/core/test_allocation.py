"""Byte-for-byte vectors from reference/kubernetes.md §1.7 (U-, C- and D-vectors)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.core.diagnosis.allocation import (
    allocated_resources,
    apply_pod_defaults,
    describe_allocated,
    pod_requests_and_limits,
    pod_rows,
    tabwrite,
)

HEADER = "Allocated resources:\n  (Total limits may be over 100 percent, i.e., overcommitted.)\n"


def _c(
    name: str,
    req: dict[str, str] | None = None,
    lim: dict[str, str] | None = None,
    *,
    sidecar: bool = False,
) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "resources": {}}
    if req:
        c["resources"]["requests"] = req
    if lim:
        c["resources"]["limits"] = lim
    if sidecar:
        c["restartPolicy"] = "Always"
    return c


def _pod(
    name: str,
    containers: list[dict[str, Any]],
    *,
    init: list[dict[str, Any]] | None = None,
    ns: str = "foo",
    node: str = "bar",
    phase: str = "Running",
    **spec: Any,
) -> dict[str, Any]:
    pod_spec: dict[str, Any] = {"nodeName": node, "containers": containers, **spec}
    if init:
        pod_spec["initContainers"] = init
    return {
        "metadata": {"namespace": ns, "name": name},
        "spec": pod_spec,
        "status": {"phase": phase},
    }


def _node(allocatable: dict[str, str], capacity: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "bar"},
        "status": {"capacity": capacity or allocatable, "allocatable": allocatable},
    }


U_NODE = _node(
    {"cpu": "4", "memory": "12Gi", "hugepages-2Mi": "2Gi", "hugepages-1Gi": "0"},
    {"cpu": "8", "memory": "24Gi", "hugepages-2Mi": "4Gi", "hugepages-1Gi": "0"},
)
U_CONTAINERS = [
    _c("cpu-mem", {"cpu": "1", "memory": "1Gi"}, {"cpu": "2", "memory": "2Gi"}),
    _c("hugepages", {"hugepages-2Mi": "512Mi"}, {"hugepages-2Mi": "512Mi"}),
]


def test_u1_describe_node_matches_kubectl_byte_for_byte() -> None:
    pod = _pod("pod-with-resources", U_CONTAINERS)
    assert describe_allocated(U_NODE, [pod]) == HEADER + (
        "  Resource           Requests     Limits\n"
        "  --------           --------     ------\n"
        "  cpu                1 (25%)      2 (50%)\n"
        "  memory             1Gi (8%)     2Gi (16%)\n"
        "  ephemeral-storage  0 (0%)       0 (0%)\n"
        "  hugepages-1Gi      0 (0%)       0 (0%)\n"
        "  hugepages-2Mi      512Mi (25%)  512Mi (25%)\n"
    )


def test_u2_sidecar_is_added_to_the_sum_and_to_later_init_containers() -> None:
    init = [
        _c("init-container-1", {"cpu": "1", "memory": "1Gi"}, sidecar=True),
        _c("init-container-2", {"cpu": "1", "memory": "1Gi"}),
    ]
    pod = _pod("pod-with-resources", U_CONTAINERS, init=init)
    assert describe_allocated(U_NODE, [pod]) == HEADER + (
        "  Resource           Requests     Limits\n"
        "  --------           --------     ------\n"
        "  cpu                2 (50%)      2 (50%)\n"
        "  memory             2Gi (16%)    2Gi (16%)\n"
        "  ephemeral-storage  0 (0%)       0 (0%)\n"
        "  hugepages-1Gi      0 (0%)       0 (0%)\n"
        "  hugepages-2Mi      512Mi (25%)  512Mi (25%)\n"
    )


def test_u3_pod_level_resources_replace_the_container_aggregate() -> None:
    node = _node({"cpu": "4", "memory": "12Gi"})
    pod = _pod(
        "pod-level",
        [_c("c1"), _c("c2")],
        resources={
            "requests": {"cpu": "2", "memory": "4Gi"},
            "limits": {"cpu": "4", "memory": "8Gi"},
        },
    )
    assert describe_allocated(node, [pod]) == HEADER + (
        "  Resource           Requests   Limits\n"
        "  --------           --------   ------\n"
        "  cpu                2 (50%)    4 (100%)\n"
        "  memory             4Gi (33%)  8Gi (66%)\n"
        "  ephemeral-storage  0 (0%)     0 (0%)\n"
    )
    row = pod_rows(node, [pod])[0]
    assert row[2:] == ("2 (50%)", "4 (100%)", "4Gi (33%)", "8Gi (66%)")


CPU = "cpu"
C_REQUEST_VECTORS = [
    ("larger init container", [_c("c", {CPU: "1"})], [_c("i", {CPU: "4"})], None, {CPU: "4"}),
    (
        "larger containers",
        [_c("a", {CPU: "2"}), _c("b", {CPU: "3"})],
        [_c("i", {CPU: "2"})],
        None,
        {CPU: "5"},
    ),
    (
        "pod overhead included",
        [_c("a", {CPU: "2"}), _c("b", {CPU: "3"})],
        [],
        {CPU: "1", "memory": "1Gi"},
        {CPU: "6", "memory": "1Gi"},
    ),
    (
        "restartable init container",
        [_c("c", {CPU: "1"})],
        [_c("s", {CPU: "1"}, sidecar=True)],
        None,
        {CPU: "2"},
    ),
    (
        "multiple restartable init containers",
        [_c("c", {CPU: "1"})],
        [
            _c("i", {CPU: "5"}),
            _c("s1", {CPU: "1"}, sidecar=True),
            _c("s2", {CPU: "2"}, sidecar=True),
            _c("s3", {CPU: "3"}, sidecar=True),
        ],
        None,
        {CPU: "7"},
    ),
    (
        "multiple restartable and regular init containers",
        [_c("c", {CPU: "1"})],
        [
            _c("i1", {CPU: "5"}),
            _c("s1", {CPU: "1"}, sidecar=True),
            _c("s2", {CPU: "2"}, sidecar=True),
            _c("i2", {CPU: "5"}),
            _c("s3", {CPU: "3"}, sidecar=True),
        ],
        None,
        {CPU: "8"},
    ),
    (
        "restartable-init, init and regular",
        [_c("c", {CPU: "100"})],
        [_c("s", {CPU: "10"}, sidecar=True), _c("i", {CPU: "200"})],
        None,
        {CPU: "210"},
    ),
]


def _as_text(values: dict[str, Any]) -> dict[str, str]:
    return {k: v.canonical() for k, v in values.items()}


@pytest.mark.parametrize(
    ("case", "containers", "init", "overhead", "expected"),
    C_REQUEST_VECTORS,
    ids=[v[0] for v in C_REQUEST_VECTORS],
)
def test_c_vectors_pod_requests_follow_component_helpers(
    case: str, containers: list[Any], init: list[Any], overhead: Any, expected: dict[str, str]
) -> None:
    spec = {"overhead": overhead} if overhead else {}
    reqs, _ = pod_requests_and_limits(_pod("p", containers, init=init, **spec))
    assert _as_text(reqs) == expected


def test_c_vector_overhead_is_added_only_to_existing_limits() -> None:
    pod = _pod(
        "p", [_c("c", {CPU: "1", "memory": "10"}, {CPU: "2"})], overhead={CPU: "5", "memory": "5"}
    )
    reqs, lims = pod_requests_and_limits(pod)
    assert _as_text(reqs) == {CPU: "6", "memory": "15"}
    assert _as_text(lims) == {CPU: "7"}


def test_c_vector_an_unlimited_container_adds_nothing_to_limits() -> None:
    pod = _pod("p", [_c("c1", lim={CPU: "2", "memory": "2Gi"}), _c("c2")])
    assert _as_text(pod_requests_and_limits(pod)[1]) == {CPU: "2", "memory": "2Gi"}


def test_c_vector_sidecar_init_and_regular_limits() -> None:
    pod = _pod(
        "p",
        [_c("c", lim={CPU: "100"})],
        init=[_c("s", lim={CPU: "10"}, sidecar=True), _c("i", lim={CPU: "200"})],
    )
    assert _as_text(pod_requests_and_limits(pod)[1]) == {CPU: "210"}


def test_c_vector_resized_pod_takes_the_three_way_maximum_per_resource() -> None:
    res = {CPU: "30m", "memory": "20M", "ephemeral-storage": "10G"}
    pod = _pod("p", [_c("c", res)])
    pod["status"]["containerStatuses"] = [
        {
            "name": "c",
            "allocatedResources": {CPU: "20m", "memory": "10M", "ephemeral-storage": "30G"},
            "resources": {"requests": {CPU: "10m", "memory": "30M", "ephemeral-storage": "20G"}},
        }
    ]
    reqs, _ = pod_requests_and_limits(pod, use_status_resources=True)
    assert _as_text(reqs) == {CPU: "30m", "memory": "30M", "ephemeral-storage": "30G"}
    # the Allocated-resources totals use spec only
    assert _as_text(pod_requests_and_limits(pod)[0]) == res


D1_NODE = _node(
    {
        "cpu": "31850m",
        "memory": "251Gi",
        "ephemeral-storage": "100Gi",
        "nvidia.com/gpu": "8",
        "pods": "110",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
    }
)
D1_PODS = [
    _pod(
        "train-a",
        [
            _c(
                "t",
                {CPU: "8", "memory": "64Gi", "nvidia.com/gpu": "4"},
                {"memory": "64Gi", "nvidia.com/gpu": "4"},
            )
        ],
        ns="ml",
    ),
    _pod(
        "train-b",
        [
            _c(
                "t",
                {CPU: "4", "memory": "32Gi", "nvidia.com/gpu": "2", "ephemeral-storage": "10Gi"},
                {CPU: "8", "memory": "48Gi", "nvidia.com/gpu": "2"},
            )
        ],
        ns="ml",
    ),
    _pod(
        "dcgm-exporter-x",
        [_c("d", {CPU: "100m", "memory": "128Mi"}, {CPU: "200m", "memory": "256Mi"})],
        ns="gpu-operator",
    ),
    _pod("debug", [_c("sh")], ns="default"),
]


def test_d1_gpu_node_totals_and_extended_rows() -> None:
    assert describe_allocated(D1_NODE, D1_PODS) == HEADER + (
        "  Resource           Requests       Limits\n"
        "  --------           --------       ------\n"
        "  cpu                12100m (37%)   8200m (25%)\n"
        "  memory             98432Mi (38%)  114944Mi (44%)\n"
        "  ephemeral-storage  10Gi (10%)     0 (0%)\n"
        "  hugepages-1Gi      0 (0%)         0 (0%)\n"
        "  hugepages-2Mi      0 (0%)         0 (0%)\n"
        "  nvidia.com/gpu     6              6\n"
    )


def test_d1_per_pod_rows() -> None:
    rows = [tuple(r[1:]) for r in pod_rows(D1_NODE, D1_PODS)]
    assert rows == [
        ("train-a", "8 (25%)", "0 (0%)", "64Gi (25%)", "64Gi (25%)"),
        ("train-b", "4 (12%)", "8 (25%)", "32Gi (12%)", "48Gi (19%)"),
        ("dcgm-exporter-x", "100m (0%)", "200m (0%)", "128Mi (0%)", "256Mi (0%)"),
        ("debug", "0 (0%)", "0 (0%)", "0 (0%)", "0 (0%)"),
    ]


def test_d1_structured_rows_carry_no_percentage_for_extended_resources() -> None:
    rows = {r.resource: r for r in allocated_resources(D1_NODE, D1_PODS)}
    assert list(rows) == [
        "cpu",
        "memory",
        "ephemeral-storage",
        "hugepages-1Gi",
        "hugepages-2Mi",
        "nvidia.com/gpu",
    ]
    gpu = rows["nvidia.com/gpu"]
    assert (gpu.requests, gpu.requests_percent, gpu.allocatable_value) == ("6", None, 8.0)
    assert rows["cpu"].requests_value == pytest.approx(12.1)
    assert rows["memory"].requests_percent == 38


def test_d3_sidecar_ordering_on_a_node() -> None:
    node = _node({"cpu": "16", "memory": "64Gi"})
    pod = _pod("p", [_c("c", {CPU: "1"})], init=C_REQUEST_VECTORS[5][2])
    assert describe_allocated(node, [pod]) == HEADER + (
        "  Resource           Requests  Limits\n"
        "  --------           --------  ------\n"
        "  cpu                8 (50%)   0 (0%)\n"
        "  memory             0 (0%)    0 (0%)\n"
        "  ephemeral-storage  0 (0%)    0 (0%)\n"
    )


@pytest.mark.parametrize(
    ("phase", "node", "counted"),
    [
        ("Running", "bar", True),
        ("Pending", "bar", True),
        ("Unknown", "bar", True),
        ("Succeeded", "bar", False),
        ("Failed", "bar", False),
        ("Running", "other", False),
    ],
)
def test_only_non_terminated_pods_bound_to_the_node_count(
    phase: str, node: str, counted: bool
) -> None:
    pod = _pod("p", [_c("c", {CPU: "1"})], phase=phase, node=node)
    cpu = allocated_resources(_node({"cpu": "4"}), [pod])[0]
    assert cpu.requests == ("1" if counted else "0")


def test_percent_truncates_like_float64_in_go() -> None:
    pod = _pod("p", [_c("c", {CPU: "290m"})])
    assert allocated_resources(_node({"cpu": "1"}), [pod])[0].requests_percent == 28


def test_zero_allocatable_gives_zero_percent_in_totals() -> None:
    pod = _pod("p", [_c("c", {"memory": "1Gi"})])
    row = allocated_resources(_node({"cpu": "1", "memory": "0"}), [pod])[1]
    assert (row.requests, row.requests_percent) == ("1Gi", 0)


def test_allocatable_falls_back_to_capacity_when_empty() -> None:
    node = {"metadata": {"name": "bar"}, "status": {"capacity": {"cpu": "2"}, "allocatable": {}}}
    pod = _pod("p", [_c("c", {CPU: "1"})])
    assert allocated_resources(node, [pod])[0].requests_percent == 50


def test_total_keeps_the_format_of_the_first_pod_that_has_the_resource() -> None:
    first = _pod("a", [_c("c", {"memory": "1000M"})])
    second = _pod("b", [_c("c", {"memory": "1Gi"})])
    node = _node({"memory": "10Gi"})
    assert allocated_resources(node, [first, second])[1].requests == "2073741824"
    assert allocated_resources(node, [second, first])[1].requests == "2073741824"
    third = _pod("c", [_c("c", {"memory": "1Gi"})])
    assert allocated_resources(node, [second, third])[1].requests == "2Gi"
    assert (
        allocated_resources(node, [first, _pod("d", [_c("c", {"memory": "24M"})])])[1].requests
        == "1024M"
    )


def test_max_replaces_format_only_when_strictly_greater() -> None:
    # init 1Gi (binary) vs containers 1073741824 (decimal, equal): the sum's format stays
    pod = _pod("p", [_c("c", {"memory": "1073741824"})], init=[_c("i", {"memory": "1Gi"})])
    assert pod_requests_and_limits(pod)[0]["memory"].format == "DecimalSI"
    bigger = _pod("p", [_c("c", {"memory": "1073741824"})], init=[_c("i", {"memory": "2Gi"})])
    assert pod_requests_and_limits(bigger)[0]["memory"].canonical() == "2Gi"


def test_resources_requested_but_absent_from_allocatable_are_not_printed() -> None:
    pod = _pod("p", [_c("c", {"example.com/foo": "1"}, {"example.com/foo": "1"})])
    text = describe_allocated(_node({"cpu": "1", "pods": "110"}), [pod])
    assert "example.com/foo" not in text
    assert "pods" not in text


def test_defaulting_copies_limits_into_missing_requests_for_raw_manifests() -> None:
    pod = _pod("p", [_c("c", {CPU: "1"}, {CPU: "2", "nvidia.com/gpu": "1"})])
    defaulted = apply_pod_defaults(pod)
    assert defaulted["spec"]["containers"][0]["resources"]["requests"] == {
        CPU: "1",
        "nvidia.com/gpu": "1",
    }
    assert "nvidia.com/gpu" not in pod["spec"]["containers"][0]["resources"]["requests"]


def test_tabwriter_aligns_only_consecutive_lines_with_the_cell() -> None:
    text = tabwrite(["a\tbb\tc", "aaa\tb", "x", "y\tz"])
    assert text == "a    bb  c\naaa  b\nx\ny  z\n"
