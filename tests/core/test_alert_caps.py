"""Alert-driven diagnoses are capped per request, per node and per time window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.core.governance.alert_caps import AlertCaps, over_cap, recent

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
CAPS = AlertCaps(per_request=2, per_node=1, per_window=3, window_s=600)


def ago(seconds: float) -> datetime:
    return NOW - timedelta(seconds=seconds)


@pytest.mark.parametrize(
    ("node", "started", "in_request", "reason"),
    [
        ("n1", [], 0, None),
        ("n1", [("n2", ago(1))], 1, None),
        ("n3", [("n1", ago(1)), ("n2", ago(1))], 2, "per_request"),
        ("n1", [("n1", ago(599))], 0, "per_node"),
        ("n1", [("n1", ago(601))], 0, None),
        ("n4", [("n1", ago(10)), ("n2", ago(20)), ("n3", ago(30))], 0, "per_window"),
        ("n4", [("n1", ago(10)), ("n2", ago(20)), ("n3", ago(700))], 0, None),
    ],
    ids=[
        "first",
        "second-in-request",
        "third-in-request",
        "node-again-in-window",
        "node-again-after-window",
        "window-full",
        "window-full-but-one-expired",
    ],
)
def test_a_diagnosis_starts_only_under_every_cap(
    node: str, started: list[tuple[str, datetime]], in_request: int, reason: str | None
) -> None:
    assert over_cap(node, started, in_request=in_request, now=NOW, caps=CAPS) == reason


def test_recent_keeps_only_the_window() -> None:
    started = [("n1", ago(700)), ("n2", ago(10))]
    assert recent(started, now=NOW, caps=CAPS) == [("n2", ago(10))]
