"""A talking point's rank ("the node's consumer number 2") is the pod's place in the pod list
it sits under (``build_view``'s pods, ranked by the same figure), on generated nodes where a
GPU pod shares the blame; and the figure it states is the list's."""

from __future__ import annotations

from bot.core.reporting.analysis import analyze
from bot.render.views import build_view
from tests.core.generating import AT, nodes

KEY = "ai.training_host_memory_share"


def test_the_rank_and_the_figure_of_a_point_are_the_pod_lists() -> None:
    seen = 0
    for planted in nodes(600, 20261202):
        d = analyze(planted.bundle, planted.view, now=AT)
        listed = build_view(d, planted.bundle, top_pods=len(d.ledger.entries) + 1).pods
        order = [line.pod_key for line in listed]
        for p in d.talking_points:
            if p.key != KEY:
                continue
            pod = str(p.params["pod"])
            assert pod in order, f"{planted.cls}: {pod} not in the pod list"
            assert p.params["rank"] == order.index(pod) + 1, f"{planted.cls}: {pod}"
            assert p.params["held_bytes"] == listed[order.index(pod)].bytes
            seen += 1
    assert seen, "no generated node put a GPU pod among the consumers"
