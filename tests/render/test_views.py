from __future__ import annotations

import pytest

from bot.core.diagnosis.findings import Diagnosis
from bot.render.environment import localized_name, macros
from bot.render.views import bar_cells, build_view


@pytest.mark.parametrize(
    ("sizes", "cells"),
    [
        ([1, 1], [20, 20]),
        ([100, 0, 1], [39, 0, 1]),  # a tiny but present part stays visible
        ([3, 3, 3], [14, 13, 13]),
        ([0, 0], [0, 0]),
    ],
)
def test_bar_cells_fill_the_width_and_keep_small_parts_visible(
    sizes: list[int], cells: list[int]
) -> None:
    assert bar_cells(sizes, 40) == cells


def test_the_view_sorts_findings_by_severity_and_splits_audiences(
    seed_diagnosis: Diagnosis,
) -> None:
    v = build_view(seed_diagnosis, top_pods=1)
    assert [f.severity for f in v.findings] == ["critical", "warning", "info"]
    assert len(v.pods) == 1 and v.pods_hidden == 1
    assert [p.audience for p in v.ai_points] == ["ai_team"]
    assert sum(s.cells for s in v.ledger.segments) == 40
    assert v.ledger.used_bytes == v.ledger.total_bytes - v.ledger.free_bytes


def test_a_missing_locale_falls_back_to_english() -> None:
    assert localized_name("slack", "evidence.j2", locale="fr-FR") == "slack/evidence.j2"
    french = macros("slack", "prevention.j2", locale="fr-FR").button()
    assert french == macros("slack", "prevention.j2", locale="en").button() == "Prevention kit"
