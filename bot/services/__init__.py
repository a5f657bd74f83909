"""The use cases, async, over the ports (``ports``: ``KubePort``, ``ChatPort``) and the store;
every surface (Slack, the terminal, Alertmanager) calls these and nothing deeper.

- diagnose: ``diagnosing`` (the use case: view, Job, analysis; shared by Slack and the
  terminal), ``diagnose`` (``DiagnoseService``: the incident and its thread), ``history``
  (Prometheus history alongside the Job);
- act: ``act`` (``ActService``, the facade) over the steps ``acting`` (shared deps),
  ``requesting``, ``applying`` (the Apply handler and the execution), ``approving``,
  ``undoing``, ``reconciling``, ``executing`` (steps through the KubePort) and ``watching``
  (after an action lands);
- chat operations: ``chatops`` (``BotServices`` and the closed-by-default role check),
  ``threads`` (replies and mentions in incident threads), ``timelines`` (the timeline
  export into a thread), ``postmortem`` (the draft itself), ``operations`` (status, top,
  resolve);
- ``alerts``: the Alertmanager intake; ``background``: work started after an ack.
"""
