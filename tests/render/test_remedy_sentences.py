"""Every note and warning code the remedy modules emit has a sentence that renders with the
params they give (strict: no fallback), in every format."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from bot.render.sentences import defined_keys, macro_name, sentence

CORE = Path(__file__).resolve().parents[2] / "bot" / "core" / "remedies"
MODULES = ("safety.py", "rollouts.py", "resizes.py", "planning.py", "caps.py")


def _emitted(kind: str) -> set[str]:
    """``PlanNote(code="x")`` codes (kind notes) or warning literals appended or listed
    (kind warnings) in the remedy modules."""
    out: set[str] = set()
    for name in MODULES:
        tree = ast.parse((CORE / name).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if kind == "notes" and isinstance(node, ast.keyword) and node.arg == "code":
                out |= {
                    c.value
                    for c in ast.walk(node.value)
                    if isinstance(c, ast.Constant) and isinstance(c.value, str)
                }
            # warnings: appended anywhere, or listed in resizes.py's in-place plan
            in_list = isinstance(node, ast.List) and name == "resizes.py"
            appended = isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "append"
            if kind == "warnings" and (in_list or appended):
                items = node.elts if isinstance(node, ast.List) else getattr(node, "args", [])
                out |= {
                    c.value
                    for c in items
                    if isinstance(c, ast.Constant)
                    and isinstance(c.value, str)
                    and re.fullmatch(r"[a-z][a-z0-9_]+", c.value)
                }
    return out


def test_every_note_code_has_a_sentence() -> None:
    codes = _emitted("notes")
    assert {"gang_kept", "job_eviction_counts", "surge_does_not_fit", "restart_pending"} <= codes
    assert sorted(c for c in codes if macro_name(c) not in defined_keys("notes", locale="en")) == []  # type: ignore[arg-type]


def test_every_remedy_warning_has_a_sentence() -> None:
    codes = _emitted("warnings")
    assert {"in_place_only_this_pod", "restarts_cannot_return"} <= codes
    assert (
        sorted(c for c in codes if macro_name(c) not in defined_keys("warnings", locale="en")) == []
    )


SAMPLES = [
    (
        "gang_kept",
        {
            "gang": "PyTorchJob a/b",
            "kind": "PyTorchJob",
            "group": "kubeflow.org",
            "here": "w-0",
            "here_count": 1,
            "elsewhere": None,
            "elsewhere_count": 0,
            "coordinators": None,
        },
    ),
    (
        "job_eviction_counts",
        {"job": "a/j", "pods": "j-1", "count": 1, "backoff_limit": None, "failed": None},
    ),
    (
        "surge_does_not_fit",
        {"workload": "Deployment/a/b", "surge": 1, "unavailable": 1, "pod": "b-1"},
    ),
    ("gitops_reverts", {"workload": "Deployment/a/b", "tool": "Flux", "app": None}),
    ("restart_pending", {"pod": "a/p", "cordoned": None, "preempt": None}),
]


@pytest.mark.parametrize(("code", "params"), SAMPLES)
@pytest.mark.parametrize("fmt", ["mrkdwn", "markdown", "text"])
def test_note_sentences_render_with_unknown_parts_left_out(
    code: str, params: dict[str, str | int | None], fmt: str
) -> None:
    text = sentence("notes", code, params, fmt=fmt, strict=True, locale="en")  # type: ignore[arg-type]
    assert "n/a" not in text and "None" not in text
