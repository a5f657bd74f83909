"""What changed between two diagnoses of one incident, in one line (issue #23 §1: "a
re-diagnosis edits the pinned current state, and the thread keeps a one-line diff").

``state_change(before, after)`` names the largest movers of the node's memory ledger (pods by
their workload, so a replaced pod is the same line; free memory left out, it is the sum of the
others), the OOM kills that are new since ``before`` (keyed as the before/after diff keys them:
a replaced pod's old kill is not new), and the verdict when it changed. Pure.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from bot.core.diagnosis.findings import Diagnosis
from bot.core.model.workload_names import workload_of
from bot.core.reporting.diffing import diff_diagnoses

#: the finding codes that are one OOM kill each
KILL_CODES = ("KERNEL_OOM_KILL", "CONTAINER_OOM_KILLED")
#: how many ledger movers the line names
MOVERS = 2


class Mover(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    label: str = Field(description="a workload (ns/name) or a ledger category")
    delta_bytes: int


class StateChange(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    since: datetime = Field(description="when the earlier diagnosis was collected")
    movers: tuple[Mover, ...] = ()
    new_kills: int = 0
    verdict_before: str
    verdict_after: str

    @property
    def verdict_changed(self) -> bool:
        return self.verdict_before != self.verdict_after

    @property
    def quiet(self) -> bool:
        """Nothing moved, nothing new, the same verdict."""
        return not self.movers and not self.new_kills and not self.verdict_changed


def state_change(before: Diagnosis, after: Diagnosis, *, movers: int = MOVERS) -> StateChange:
    diff = diff_diagnoses(before, after)
    by_label: dict[str, int] = {}
    for row in diff.ledger:
        if row.label == "free":
            continue
        label = workload_of(row.label) if "/" in row.label else row.label
        by_label[label] = by_label.get(label, 0) + row.delta_bytes
    ranked = sorted(by_label.items(), key=lambda kv: (-abs(kv[1]), kv[0]))
    return StateChange(
        since=before.collected_at,
        movers=tuple(Mover(label=k, delta_bytes=v) for k, v in ranked[:movers] if v),
        new_kills=sum(1 for key in diff.new_findings if key.split(":", 1)[0] in KILL_CODES),
        verdict_before=diff.verdict_before,
        verdict_after=diff.verdict_after,
    )
