"""The time dimension of the verdict: the leading consumer's growth over the history window.

Not one of ``ALL_RULES`` (those judge a snapshot): ``attach`` runs after ``analyze``. It
merges the snapshot's markers (kernel log, evictions) with Prometheus' (a History of source
``snapshot`` when there is no Prometheus), and ``apply_history`` adds the finding, quotes
the growth in the verdict's params (``growth_rate_gib_per_h``, ``growing_since_at``,
``exhaustion_s``) when the growing series is the consumer the verdict blames, and attaches
the history (series and markers) for charts.

Codes:

- ``MEMORY_GROWTH``: a consumer grows (``kind`` growth: rate, since when, time until the node
  runs out at that rate; critical when that is under 6 h, else warning) or jumped (``kind``
  step: by how much, when; warning).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.core.diagnosis.findings import Diagnosis, Fact, Finding, Severity
from bot.core.diagnosis.history import (
    GIB,
    History,
    Marker,
    growth_of,
    leading_series_key,
    markers_from,
)
from bot.core.model.cluster import ClusterView
from bot.core.model.evidence import EvidenceBundle

_SOON_S = 6 * 3600  # runs out within a working shift: critical


def growth_finding(history: History, key: str | None) -> Finding | None:
    growth = growth_of(history, key)
    if growth is None or growth.kind not in ("growth", "step"):
        return None
    source = next((s.source for s in history.series if s.key == growth.series_key), "prometheus")
    soon = growth.exhaustion_s is not None and growth.exhaustion_s < _SOON_S
    severity: Severity = "critical" if growth.kind == "growth" and soon else "warning"
    rate_gib_h = round(growth.rate_bytes_per_h / GIB, 1)
    return Finding(
        code="MEMORY_GROWTH",
        severity=severity,
        subject=growth.label,
        facts=[
            Fact(
                key="history.rate_gib_per_h",
                label="growth rate (GiB/h)",
                value=rate_gib_h,
                unit="count",
                source=source,
            ),
            Fact(
                key="history.since",
                label="since",
                value=growth.since.isoformat(),
                unit="text",
                source=source,
            ),
            Fact(
                key="history.current_bytes",
                label="now",
                value=growth.current_bytes,
                unit="bytes",
                source=source,
            ),
        ],
        params={
            "consumer": growth.label,
            "kind": growth.kind,
            "since_at": growth.since.isoformat(),
            "before_window": int(growth.before_window),
            "rate_gib_per_h": rate_gib_h,
            "jump_bytes": round(growth.jump_bytes),
            "current_bytes": round(growth.current_bytes),
            "exhaustion_s": round(growth.exhaustion_s) if growth.exhaustion_s is not None else -1,
            "leading": int(growth.series_key == key),
        },
    )


def apply_history(diagnosis: Diagnosis, history: History) -> Diagnosis:
    """The diagnosis with its history attached, the growth finding and the verdict's params."""
    verdict = diagnosis.verdict
    key = leading_series_key(verdict.cause, verdict.subject, dict(verdict.params))
    finding = growth_finding(history, key) if history.series else None
    growth = growth_of(history, key) if finding is not None else None
    update: dict[str, object] = {"history": history.model_copy(update={"growth": growth})}
    if finding is not None:
        update["findings"] = [finding, *diagnosis.findings]
        if finding.params["leading"] == 1 and finding.params["kind"] == "growth":
            params = dict(verdict.params)
            params.update(
                growth_rate_gib_per_h=finding.params["rate_gib_per_h"],
                growing_since_at=finding.params["since_at"],
                exhaustion_s=finding.params["exhaustion_s"],
            )
            update["verdict"] = verdict.model_copy(update={"params": params})
    return diagnosis.model_copy(update=update)


def attach(
    diagnosis: Diagnosis,
    history: History | None,
    *,
    bundle: EvidenceBundle | None,
    view: ClusterView | None,
    now: datetime,
) -> Diagnosis:
    """The diagnosis with the history (or, without Prometheus, the snapshot's markers)."""
    snapshot_markers = markers_from(bundle, view)
    if history is None:
        history = History(
            node=diagnosis.node,
            source="snapshot",
            start=min([m.at for m in snapshot_markers] + [now]),
            end=now,
            step_s=0,
        )
    merged = sorted(
        [*snapshot_markers, *_unduplicated(history.markers, snapshot_markers, history.step_s)],
        key=lambda m: (m.at, m.kind, m.subject),
    )
    history = history.model_copy(update={"markers": merged})
    diagnosis = apply_history(diagnosis, history)
    gaps = [g for g in history.gaps if g not in diagnosis.unverified]
    return diagnosis.model_copy(update={"unverified": [*diagnosis.unverified, *gaps]})


def _unduplicated(prom: list[Marker], kernel: list[Marker], step_s: float) -> list[Marker]:
    """Prometheus markers that the kernel log did not already record (within two steps)."""
    slack = timedelta(seconds=max(2 * step_s, 60))
    return [
        m for m in prom if not any(k.kind == m.kind and abs(k.at - m.at) <= slack for k in kernel)
    ]
