"""The **Details** button under a diagnosis (issue #23 §1: brief by default, details on
demand): what the clicker may see, read from the incident's stored snapshot, never from a
new diagnosis, so the details are exactly the evidence the brief message summarised.

The role is checked at the click (``view``: the details only read), in the incident's
cluster, like every other button. The surface (``bot.slack.details``) words and shows the
result: a modal for the clicker, and, once per snapshot, the full report and the evidence
JSON attached to the thread (``remember_event`` claims the attachment on any replica).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from bot.core.diagnosis.findings import Diagnosis
from bot.core.model.evidence import EvidenceBundle
from bot.core.model.incidents import Incident
from bot.core.reporting.records import EvidenceSnapshot
from bot.errors import GpunodeError
from bot.services.chatops import BotServices, permitted
from bot.services.clusters import incident_at

#: the evidence JSON attached to the thread: bump on any change a reader's parser would see
EVIDENCE_SCHEMA = "gpunode.evidence"
EVIDENCE_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Details:
    """One incident's latest stored diagnosis, for ``user`` who clicked."""

    incident: Incident
    snapshot: EvidenceSnapshot
    diagnosis: Diagnosis
    bundle: EvidenceBundle | None
    #: the clicker's language (the modal) and the thread's (the attached files)
    person_locale: str
    thread_locale: str
    #: True for the first click on this snapshot: the files go to the thread
    attach: bool


async def load_details(
    s: BotServices, incident_id: str, *, user: str, channel: str
) -> Details | None:
    """The details of ``incident_id`` for ``user``; None when the role refuses (told and
    audited by ``permitted``). GpunodeError when there is no such incident or no evidence."""
    found = await s.store.get_incident(incident_id)
    if found is None:
        raise GpunodeError(
            f"there is no incident {incident_id}; `/gpunode status` lists the open incidents",
            code="not_found",
            key="incident_not_found",
            params={"incident": incident_id},
        )
    if not await permitted(
        s, "view", user=user, channel=channel, cluster=incident_at(s.clusters, found).cluster
    ):
        return None
    snap = await s.store.latest_snapshot(found.id)
    if snap is None or not snap.diagnosis_json:
        raise GpunodeError(
            f"{found.id} has no stored evidence yet: run `/gpunode diagnose {found.node}` first",
            code="no_evidence",
            key="incident_no_evidence",
            params={"incident": found.id, "node": found.node},
        )
    diagnosis = Diagnosis.model_validate_json(snap.diagnosis_json)
    attach = await s.store.remember_event(f"details-files:{found.id}:{snap.id}", at=s.clock())
    return Details(
        incident=found,
        snapshot=snap,
        diagnosis=diagnosis,
        bundle=snap.bundle,
        person_locale=await s.diagnose.locales.for_person(channel, user),
        thread_locale=s.diagnose.locales.for_thread(found),
        attach=attach,
    )


def evidence_document(details: Details) -> str:
    """The evidence JSON attached to the thread: the schema and its version first, then the
    stored snapshot's identity (id, time, SHA-256) and its diagnosis and bundle as stored."""
    d = details
    document: dict[str, Any] = {
        "schema": EVIDENCE_SCHEMA,
        "schema_version": EVIDENCE_SCHEMA_VERSION,
        "incident": d.incident.id,
        "cluster": d.incident.cluster,
        "node": d.incident.node,
        "snapshot": {
            "id": d.snapshot.id,
            "at": d.snapshot.at.isoformat(),
            "sha256": d.snapshot.sha256,
        },
        "diagnosis": json.loads(d.diagnosis.model_dump_json()),
        "bundle": json.loads(d.bundle.model_dump_json()) if d.bundle is not None else None,
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
