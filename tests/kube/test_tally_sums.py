"""The fleet summed from the informers' records (``tallying.tally_from``) totals each node's
requests and limits exactly as ``add_resource_list`` adds them pod after pod, in list order:
the same value and the same format (the receiver's, the addend's while the total is zero),
whatever the quantities, zero and negative ones included."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.diagnosis.requests import ResourceList, add_resource_list
from bot.core.model.quantity import Quantity
from bot.kube.cutting import _compact
from bot.kube.tallying import expanded, tally_from

NODES = ["gpu-a", "gpu-b", "cpu-c"]
formats = st.sampled_from(["DecimalSI", "BinarySI", "DecimalExponent"])
quantities = st.builds(
    Quantity, st.sampled_from([0, 0, -(10**9), 10**6, 5 * 10**8, 2**30 * 10**9]), formats
)
resource_lists = st.dictionaries(st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]), quantities)


def shape_of(requests: ResourceList, limits: ResourceList) -> str:
    return _compact(
        [[[name, q.nanos, q.format] for name, q in part.items()] for part in (requests, limits)]
    )


def node(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {}}, "spec": {}, "status": {}}


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([*NODES, "gone", ""]), resource_lists, resource_lists),
        max_size=30,
    )
)
def test_each_nodes_totals_are_the_pods_added_in_list_order(
    pods: list[tuple[str, ResourceList, ResourceList]],
) -> None:
    records = [
        ("ns", f"p{i}", (node_name, 0, shape_of(r, lim), None, "{}", "", False, ""))
        for i, (node_name, r, lim) in enumerate(pods)
    ]
    fleet = tally_from([("", n, node(n)) for n in NODES], records, lambda _: None)
    for n in NODES:
        requests: ResourceList = {}
        limits: ResourceList = {}
        for node_name, r, lim in pods:
            if node_name == n:
                reqs, lims, _ = expanded(shape_of(r, lim))
                add_resource_list(requests, reqs)
                add_resource_list(limits, lims)
        assert fleet.nodes[n].requests == requests
        assert list(fleet.nodes[n].requests) == list(requests)  # the order rows are listed in
        assert fleet.nodes[n].limits == limits
    assert fleet.pods == sum(1 for node_name, _, _ in pods if node_name in NODES)
