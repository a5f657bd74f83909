"""An incident, an action and an audit row always say which cluster they are in: a row
built without one is refused, so no code path can leave it to a default or to the store
('' is how a row stored before clusters existed reads back, and the store keeps those bytes
as they were). A timeline entry names none of its own: it is its incident's, and reads back
from the store with that cluster."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import BaseModel, ValidationError

from bot.core.model.incidents import Incident, TimelineEntry, TimelineRow
from bot.core.reporting.records import ActionRecord, AuditRecord

T0 = datetime(2026, 3, 1, tzinfo=UTC)
INCIDENT = {"id": "INC-0001", "number": 1, "node": "n1", "opened_at": T0, "opened_by": "U1"}
ACTION = {"action_id": "A1", "tier": 1, "requester": "U1", "created_at": T0, "updated_at": T0}
AUDIT = {"at": T0, "actor": "U1", "action": "tier1.request", "decision": "allowed"}
ENTRY = {"incident_id": "INC-0001", "at": T0, "kind": "note", "actor": "U1"}
ROWS = [(Incident, INCIDENT), (ActionRecord, ACTION), (AuditRecord, AUDIT), (TimelineRow, ENTRY)]


@pytest.mark.parametrize("model, fields", ROWS)
def test_a_row_without_its_cluster_is_refused(
    model: type[BaseModel], fields: dict[str, object]
) -> None:
    with pytest.raises(ValidationError, match="cluster"):
        model(**fields)


@pytest.mark.parametrize("model, fields", ROWS)
def test_a_row_stored_before_clusters_reads_back_with_its_empty_cluster(
    model: type[BaseModel], fields: dict[str, object]
) -> None:
    assert model.model_validate({**fields, "cluster": ""}).model_dump()["cluster"] == ""
    assert model(**fields, cluster="prod-eu").model_dump()["cluster"] == "prod-eu"


def test_a_timeline_entry_names_no_cluster_of_its_own() -> None:
    """The store keeps an entry with its incident's cluster; a writer cannot name another."""
    assert "cluster" not in TimelineEntry.model_validate(ENTRY).model_dump()
    with pytest.raises(ValidationError, match="cluster"):
        TimelineEntry.model_validate({**ENTRY, "cluster": "prod-us"})
