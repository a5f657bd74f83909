from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.core.model.clusters import DEFAULT_CLUSTER
from bot.core.model.incidents import (
    IncidentStateError,
    TimelineEntry,
    find_joinable,
    format_incident_id,
    open_incident,
    order_timeline,
    parse_incident_number,
    resolve_incident,
    start_mitigation,
)

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
#: the one cluster of a settings file that names none
C = DEFAULT_CLUSTER


@pytest.mark.parametrize(
    ("number", "text"), [(1, "INC-0001"), (7, "INC-0007"), (9999, "INC-9999"), (12345, "INC-12345")]
)
def test_incident_ids_have_at_least_four_digits(number: int, text: str) -> None:
    assert format_incident_id(number) == text
    assert parse_incident_number(text) == number


@pytest.mark.parametrize("text", ["", "INC-", "INC-0", "0", "abc", "INC-7x", "-7", "1e3"])
def test_malformed_incident_ids_are_not_numbers(text: str) -> None:
    assert parse_incident_number(text) is None


def test_a_new_incident_starts_investigating_with_an_opened_entry() -> None:
    incident, entry = open_incident(
        3, "gpu-node-01", at=T0, opened_by="U1", cluster=C, channel="C1", locale="en"
    )
    assert (incident.id, incident.state, incident.is_open) == ("INC-0003", "investigating", True)
    assert (entry.kind, entry.actor, entry.incident_id) == ("opened", "U1", "INC-0003")


def test_a_diagnose_joins_the_open_incident_of_the_node() -> None:
    first, _ = open_incident(1, "gpu-node-01", at=T0, opened_by="U1", cluster=C, locale="en")
    other, _ = open_incident(2, "gpu-node-02", at=T0, opened_by="U1", cluster=C, locale="en")
    assert find_joinable([other, first], "gpu-node-01", C) == first


def test_a_resolved_incident_is_not_rejoined() -> None:
    first, _ = open_incident(1, "gpu-node-01", at=T0, opened_by="U1", cluster=C, locale="en")
    resolved, _ = resolve_incident(first, at=T0 + timedelta(hours=1), actor="U1")
    assert find_joinable([resolved], "gpu-node-01", C) is None


def test_an_action_moves_investigating_to_mitigating_and_repeats_are_harmless() -> None:
    incident, _ = open_incident(1, "n1", at=T0, opened_by="U1", cluster=C, locale="en")
    mitigating, entry = start_mitigation(incident, at=T0, actor="U2", text="tier 1 requested")
    assert mitigating.state == "mitigating"
    assert entry.data["from"] == "investigating"
    again, _ = start_mitigation(mitigating, at=T0, actor="U2", text="tier 2 requested")
    assert again.state == "mitigating"


def test_resolving_twice_is_refused() -> None:
    incident, _ = open_incident(1, "n1", at=T0, opened_by="U1", cluster=C, locale="en")
    resolved, entry = resolve_incident(
        incident, at=T0 + timedelta(minutes=5), actor="U1", note="ok"
    )
    assert (resolved.state, resolved.resolved_at, entry.kind) == (
        "resolved",
        T0 + timedelta(minutes=5),
        "resolved",
    )
    with pytest.raises(IncidentStateError, match="already resolved"):
        resolve_incident(resolved, at=T0 + timedelta(minutes=6), actor="U1")


def test_a_resolved_incident_cannot_be_mitigated() -> None:
    incident, _ = open_incident(1, "n1", at=T0, opened_by="U1", cluster=C, locale="en")
    resolved, _ = resolve_incident(incident, at=T0, actor="U1")
    with pytest.raises(IncidentStateError, match="diagnose again"):
        start_mitigation(resolved, at=T0, actor="U1", text="late click")


def test_naive_times_are_refused_by_the_models() -> None:
    with pytest.raises(ValueError, match="timezone"):
        open_incident(1, "n1", at=datetime(2026, 3, 1), opened_by="U1", cluster=C, locale="en")


def test_timeline_orders_by_time_then_opened_first_resolved_last_then_sequence() -> None:
    def entry(kind: str, minutes: int, seq: int) -> TimelineEntry:
        return TimelineEntry(
            incident_id="INC-0001",
            at=T0 + timedelta(minutes=minutes),
            kind=kind,
            actor="U1",
            seq=seq,  # type: ignore[arg-type]
        )

    entries = [
        entry("resolved", 5, 1),
        entry("note", 5, 2),
        entry("finding", 0, 9),
        entry("opened", 0, 10),
        entry("diagnosis", 0, 3),
    ]
    ordered = [(e.kind, e.seq) for e in order_timeline(entries)]
    assert ordered == [
        ("opened", 10),
        ("diagnosis", 3),
        ("finding", 9),
        ("note", 2),
        ("resolved", 1),
    ]
