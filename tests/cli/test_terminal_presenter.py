"""The terminal prints the same typed outcomes Slack presents: incidents, the top table,
a resolution, the help, a postmortem; a refusal, or a top that no cluster answered, is an
error on stderr with exit status 1."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.cli.presenter import present
from bot.core.model.clusters import NodeRef
from bot.core.reporting.outcomes import (
    ClusterLeftOut,
    Exported,
    HelpAsked,
    IncidentLine,
    Posted,
    RankedNode,
    Refused,
    Resolved,
    StatusList,
    TopNodes,
)

OPENED = datetime(2026, 12, 2, 9, 30, tzinfo=UTC)
AT = NodeRef(cluster="prod-eu", node="gpu-node-01")


def _ranked(node: str, cluster: str = "prod-eu") -> RankedNode:
    return RankedNode(
        at=NodeRef(cluster=cluster, node=node),
        memory_pressure=True,
        working_set_percent=97,
        limits_percent=None,
        requests_percent=80,
    )


def test_status_names_the_cluster_only_when_several_are_served() -> None:
    line = IncidentLine(id="INC-0007", at=AT, state="investigating", opened_at=OPENED)

    one = present(StatusList(incidents=(line,)), locale="en")
    many = present(StatusList(incidents=(line,), show_cluster=True), locale="en")

    assert one.out.startswith("INC-0007  gpu-node-01 ") and "2026-12-02 09:30" in one.out
    assert "prod-eu/gpu-node-01" in many.out
    assert (one.status, one.err) == (0, "")


def test_no_open_incident_for_the_asked_node_says_which() -> None:
    printed = present(StatusList(incidents=(), asked="prod-eu/gpu-node-01"), locale="en")

    assert printed.out == "no open incidents for prod-eu/gpu-node-01"


def test_top_prints_its_table_and_names_a_cluster_left_out() -> None:
    left_out = ClusterLeftOut(cluster="prod-us", code="kube_unavailable", message="no answer")
    printed = present(
        TopNodes(rows=(_ranked("gpu-node-01"),), failures=(left_out,), asked=2, show_cluster=True),
        locale="en",
    )

    lines = printed.out.splitlines()
    assert lines[0] == "cluster prod-us left out: no answer"
    assert lines[1].split() == ["CLUSTER", "NODE", "PRESSURE", "USED%", "LIMITS%", "REQUESTS%"]
    assert lines[2].split() == ["prod-eu", "gpu-node-01", "yes", "97", "-", "80"]
    assert printed.status == 0


def test_a_top_no_cluster_answered_fails_with_the_reason() -> None:
    left_out = ClusterLeftOut(cluster="prod-eu", code="kube_unavailable", message="refused")

    printed = present(TopNodes(rows=(), failures=(left_out,), asked=1), locale="en")

    assert (printed.out, printed.err, printed.status) == ("", "gpunode: refused", 1)


def test_a_refusal_is_an_error_in_the_readers_language() -> None:
    en = present(Refused(code="no_policy"), locale="en")
    zh = present(Refused(code="no_policy"), locale="zh-CN")

    assert en.status == zh.status == 1 and en.out == zh.out == ""
    assert en.err.startswith("gpunode: ") and "policy" in en.err
    assert zh.err != en.err and not any(w in zh.err for w in ("loaded", "refuses", "every request"))


@pytest.mark.parametrize("locale", ["en", "zh-CN"])
def test_resolve_help_and_the_postmortem_print_on_stdout(locale: str) -> None:
    resolved = present(Resolved(incident_id="INC-0007", by="cli:ops"), locale=locale)
    helped = present(HelpAsked(topic="top"), locale=locale)
    exported = present(Exported(incident_id="INC-0007", markdown="# INC-0007\n"), locale=locale)

    assert "INC-0007" in resolved.out
    assert helped.out.startswith("gpunode top [CLUSTER]")
    assert exported.out == "# INC-0007\n"
    assert {resolved.status, helped.status, exported.status} == {0}


def test_work_done_where_it_was_asked_prints_nothing() -> None:
    assert present(Posted(verb="diagnose"), locale="en").out == ""
