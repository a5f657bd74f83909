"""The Kubernetes edge: the only package that imports ``kubernetes``.

The sync client runs on each gateway's own threads (one pool per cluster, so a hung API
server holds up only its own calls); every client exception becomes a
``bot.errors.KubeError`` here and nowhere else (``bot.kube.errors``).

Modules: ``connecting`` (ApiClient from settings), ``transport`` (raw JSON requests through
the client), ``errors`` (exception mapping), ``objects`` (API JSON -> core models, pure),
``reading`` (node, pods, owners, events, metrics, discovery), ``surveying`` (the workloads,
gangs and room around a node's pods), ``jobs`` (the diagnostic Job), ``preflight`` (its
RuntimeClass check), ``resident`` (daemonset mode: the node's agent, found through the API,
verified over TLS, asked with the bot's agent-audience token), ``draining`` (cordon,
eviction), ``prioritizing`` (PriorityClass creation), ``patching`` (controller template
patches), ``resizing`` (in-place pod resize),
``scheduling`` (what the scheduler matches, each node's room; pure), ``tallying`` (the fleet
in slim records, summed), ``cutting`` (list pages cut to those records in the page decoder's
process; pure, no models), ``walking`` (JSON list answers walked in pieces; pure),
``selectors`` (label selectors as the API server reads them; pure), ``selections`` (the pods
the plans select, from the pods informer or cut from the API's answer; pure), ``rollouts``
(controllers' rollout facts; pure), ``watching`` (reads that follow an action as it lands),
``gateway`` (``Gateway``, the KubePort), ``permissions`` (``API_CALLS``: every call the
gateway makes, for RBAC checks; ``api_calls(mode)`` per collector mode).
"""

from bot.kube.permissions import API_CALLS

__all__ = ["API_CALLS", "Gateway"]


def __getattr__(name: str) -> object:
    # Gateway imports the client; keep ``import bot.kube`` cheap for the permissions check.
    if name == "Gateway":
        from bot.kube.gateway import Gateway

        return Gateway
    raise AttributeError(name)
