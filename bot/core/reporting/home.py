"""The Home tab's contents (issue #23 §1): open incidents, the approvals waiting for the
person looking, recent diagnoses. Each list is bounded; what does not fit is counted, so the
view stays within Slack's 100 blocks whatever the store holds. Pure data; the use case that
gathers it is ``bot.services.home``, the view is ``bot.render.home``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field

#: the most rows each section shows
MAX_INCIDENTS = 10
MAX_APPROVALS = 10
MAX_DIAGNOSES = 5
T = TypeVar("T")


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class HomeIncident(_Row):
    incident_id: str
    node: str = Field(description="as messages name it: [cluster/]node")
    state: str
    opened_at: datetime
    channel: str
    cause: str | None = Field(None, description="the latest diagnosis' verdict cause")


class HomeApproval(_Row):
    approval_id: str
    incident_id: str
    node: str
    tier: int
    requester: str
    expires_at: datetime
    remaining: int = Field(description="approvals still needed")
    channel: str


class HomeDiagnosis(_Row):
    incident_id: str
    node: str
    at: datetime
    cause: str
    state: str


class HomeSummary(_Row):
    user: str
    at: datetime
    incidents: tuple[HomeIncident, ...] = ()
    more_incidents: int = 0
    approvals: tuple[HomeApproval, ...] = ()
    more_approvals: int = 0
    diagnoses: tuple[HomeDiagnosis, ...] = ()
    #: False when no policy is loaded: nobody can approve anything
    can_approve: bool = True


def bounded(items: Sequence[T], limit: int) -> tuple[tuple[T, ...], int]:
    """The first ``limit`` items and how many were left out."""
    return tuple(items[:limit]), max(0, len(items) - limit)
