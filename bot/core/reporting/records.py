"""Records of the incident store as frozen models (pure data, no I/O): what the use cases
read and write through ``StorePort`` (``bot.services.ports``), so they live in the core and
``bot.services`` never imports ``bot.store``.

Incidents, timeline entries and approval requests are core models too; this module adds
what only the store keeps: action records with their claim, evidence snapshots with their
hash, and audit rows. Times are timezone-aware; the store keeps them as UTC ISO-8601 text.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Final, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from bot.core.diagnosis.findings import Diagnosis
from bot.core.model.cluster import ClusterView
from bot.core.model.evidence import EvidenceBundle

ActionState = Literal[
    "requested", "approved", "claimed", "running", "succeeded", "failed", "refused", "undone"
]
#: states an action may move to, and the states it may come from (``claimed`` is special:
#: only ``claim_action`` enters it, from ``approved``, or from ``requested`` when no approval
#: is needed)
ACTION_TRANSITIONS: dict[ActionState, tuple[ActionState, ...]] = {
    "approved": ("requested",),
    "running": ("claimed",),
    "succeeded": ("claimed", "running"),
    "failed": ("claimed", "running"),
    "refused": ("requested", "approved", "claimed"),
    "undone": ("succeeded", "failed"),
}
INTERRUPTED_STATES: tuple[ActionState, ...] = ("claimed", "running")


#: an audit row's cluster when its decision was about no one cluster (a read across all of
#: them, an alert's intake, a request gpunode could not read); the audit table keeps it as
#: ``''``, which the hash chain leaves out, as on rows stored before clusters existed
NO_CLUSTER: Final = ""


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ActionRecord(_Row):
    action_id: str
    incident_id: str | None = None
    tier: int = Field(ge=1, le=3)
    plan: dict[str, Any] = Field(default_factory=dict, description="ActionPlan as JSON")
    requester: str
    needs_approval: bool = False
    state: ActionState = "requested"
    created_at: AwareDatetime
    updated_at: AwareDatetime
    claimed_by: str | None = Field(None, description="replica id that won the claim")
    claimed_at: AwareDatetime | None = None
    result: dict[str, Any] | None = None
    message_ts: str | None = Field(None, description="ts of the Slack message with buttons")
    undo_claimed_by: str | None = Field(None, description="replica that won the undo claim")
    undo_claimed_at: AwareDatetime | None = None
    cluster: str = Field(description="the cluster the plan acts on ('' before clusters)")


class EvidenceSnapshot(_Row):
    """One stored evidence capture. The ``*_json`` texts are what was stored and hashed;
    read them through ``bundle``, ``view`` and ``diagnosis`` (parsed once, on first use)."""

    id: int
    incident_id: str
    at: AwareDatetime
    bundle_json: str
    view_json: str
    diagnosis_json: str
    process_tail_json: str = Field(
        "", description="the pod processes the stored bundle left out, summed (summarizing)"
    )
    sha256: str = Field(description="hex digest over bundle, view and diagnosis (see hashing)")

    @cached_property
    def bundle(self) -> EvidenceBundle | None:
        """The evidence bundle (None: a capture stored without one)."""
        return EvidenceBundle.model_validate_json(self.bundle_json) if self.bundle_json else None

    @cached_property
    def view(self) -> ClusterView | None:
        """The cluster view (None: a capture stored without one)."""
        return ClusterView.model_validate_json(self.view_json) if self.view_json else None

    @cached_property
    def diagnosis(self) -> Diagnosis:
        return Diagnosis.model_validate_json(self.diagnosis_json)


class AuditRecord(_Row):
    """One append-only audit row: who did what, where, what was decided and what changed."""

    id: int | None = Field(None, description="assigned by the store")
    at: AwareDatetime
    actor: str = Field(description="Slack user id, 'gpunode' or 'alertmanager'")
    action: str = Field(description="what was attempted, e.g. 'tier1.cordon_evict', 'resolve'")
    channel: str = ""
    incident_id: str | None = None
    action_id: str | None = None
    tier: int | None = None
    decision: str = Field(
        description="allowed | denied | needs_approval | approved | approval_denied | expired "
        "| executed | failed | refused | undone | ..."
    )
    dry_run: dict[str, Any] | list[Any] | None = Field(None, description="dry-run result")
    outcome: str = ""
    changes: dict[str, Any] | list[Any] | None = Field(
        None, description="exactly what was sent to the API (Change records)"
    )
    detail: str = Field("", description="what happened, in English as gpunode or a person said it")
    detail_code: str = Field(
        "",
        description="the detail as a code, when gpunode wrote one: a refusal's or a denial's "
        "(templates/slack/refusals.j2) or one the audit words itself (an approval asked for or "
        "expired, an alert refused, a kit shared); '' for a person's words, an error's text "
        "and rows written before codes",
    )
    detail_params: dict[str, Any] = Field(
        default_factory=dict, description="the raw parameters of ``detail_code``"
    )
    row_hash: str | None = Field(None, description="its link in the hash chain (the store's)")
    cluster: str = Field(
        description="the cluster the decision was made in, as its writer names it (the store "
        "keeps it as given); ``NO_CLUSTER`` for a decision about no one cluster, and how a row "
        "stored before clusters existed reads back"
    )


@dataclass(frozen=True)
class ChainReport:
    """``ok`` with the number of rows checked, or the first bad row and what is wrong."""

    rows: int
    bad_id: int | None = None
    problem: str = ""
    #: rows whose MAC was checked against the audit key (0: no key, or no signed rows)
    signed: int = 0

    @property
    def ok(self) -> bool:
        return not self.problem
