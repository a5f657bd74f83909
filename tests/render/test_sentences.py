"""Every key the analysis can emit has a template sentence (in every locale present).

The key lists are read from where their owners document them, not copied here: finding
codes from the "Codes:" docstrings of ``bot/core/diagnosis/rules/*.py``, talking-point keys from the
``bot/core/reporting/talking_points.py`` docstring, verdict causes from the ``VerdictCause``
Literal, plan warning codes from the string literals the planners append.
"""

from __future__ import annotations

import ast
import re
import typing
from pathlib import Path

import pytest

from bot.core.diagnosis.findings import VerdictCause
from bot.render import environment
from bot.render.sentences import CATEGORIES, defined_keys, macro_name, sentence

Params = dict[str, str | int | float | None]

CORE = Path(__file__).resolve().parents[2] / "bot" / "core"


def finding_codes() -> set[str]:
    codes: set[str] = set()
    for path in sorted((CORE / "diagnosis" / "rules").glob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        if "Codes:" in doc:
            codes |= set(re.findall(r"``([A-Z][A-Z0-9_]{3,})``", doc.split("Codes:", 1)[1]))
    return codes


def emitted_finding_codes() -> set[str]:
    """``code="X"`` literals (and conditional ``"X" if .. else "Y"``) in the rule modules."""
    codes: set[str] = set()
    for path in sorted((CORE / "diagnosis" / "rules").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.keyword) and node.arg == "code":
                for c in ast.walk(node.value):
                    if isinstance(c, ast.Constant) and isinstance(c.value, str):
                        codes.add(c.value)
    return codes


def talking_point_keys() -> set[str]:
    path = CORE / "reporting" / "talking_points.py"
    if not path.exists():
        return set()
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    # the docstring's table: first column of each row is a key like ``ai.oom_killed``
    return set(re.findall(r"^([a-z][a-z0-9_]*\.[a-z0-9_.]+)\s", doc, flags=re.MULTILINE))


def warning_codes() -> set[str]:
    codes: set[str] = set()
    for name in ("planning.py", "caps.py"):
        path = CORE / "remedies" / name
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            fname = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if fname in ("append", "_unavailable"):
                for arg in node.args:
                    if (
                        isinstance(arg, ast.Constant)
                        and isinstance(arg.value, str)
                        and re.fullmatch(r"[a-z][a-z0-9_]+", arg.value)
                    ):
                        codes.add(arg.value)
    return codes


def locales() -> list[str]:
    """Every supported locale: one layout for all, words from each locale's catalog."""
    return sorted(environment.LOCALES)


def test_the_rule_docstrings_and_code_agree_on_the_finding_codes() -> None:
    assert finding_codes(), "no codes documented under bot/core/diagnosis/rules"
    assert emitted_finding_codes() <= finding_codes()


@pytest.mark.parametrize("locale", locales())
@pytest.mark.parametrize(
    ("category", "keys"),
    [
        ("findings", finding_codes),
        ("verdicts", lambda: set(typing.get_args(VerdictCause))),
        ("warnings", warning_codes),
        ("talking_points", talking_point_keys),
    ],
)
def test_every_key_has_a_sentence(category: str, keys: typing.Any, locale: str) -> None:
    defined = defined_keys(category, locale=locale)  # type: ignore[arg-type]
    missing = sorted(k for k in keys() if macro_name(k) not in defined)
    assert missing == []


def test_all_categories_exist_for_the_default_locale() -> None:
    for category in CATEGORIES:
        assert defined_keys(category, locale="en") or category == "talking_points"


def test_a_key_without_a_sentence_falls_back_to_its_code_and_params() -> None:
    out = sentence(
        "findings", "NO_SUCH_CODE", {"pod": "a&b", "x_bytes": 2048}, fmt="mrkdwn", locale="en"
    )
    assert "NO_SUCH_CODE" in out and "a&amp;b" in out and "2.0 KiB" in out


def test_sentence_params_are_escaped_for_each_format() -> None:
    params: Params = {
        "pod": "<!channel>/x_y",
        "controller": "",
        "working_set_bytes": 1024**3,
        "share_percent": 25.0,
        "limit_bytes": 0,
    }
    slack = sentence(
        "findings", "HOST_MEM_NON_GPU_WORKLOAD", params, fmt="mrkdwn", strict=True, locale="en"
    )
    md = sentence(
        "findings", "HOST_MEM_NON_GPU_WORKLOAD", params, fmt="markdown", strict=True, locale="en"
    )
    text = sentence(
        "findings", "HOST_MEM_NON_GPU_WORKLOAD", params, fmt="text", strict=True, locale="en"
    )
    assert "&lt;!channel&gt;/x_y" in slack and "1.0 GiB" in slack
    assert "&lt;!channel&gt;/x\\_y" in md
    assert "<!channel>/x_y" in text


_OWN_LIMIT: Params = {
    "pod": "ml-train/train-llm-0",
    "container": "trainer",
    "working_set_bytes": 69 * 1024**3,
    "limit_bytes": 72 * 1024**3,
    "gpu": 1,
    "limits_known": 1,
    "limits_headroom_bytes": 10 * 1024**3,
    "limits_excess_bytes": 0,
    "available_bytes": 3 * 1024**3,
    "room_bytes": 3 * 1024**3,
}


@pytest.mark.parametrize(
    ("changes", "expected", "absent"),
    [
        (
            {},
            [
                "Container trainer of ml-train/train-llm-0 is at its own limit (69.0 GiB of 72.0",
                "the kubelet will not save it",
                "DataLoader workers",
                "allocatable minus memory limits leaves 10.0 GiB",
                "MemAvailable is 3.0 GiB",
                "at most 3.0 GiB more",
            ],
            ["no room"],
        ),
        (
            {"limits_headroom_bytes": 0, "limits_excess_bytes": 5 * 1024**3, "room_bytes": 0},
            ["memory limits already exceed allocatable by 5.0 GiB", "no room to raise it now"],
            ["at most"],
        ),
        (
            {"gpu": 0},
            ["process data in chunks"],
            ["DataLoader"],
        ),
        (
            {"limits_known": 0, "available_bytes": -1, "room_bytes": -1},
            ["does not show the node's room"],
            ["MemAvailable", "allocatable"],
        ),
    ],
)
def test_the_own_limit_advice_follows_its_numbers(
    changes: dict[str, int], expected: list[str], absent: list[str]
) -> None:
    params: Params = {**_OWN_LIMIT, **changes}
    out = sentence(
        "talking_points", "ai.container_at_own_limit", params, fmt="text", strict=True, locale="en"
    )
    assert [e for e in expected if e not in out] == []
    assert [a for a in absent if a in out] == []


def test_a_tier3_point_says_its_caps_are_per_pod_and_which_replicas_roll_elsewhere() -> None:
    params: Params = {
        "plan_id": "p",
        "target": "Deployment/web/api-gateway",
        "container": "gateway",
        "memory_limit": "4Gi",
        "memory_request": "2Gi",
        "below_working_set": 1,
        "pods_here": 36,
        "pods_elsewhere": 12,
        "omp_num_threads": 0,
    }
    out = sentence(
        "talking_points", "ops.tier3_available", params, fmt="text", strict=True, locale="en"
    )
    assert "memory limit 4Gi, request 2Gi for its container gateway, per pod" in out
    assert "in each of its 36 pods on this node" in out
    assert "rolls its 12 replicas on other nodes too" in out
    assert "CPU" not in out


def test_a_squeezed_page_cache_is_told_as_pressure_with_what_is_available() -> None:
    # the rule fires only when memory is short (tests/core/test_rules_host.py)
    gib = 1024**3
    params: Params = {
        "buff_cache_bytes": 14 * gib,
        "available_bytes": 3 * gib,
        "mem_total_bytes": 251 * gib,
        "share_percent": 5.6,
    }
    out = sentence("findings", "PAGE_CACHE_SQUEEZED", params, fmt="text", strict=True, locale="en")
    assert "severe memory pressure" in out and "3.0 GiB available" in out


def test_a_verdict_on_a_pod_outside_the_api_names_it_readably() -> None:
    params: Params = {"pod": "pod-uid/c03fcb9e-b094-4c1e", "working_set_bytes": 1, "limit_bytes": 2}
    out = sentence(
        "verdicts",
        "container_limit",
        params,
        fmt="mrkdwn",
        subject="pod-uid/c03fcb9e-b094-4c1e",
        strict=True,
        locale="en",
    )
    assert out.startswith("Pod c03fcb9e… (not in the API") and "pod-uid/" not in out


def test_a_container_limit_verdict_does_not_claim_the_node_is_fine() -> None:
    params: Params = {"pod": "ml/a", "working_set_bytes": 1, "limit_bytes": 2}
    out = sentence(
        "verdicts", "container_limit", params, fmt="text", subject="ml/a", strict=True, locale="en"
    )
    assert "not the limit" not in out and "whatever memory the node has left" in out
