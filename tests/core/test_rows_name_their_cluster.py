"""An incident and an action always say which cluster they are in: a row built without one
is refused, so no code path can leave it to a default ('' is only how a row stored before
clusters existed reads back, and the store keeps those bytes as they were)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import BaseModel, ValidationError

from bot.core.model.incidents import Incident
from bot.core.reporting.records import ActionRecord

T0 = datetime(2026, 3, 1, tzinfo=UTC)
INCIDENT = {"id": "INC-0001", "number": 1, "node": "n1", "opened_at": T0, "opened_by": "U1"}
ACTION = {"action_id": "A1", "tier": 1, "requester": "U1", "created_at": T0, "updated_at": T0}


@pytest.mark.parametrize("model, fields", [(Incident, INCIDENT), (ActionRecord, ACTION)])
def test_a_row_without_its_cluster_is_refused(
    model: type[BaseModel], fields: dict[str, object]
) -> None:
    with pytest.raises(ValidationError, match="cluster"):
        model(**fields)


@pytest.mark.parametrize("model, fields", [(Incident, INCIDENT), (ActionRecord, ACTION)])
def test_a_row_stored_before_clusters_reads_back_with_its_empty_cluster(
    model: type[BaseModel], fields: dict[str, object]
) -> None:
    assert model.model_validate({**fields, "cluster": ""}).model_dump()["cluster"] == ""
    assert model(**fields, cluster="prod-eu").model_dump()["cluster"] == "prod-eu"
