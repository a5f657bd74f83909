"""Label selectors read as apimachinery's ``labels.Parse`` reads them (``pkg/labels/selector.go``),
including the corners a list over HTTP against the stand-in does not reach (that comparison is
``test_informed_selections``): empty values, integer comparisons, malformed text; and a
workload's ``spec.selector`` written as a query string selects what the object selects."""

from __future__ import annotations

import pytest

from bot.kube.selectors import parse_selector, selects
from bot.kube.surveying import _selector
from gpunode_sandbox.kubesim.selectors import match_label_selector

Labels = dict[str, str]


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        ("k=", {"k": ""}, True),
        ("k=", {"k": "x"}, False),
        ("k=", {}, False),
        ("k!=", {}, True),
        ("k!=v", {}, True),
        ("k notin (a)", {}, True),
        ("k in (a)", {}, False),
        ("k in ()", {"k": ""}, True),
        ("k in ()", {"k": "a"}, False),
        ("k in (a,)", {"k": ""}, True),
        ("k in (a,)", {"k": "a"}, True),
        ("k>1", {"k": "2"}, True),
        ("k>1", {"k": "1"}, False),
        ("k>1", {"k": "x"}, False),
        ("k>1", {}, False),
        ("k<10", {"k": "3"}, True),
        ("k<10", {"k": "-30"}, True),
        ("example.com/role=gpu", {"example.com/role": "gpu"}, True),
        ("  a , !b ", {"a": "1"}, True),
        ("  a , !b ", {"a": "1", "b": ""}, False),
    ],
)
def test_a_requirement_matches_as_the_api_server_matches_it(
    text: str, labels: Labels, expected: bool
) -> None:
    assert selects(parse_selector(text), labels) is expected


@pytest.mark.parametrize(
    "text", ["a b", "in", "a in b", "a,", ",a", "!a=b", "a>b", "(a)", "a in (b", "a=b=c", "a=("]
)
def test_a_malformed_selector_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="label selector"):
        parse_selector(text)


SPECS = [
    {"matchLabels": {"app": "web"}},
    {"matchLabels": {"app": "web", "tier": "front"}},
    {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["front", "back"]}]},
    {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["front"]}]},
    {"matchExpressions": [{"key": "env", "operator": "Exists"}]},
    {
        "matchLabels": {"app": "db"},
        "matchExpressions": [{"key": "team", "operator": "DoesNotExist"}],
    },
]
LABEL_SETS: list[Labels] = [
    {"app": "web", "tier": "front"},
    {"app": "web", "tier": "back", "env": "prod"},
    {"app": "db"},
    {"app": "db", "team": "x", "env": "dev"},
    {},
]


@pytest.mark.parametrize("spec", SPECS)
def test_a_workloads_selector_as_text_selects_what_the_object_selects(spec: dict) -> None:  # type: ignore[type-arg]
    text = _selector({"selector": spec})
    assert text is not None
    for labels in LABEL_SETS:
        assert selects(parse_selector(text), labels) is match_label_selector(spec, labels), labels
