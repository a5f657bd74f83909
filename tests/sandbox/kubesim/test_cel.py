"""The stand-in's CEL evaluates as kube-apiserver's cel-go does where cel-python differs:
heterogeneous equality (cel-spec "Equality"), ``in`` over it, and the strings extension's
``substring``. Expected values are cel-go's answers (cel-spec conformance tests
``comparisons.textproto`` "eq_mixed_types" and the strings extension's tests). Kubernetes
compiles with ``HomogeneousAggregateLiterals``, so mixed-type values come from the data here,
never from a literal like ``[1, 'x']`` (which kube-apiserver would not compile)."""

from __future__ import annotations

from typing import Any

import pytest
from celpy.adapter import json_to_cel

from gpunode_sandbox.kubesim.cel import CelError, evaluate

DOC = {
    "n": 1,
    "s": "x",
    "l": [{"a": 1}, {"a": 2}],
    "m": {"k": None},
    "t": True,
    "f": 1.0,
    "mixed": [1, "x"],
}


def _eval(expression: str) -> Any:
    return evaluate(expression, {"o": json_to_cel(DOC)})


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("1 == 1.0", True),
        ("1u == 1", True),
        ("1 == 'x'", False),
        ("1 != 'x'", True),
        ("o.n == o.s", False),
        ("o.t == 1", False),
        ("null == o.m.k", True),
        ("o.n == null", False),
        ("o.mixed == [1, 2]", False),
        ("[1, 2] == [1.0, 2.0]", True),
        ("[1] == [1, 2]", False),
        ("{'a': 1} == {'a': 1.0}", True),
        ("{'a': 1} == {'a': 'x'}", False),
        ("{1: 'x'} == {1u: 'x'}", True),
        ("o.l == [{'a': 1}, {'a': 2}]", True),
        ("o.m == {'k': null}", True),
        ("o.f == o.n", True),
        ("double('NaN') == double('NaN')", False),
        ("'x' in o.mixed", True),
        ("2 in o.mixed", False),
        ("2 in [1.0, 2.0]", True),
        ("'k' in o.m", True),
        ("1.0 in {1: 'x'}", True),
    ],
)
def test_equality_is_heterogeneous_as_in_cel_go(expression: str, expected: bool) -> None:
    assert bool(_eval(expression)) is expected


def test_an_error_operand_stays_an_error() -> None:
    with pytest.raises(CelError):
        _eval("o.missing == 1")


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("'hello'.substring(1)", "ello"),
        ("'hello'.substring(1, 3)", "el"),
        ("'hello'.substring(5)", ""),
        ("'héllo'.substring(1, 2)", "é"),
    ],
)
def test_substring_counts_code_points(expression: str, expected: str) -> None:
    assert str(_eval(expression)) == expected


@pytest.mark.parametrize(
    ("expression", "says"),
    [
        ("'hello'.substring(6)", "index out of range: 6"),
        ("'hello'.substring(-1)", "index out of range: -1"),
        ("'hello'.substring(0, 6)", "index out of range: 6"),
        ("'hello'.substring(3, 2)", "invalid substring range. start: 3, end: 2"),
    ],
)
def test_substring_out_of_range_is_an_error_not_a_clamp(expression: str, says: str) -> None:
    with pytest.raises(CelError, match=says):
        _eval(expression)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("o.l.all(x, x.a > 5)", False),
        ("o.mixed.all(x, x == 9)", False),
        ("o.mixed.exists(x, x == 'x')", True),
        ("[{'a': 1}, {'b': 2}].exists(x, x.a == 1)", True),
        ("[{'a': 1}, {'b': 2}].all(x, x.a == 2)", False),
    ],
)
def test_all_and_exists_absorb_errors_as_cel_go_does(expression: str, expected: bool) -> None:
    assert bool(_eval(expression)) is expected


@pytest.mark.parametrize(
    "expression",
    ["[{'a': 1}, {'b': 2}].all(x, x.a == 1)", "[{'a': 1}, {'b': 2}].filter(x, x.a == 1)"],
)
def test_an_error_no_false_or_true_absorbs_stays_an_error(expression: str) -> None:
    with pytest.raises(CelError):
        _eval(expression)
