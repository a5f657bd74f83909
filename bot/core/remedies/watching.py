"""After an action: has the change reached the pods? Pure judgement over what the gateway
read (``bot.kube.watching``); the polling lives in ``bot.services.watching``.

A template patch is *applied* only when the controller's desired number of pods run the new
template and are ready: the API server accepting the patch is not enough (a surge pod can sit
Pending, a pod can fail to be created, ``OnDelete`` restarts nothing). An eviction is
*complete* only when the pod is gone (same name with another uid is a replacement).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Verdict = Literal["applied", "rolling", "stalled", "on_delete"]
#: step verbs that restart pods through the controller's template
TEMPLATE_VERBS = ("set_priority_class", "patch_resources")


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PodProgress(_Model):
    key: str
    node: str | None = None
    phase: str = "Pending"
    ready: bool = False
    current: bool = Field(description="runs the controller's current template")
    reason: str | None = Field(None, description="why it is not running (waiting/scheduling)")


class RolloutProgress(_Model):
    kind: str
    namespace: str
    name: str
    desired: int
    strategy: str | None = None
    pods: list[PodProgress] = Field(default_factory=list)
    problems: list[str] = Field(
        default_factory=list, description="FailedCreate / FailedScheduling event messages"
    )

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"


def judge(progress: RolloutProgress) -> Verdict:
    """``applied`` when ``desired`` current pods run and are ready and no old pod is left;
    ``on_delete`` when the strategy waits for deletions and old pods remain; ``stalled``
    when a problem was reported or a pod not yet running the change says why (unschedulable,
    a waiting container, a resize the kubelet skipped); else ``rolling``."""
    current = [p for p in progress.pods if p.current]
    running = [p for p in current if p.phase == "Running" and p.ready]
    old = [p for p in progress.pods if not p.current]
    if len(running) >= progress.desired and not old:
        return "applied"
    if progress.strategy == "OnDelete" and old:
        return "on_delete"
    waiting = [p for p in progress.pods if not (p.current and p.phase == "Running")]
    if progress.problems or any(p.reason for p in waiting):
        return "stalled"
    return "rolling"
