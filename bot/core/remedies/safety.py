"""Tier 1 on real GPU fleets: what an eviction does beyond the pod. Pure: no I/O.

- gpunode never evicts itself: its own pods (its namespace, or ``app.kubernetes.io/name`` /
  ``part-of: gpunode``) are protected.
- A gang member is never evicted silently: it is protected, and a note names the gang, its
  members here and on other nodes, its coordinating CPU-only members (launcher, head,
  driver...) and what evicting a member would do to the gang (sentence per gang kind).
- A ``batch/v1`` Job pod that is evicted fails (phase ``Failed`` with the ``DisruptionTarget``
  condition). The Job controller counts that failure against ``spec.backoffLimit`` unless the
  Job's ``podFailurePolicy`` has a rule ``action: Ignore`` on ``onPodConditions`` type
  ``DisruptionTarget`` (stable since 1.31; such a policy requires ``restartPolicy: Never``).
  Kubernetes docs: "Handling retriable and non-retriable pod failures with Pod failure
  policy" and the Job ``podFailurePolicy`` API reference.
"""

from __future__ import annotations

from bot.core.model.actions import PlanNote
from bot.core.model.cluster import ClusterView, PodInfo
from bot.core.model.gangs import COORDINATOR_ROLES, Gang, api_group, gang_of, members, role_of

SELF_NAME = "gpunode"
SELF_LABELS = ("app.kubernetes.io/name", "app.kubernetes.io/part-of")
#: names listed in one note before "and N more" (a Slack section holds 3,000 characters)
MAX_NAMES = 6


def is_self(pod: PodInfo, bot_namespace: str | None) -> bool:
    """gpunode's own pods: its namespace, or its name label."""
    if bot_namespace and pod.namespace == bot_namespace:
        return True
    return any(pod.labels.get(label) == SELF_NAME for label in SELF_LABELS)


def _names(items: list[str]) -> str:
    shown = items[:MAX_NAMES]
    more = len(items) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more else "")


def gang_notes(view: ClusterView, here: list[PodInfo]) -> list[PlanNote]:
    """One ``gang_kept`` note per gang with members among ``here`` (protected pods)."""
    gangs: dict[str, Gang] = {}
    for pod in here:
        if (gang := gang_of(pod)) is not None:
            gangs.setdefault(gang.key, gang)
    notes = []
    for key in sorted(gangs):
        gang = gangs[key]
        on_node = members(gang, list(view.pods))
        elsewhere = [
            p for p in members(gang, list(view.gang_pods)) if p.node_name != view.node.name
        ]
        coordinators = [
            f"{p.name} ({role})"
            for p in on_node
            if (role := role_of(p)) in COORDINATOR_ROLES and p.gpu_request == 0
        ]
        notes.append(
            PlanNote(
                code="gang_kept",
                params={
                    "gang": gang.label,
                    "kind": gang.kind,
                    "group": gang.group,
                    "here": _names([p.name for p in on_node]),
                    "here_count": len(on_node),
                    "elsewhere": _names(
                        [f"{p.name} on {p.node_name or 'no node'}" for p in elsewhere]
                    )
                    or None,
                    "elsewhere_count": len(elsewhere),
                    "coordinators": _names(coordinators) or None,
                },
            )
        )
    return notes


def job_notes(view: ClusterView, evicted: list[PodInfo]) -> list[PlanNote]:
    """A note per ``batch/v1`` Job whose pods tier 1 evicts: the eviction counts against
    its ``backoffLimit`` unless its podFailurePolicy ignores ``DisruptionTarget``."""
    jobs: dict[tuple[str, str], list[str]] = {}
    for pod in evicted:
        owner = next(
            (o for o in pod.owners if o.kind == "Job" and api_group(o.api_version) == "batch"),
            None,
        )
        if owner is not None:
            jobs.setdefault((pod.namespace, owner.name), []).append(pod.name)
    facts = {(w.namespace, w.name): w for w in view.workloads if w.kind == "Job"}
    notes = []
    for (ns, name), pods in sorted(jobs.items()):
        info = facts.get((ns, name))
        ignored = info is not None and info.ignores_disruption
        notes.append(
            PlanNote(
                code="job_disruption_ignored" if ignored else "job_eviction_counts",
                params={
                    "job": f"{ns}/{name}",
                    "pods": _names(pods),
                    "count": len(pods),
                    "backoff_limit": info.backoff_limit if info else None,
                    "failed": info.failed if info else None,
                },
            )
        )
    return notes
