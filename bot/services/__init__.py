"""The use cases, async, over the ports; every surface (Slack, the terminal, Alertmanager)
calls these and nothing deeper.

The use cases speak data. They read and write through the Protocols of ``ports``
(``KubePort``, ``StorePort``, ``ChatPort``, ``HistoryPort``, ``MetricsPort``) and hand what
they have to say to the surface's presenter as data: outcomes (``bot.core.reporting.outcomes``) to
the ``ThreadPort``, chart specs (``bot.core.reporting.charts``) and postmortem drafts to the
``FilesPort``. The presenter (``bot.slack.presenter``) picks the reader's language and words, draws
and renders them. Settings arrive as plain values (``clusters.ClusterConfig``, the doctor's
namespace and lease), built at the edge (``bot.wiring``, ``bot.cli``). The import contract
"The use cases speak data" forbids ``bot.render``, ``bot.store``, ``bot.prom``,
``bot.charts``, ``bot.telemetry`` and ``bot.config`` here, with no exceptions.

One command table (``commands``: ``handle(command, asker, surface)``) carries out every verb
for every surface: the slash command, a mention, and the terminal (``gpunode diagnose``,
``prevent``, ``status``, ``top``, ``timeline``, ``resolve``, ``help``). Which node in which
cluster is one ``NodeRef(cluster, node)``; the services are given the ``ClusterRegistry`` of
the clusters served (one cluster is a registry of one, ``ClusterRegistry.single``).

- diagnose: ``diagnosing`` (the use case: view, Job, analysis; shared by Slack and the
  terminal), ``diagnose`` (``DiagnoseService``: the incident and its thread; Prometheus
  history alongside the Job through its ``HistoryPort``, ``bot.prom.history``);
- act: ``act`` (``ActService``, the facade) over the steps ``acting`` (shared deps:
  ``ActDeps`` of ``ActPorts``, ``ActConfig``, the policy and the clusters),
  ``requesting``, ``applying`` (the Apply handler and the execution), ``approving``,
  ``undoing``, ``reconciling``, ``executing`` (steps through the KubePort) and ``watching``
  (after an action lands: ``RolloutWatched``/``EvictionsWatched`` outcomes);
- chat operations: ``chatops`` (``BotServices`` and the closed-by-default role check),
  ``threads`` (replies and mentions in incident threads), ``timelines`` (the timeline
  export into a thread), ``postmortem`` (the draft itself, as data), ``operations`` (status,
  top, resolve);
- ``alerts``: the Alertmanager intake; ``background``: work started after an ack;
  ``anchoring``: the audit chain's head anchored outside the store; ``doctor``: the
  cluster's checkup rows (the store's are ``bot.store.checkup``'s); ``clusters``: the
  clusters served and the fan-out.
"""
