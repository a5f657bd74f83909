"""Leader election decided as data: who writes what to the Lease, and when."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.core.governance.leases import LeaseRecord, Observation, decide, expired, observe, released

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def held(holder: str | None, *, rv: str = "7", transitions: int = 3) -> LeaseRecord:
    return LeaseRecord(holder, 15, at(0), at(0), transitions, rv)


def test_no_lease_yet_is_created_with_me_as_holder_and_no_transitions() -> None:
    d = decide(None, me="a", now=at(1), duration_s=15)
    assert d.kind == "create"
    assert d.record == LeaseRecord("a", 15, at(1), at(1), 0, None)


@pytest.mark.parametrize(
    ("holder", "observed_s", "now_s", "kind", "new_holder", "transitions"),
    [
        ("a", 0, 5, "update", "a", 3),  # my own lease: renew, same transitions
        ("b", 0, 5, "wait", None, None),  # b renewed 5 s ago (as I saw it): wait
        ("b", 0, 14.9, "wait", None, None),
        ("b", 0, 15, "update", "a", 4),  # silent for a lease duration: take over
        (None, 0, 0.1, "update", "a", 4),  # released (no holder): take over at once
        ("b", 10, 20, "wait", None, None),  # expiry counts from when I *saw* the version
    ],
    ids=["renew-mine", "live-holder", "just-before-expiry", "expired", "released", "observed-late"],
)
def test_the_decision_follows_client_go_rules(
    holder: str | None,
    observed_s: float,
    now_s: float,
    kind: str,
    new_holder: str | None,
    transitions: int | None,
) -> None:
    d = decide(Observation(held(holder), at(observed_s)), me="a", now=at(now_s), duration_s=15)
    assert d.kind == kind
    if kind == "update":
        assert d.record is not None
        assert (d.record.holder, d.record.transitions) == (new_holder, transitions)
        assert d.record.renew_time == at(now_s)
        assert d.record.resource_version == "7", "an update carries the version it read"


def test_the_expiry_clock_restarts_only_when_the_record_changes() -> None:
    first = observe(None, held("b", rv="7"), now=at(0))
    same = observe(first, held("b", rv="7"), now=at(10))
    renewed = observe(same, held("b", rv="8"), now=at(12))
    assert same.observed_at == at(0)
    assert renewed.observed_at == at(12)
    assert expired(same, now=at(15)) and not expired(renewed, now=at(15))


def test_a_release_clears_the_holder_only_for_the_holder() -> None:
    mine = released(held("a"), me="a")
    assert mine is not None and (mine.holder, mine.duration_s) == (None, 1)
    assert released(held("b"), me="a") is None
