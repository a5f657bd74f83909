"""Connect a bot's edges to its ``Metrics``: the Slack client, the Kubernetes gateway, the
store. Each edge offers a hook of its own (no import of the edges here, so this package
stays a leaf): an edge that lacks its hook (a test's fake) is simply not observed.

- Slack: ``bot.slack.chatting.ObservedWebClient.observer`` hears every Web API call;
- Kubernetes: ``Gateway.observe_api`` hears every API request's verb, resource and status;
- store: ``Store.observe_latency`` hears every operation's duration, and
  ``pending_approvals`` is counted at each scrape (``gpunode_approvals_pending``).
"""

from __future__ import annotations

from typing import Any

from bot.telemetry.metrics import Metrics


def instrument(
    metrics: Metrics, *, store: Any, client: Any, kube: Any, replica_id: str
) -> list[str]:
    """Attach what can be attached; the names of the edges now observed. Without a leader
    election this replica is the only one, so it starts as the Lease holder; an election
    corrects that through ``metrics.set_leader``."""
    observed = []
    if hasattr(client, "observer"):

        def slack(method: str, status: int | None, error: str | None) -> None:
            metrics.slack_api_call(method, status=status, error=error)

        client.observer = slack
        observed.append("slack")
    if callable(getattr(kube, "observe_api", None)):
        kube.observe_api(metrics.kube_api_call)
        observed.append("kube")
    if hasattr(store, "observe_latency"):
        store.observe_latency = metrics.store_operation
        observed.append("store")
    if callable(getattr(store, "pending_approvals", None)):

        async def approvals() -> None:
            metrics.set_approvals_pending(len(await store.pending_approvals()))

        metrics.on_scrape(approvals)
        observed.append("approvals")
    metrics.set_leader(replica_id, True)
    return observed
