"""Before/after comparison of two diagnoses of the same node (after an action).

Shows what an action bought: memory moved per ledger category, findings resolved and new,
and the verdict change. Pure; rendered by ``bot.render``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from bot.core.diagnosis.findings import Diagnosis, Finding
from bot.core.model.workload_names import workload_of


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


def _subject(subject: str | None) -> str:
    """A pod subject as its workload (a replaced pod is the same); others as they are."""
    text = subject or ""
    if "/" in text and not text.startswith("pod-uid/"):
        return workload_of(text)
    return text


def finding_key(f: Finding) -> str:
    """What makes two readings the same finding: its code and its workload (not the pod's
    name or uid, which a replacement changes); a kernel OOM record is the same record by its
    PID and command, whatever pod (or uid, once the pod is gone) it is attributed to now and
    however its wall time is re-derived from uptime."""
    if f.code == "KERNEL_OOM_KILL":
        return f"{f.code}:{f.params.get('pid')}:{f.params.get('comm')}"
    return f"{f.code}:{_subject(f.subject)}"


def _keyed(d: Diagnosis) -> dict[str, str]:
    """key -> "CODE:subject" as the diff shows it (the subject by its workload)."""
    out: dict[str, str] = {}
    for f in d.findings:
        if f.severity == "ok":
            continue
        pod = f.params.get("pod") if f.code == "KERNEL_OOM_KILL" else None
        subject = _subject(str(pod)) if pod else _subject(f.subject)
        out[finding_key(f)] = f"{f.code}:{subject}"
    return out


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
    fb = _keyed(before)
    fa = _keyed(after)
    shown = fa | fb  # a kept finding reads as first seen (a gone pod keeps its workload name)
    return DiagnosisDiff(
        node=after.node,
        verdict_before=before.verdict.cause,
        verdict_after=after.verdict.cause,
        ledger=rows,
        resolved_findings=sorted(fb[k] for k in set(fb) - set(fa)),
        new_findings=sorted(fa[k] for k in set(fa) - set(fb)),
        kept_findings=sorted(shown[k] for k in set(fa) & set(fb)),
        available_before_bytes=_free_bytes(before),
        available_after_bytes=_free_bytes(after),
    )
