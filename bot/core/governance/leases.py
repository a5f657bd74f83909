"""Leader election over a Kubernetes Lease, decided as data (pure: no clock, no I/O).

The rules are client-go's ``leaderelection`` package's, over ``coordination.k8s.io/v1``:
- a Lease with no holder, or whose holder has not renewed it for ``leaseDurationSeconds``
  *as this replica observed it*, may be taken over: set ``holderIdentity`` to me,
  ``acquireTime`` and ``renewTime`` to now, and ``leaseTransitions`` + 1;
- the holder renews by writing ``renewTime`` (same holder, same transitions);
- every write carries the ``resourceVersion`` that was read, so of two replicas racing on
  one version the API server accepts one and answers the other 409 Conflict.
Expiry is judged on the *local* time at which this replica last saw the record change
(``observed_at``), never on the holder's ``renewTime``: clocks of two nodes may disagree,
the local monotonic view of "nothing changed for a lease duration" may not.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Literal


@dataclass(frozen=True)
class LeaseRecord:
    """The fields of a Lease that election reads and writes."""

    holder: str | None
    duration_s: int
    acquire_time: datetime | None
    renew_time: datetime | None
    transitions: int
    #: the version read (None for a Lease not created yet)
    resource_version: str | None = None


@dataclass(frozen=True)
class Observation:
    """The record as last read, and when (local clock) it was first seen in that version."""

    record: LeaseRecord
    observed_at: datetime


@dataclass(frozen=True)
class Decision:
    """``create`` or ``update`` with ``record`` (update carries the version read), or
    ``wait``: someone else holds a live Lease."""

    kind: Literal["create", "update", "wait"]
    record: LeaseRecord | None = None


def observe(previous: Observation | None, current: LeaseRecord, *, now: datetime) -> Observation:
    """Restart the expiry clock only when the record changed (a renewal changes it)."""
    if previous is not None and _same(previous.record, current):
        return previous
    return Observation(current, now)


def _same(a: LeaseRecord, b: LeaseRecord) -> bool:
    return (a.holder, a.renew_time, a.transitions, a.resource_version) == (
        b.holder,
        b.renew_time,
        b.transitions,
        b.resource_version,
    )


def expired(observation: Observation, *, now: datetime) -> bool:
    record = observation.record
    if not record.holder:
        return True
    return observation.observed_at + timedelta(seconds=record.duration_s) <= now


def decide(observation: Observation | None, *, me: str, now: datetime, duration_s: int) -> Decision:
    """What this replica writes next (``observation`` None: there is no Lease yet)."""
    if observation is None:
        return Decision(
            "create",
            LeaseRecord(me, duration_s, acquire_time=now, renew_time=now, transitions=0),
        )
    current = observation.record
    if current.holder == me:
        return Decision("update", replace(current, renew_time=now, duration_s=duration_s))
    if not expired(observation, now=now):
        return Decision("wait")
    return Decision(
        "update",
        replace(
            current,
            holder=me,
            duration_s=duration_s,
            acquire_time=now,
            renew_time=now,
            transitions=current.transitions + 1,
        ),
    )


def released(current: LeaseRecord, *, me: str) -> LeaseRecord | None:
    """What the holder writes when it stops (client-go's ReleaseOnCancel): no holder, a
    one-second duration, so the next replica takes over at once. None if not mine."""
    if current.holder != me:
        return None
    return replace(current, holder=None, duration_s=1)
