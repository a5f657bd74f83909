"""Which evictions a PodDisruptionBudget would refuse, judged as the eviction API judges them
(``EvictionREST.Create``, kubernetes/pkg/registry/core/pod/storage/eviction.go). Pure: no I/O.

- A Pending, finished or deleting pod is evicted without a budget check.
- A pod more than one budget selects is refused (500: the eviction subresource does not
  support several budgets).
- A budget whose status has not caught up with its spec (``observedGeneration`` behind) refuses
  every eviction it guards (429) until the disruption controller catches up.
- A pod that is not Ready (not healthy) may go while the budget is whole (``currentHealthy >=
  desiredHealthy``, policy ``IfHealthyBudget``, the default) or always (``AlwaysAllow``); it
  uses up no allowed disruption.
- Otherwise each eviction uses one of ``disruptionsAllowed``; at 0 the API answers 429 "The
  disruption budget NAME needs N healthy pods and has M currently".

``Budgets`` walks a plan's evictions in order and spends the allowances as the API would, so
the second pod of a budget that allows one disruption is refused too. The tier-1 planner
(``bot.core.remedies.planning``) leaves every refused pod alone and names it with its budget,
so no plan counts the relief of an eviction the API would refuse.
"""

from __future__ import annotations

from bot.core.model.actions import ProtectedPod
from bot.core.model.cluster import BudgetInfo, PodInfo
from bot.core.remedies.affinity import selects


def covering(budgets: list[BudgetInfo], pod: PodInfo) -> list[BudgetInfo]:
    """The budgets of the pod's namespace whose selector selects it."""
    return [b for b in budgets if b.namespace == pod.namespace and selects(b.selector, pod.labels)]


class Budgets:
    """The allowances left while a plan's evictions are taken in order."""

    def __init__(self, budgets: list[BudgetInfo] | None) -> None:
        self._budgets = list(budgets or [])
        self._left = {(b.namespace, b.name): b.disruptions_allowed for b in self._budgets}

    def _exempt(self, pod: PodInfo, b: BudgetInfo) -> bool:
        """An unhealthy pod the API lets go without spending an allowed disruption."""
        return not pod.ready and (
            b.unhealthy_pod_eviction_policy == "AlwaysAllow"
            or (b.current_healthy >= b.desired_healthy and b.desired_healthy > 0)
        )

    def refusal(self, pod: PodInfo) -> ProtectedPod | None:
        """Why the eviction API would refuse to evict ``pod`` now (a ``ProtectedPod`` naming
        the budget and its counts), or None when it would evict it. Does not spend."""
        if pod.phase in ("Pending", "Succeeded", "Failed") or pod.deleting:
            return None
        mine = covering(self._budgets, pod)
        if not mine:
            return None
        if len(mine) > 1:
            names = ", ".join(sorted(b.name for b in mine))
            return ProtectedPod(
                pod=pod.key, reason="pdb_blocked", refusal="several_budgets", budget=names
            )
        b = mine[0]
        if not b.current:
            return ProtectedPod(
                pod=pod.key, reason="pdb_blocked", refusal="status_behind", budget=b.name
            )
        if self._exempt(pod, b) or self._left[(b.namespace, b.name)] > 0:
            return None
        return ProtectedPod(
            pod=pod.key,
            reason="pdb_blocked",
            refusal="no_disruption_allowed",
            budget=b.name,
            needs=b.desired_healthy,
            has=b.current_healthy,
        )

    def spend(self, pod: PodInfo) -> None:
        """Record that ``pod`` is evicted: unless exempt, it uses one allowed disruption."""
        if pod.phase in ("Pending", "Succeeded", "Failed") or pod.deleting:
            return
        mine = covering(self._budgets, pod)
        if len(mine) == 1 and not self._exempt(pod, mine[0]):
            self._left[(mine[0].namespace, mine[0].name)] -= 1
