"""Before/after comparison of two diagnoses of the same node (after an action).

Shows what an action bought: memory moved per ledger category, findings resolved and new,
and the verdict change. Pure; rendered by ``bot.render``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from bot.core.findings import Diagnosis


class LedgerDelta(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    label: str
    before_bytes: int
    after_bytes: int

    @property
    def delta_bytes(self) -> int:
        return self.after_bytes - self.before_bytes


class DiagnosisDiff(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    node: str
    verdict_before: str
    verdict_after: str
    ledger: list[LedgerDelta] = Field(default_factory=list)
    resolved_findings: list[str] = Field(default_factory=list)
    new_findings: list[str] = Field(default_factory=list)
    kept_findings: list[str] = Field(default_factory=list)
    available_before_bytes: int | None = None
    available_after_bytes: int | None = None


def _ledger_map(d: Diagnosis) -> dict[str, int]:
    out: dict[str, int] = {}
    for e in d.ledger.entries:
        key = e.pod_key or e.category
        out[key] = out.get(key, 0) + e.bytes
    return out


def _free_bytes(d: Diagnosis) -> int | None:
    total = [e.bytes for e in d.ledger.entries if e.category == "free"]
    return sum(total) if total else None


def diff_diagnoses(
    before: Diagnosis, after: Diagnosis, *, min_change_bytes: int = 64 << 20
) -> DiagnosisDiff:
    """Ledger rows that moved by at least ``min_change_bytes`` (64 MiB: below that is noise
    between two readings), plus findings by (code, subject)."""
    b, a = _ledger_map(before), _ledger_map(after)
    rows = [
        LedgerDelta(label=key, before_bytes=b.get(key, 0), after_bytes=a.get(key, 0))
        for key in sorted(set(b) | set(a))
        if abs(a.get(key, 0) - b.get(key, 0)) >= min_change_bytes
    ]
    rows.sort(key=lambda r: -abs(r.delta_bytes))
    fb = {f"{f.code}:{f.subject}" for f in before.findings if f.severity != "ok"}
    fa = {f"{f.code}:{f.subject}" for f in after.findings if f.severity != "ok"}
    return DiagnosisDiff(
        node=after.node,
        verdict_before=before.verdict.cause,
        verdict_after=after.verdict.cause,
        ledger=rows,
        resolved_findings=sorted(fb - fa),
        new_findings=sorted(fa - fb),
        kept_findings=sorted(fa & fb),
        available_before_bytes=_free_bytes(before),
        available_after_bytes=_free_bytes(after),
    )
