"""What every talking-point builder shares: the point constructor, param picking, findings
indexed by code, one point per finding of a code, and the rule that pods outside the API view
get no point. Pure: no I/O."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bot.core.diagnosis.findings import Audience, Diagnosis, Fact, Finding, TalkingPoint
from bot.core.model.cluster import ClusterView

Params = dict[str, str | int | float]
Codes = dict[str, list[Finding]]


def point(
    audience: Audience, key: str, stance: str, facts: list[Fact], params: Params
) -> TalkingPoint:
    """Validate through the model, so a bad stance or audience fails here, not in a template."""
    return TalkingPoint.model_validate(
        {"audience": audience, "key": key, "stance": stance, "facts": facts, "params": params}
    )


def pick(f: Finding, *keys: str) -> Params:
    """The finding's params named by ``keys``; a missing one is left out, not defaulted."""
    return {k: f.params[k] for k in keys if k in f.params}


#: who hears a point, its sentence key, and its stance toward that team's position
Said = tuple[Audience, str, str]


def per_finding(
    codes: Codes,
    code: str,
    *said: Said,
    keys: Sequence[str],
    when: Callable[[Finding], bool] | None = None,
) -> list[TalkingPoint]:
    """For each finding of ``code`` (that ``when`` keeps), in order: one point per ``said``,
    quoting the finding's facts and the params named by ``keys``."""
    return [
        point(audience, key, stance, f.facts, pick(f, *keys))
        for f in codes.get(code, [])
        if when is None or when(f)
        for audience, key, stance in said
    ]


def by_code(d: Diagnosis) -> Codes:
    """Findings grouped by code, each group in the diagnosis's order."""
    out: Codes = {}
    for f in d.findings:
        out.setdefault(f.code, []).append(f)
    return out


def known_pod(key: str, view: ClusterView | None) -> bool:
    """A pod the API view knows. Cgroups of pods outside the view (gpunode's own diagnostic
    pod, deleted before the view is read, or a pod that just left) get no talking point:
    nobody can act on them."""
    if not key or key.startswith("pod-uid/"):
        return False
    return view is None or any(p.key == key for p in view.pods)


#: findings that say the node's host memory is under pressure (or was, enough to kill)
PRESSURE_CODES = (
    "MEMORY_AVAILABLE_LOW",
    "MEMORY_PRESSURE_STALL",
    "NODE_MEMORY_PRESSURE",
    "SYSTEM_OOM_EVENTS",
    "POD_EVICTED_EVENTS",
)


def host_pressured(d: Diagnosis, codes: Codes) -> bool:
    """The node is short of host memory or under pressure: only then is protection from
    node-pressure kills (priority, Guaranteed QoS) worth a word."""
    return d.verdict.shortage_bytes > 0 or any(codes.get(c) for c in PRESSURE_CODES)
