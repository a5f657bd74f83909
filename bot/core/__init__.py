"""The pure core: no I/O, no SDK imports, no clock, no randomness.

Time and identifiers are arguments. Everything here is deterministic over its inputs.

Five parts, each a subpackage with its contract checked by ``lint-imports``:

- ``model``: the vocabulary (quantities, evidence, the cluster view, workloads, actions and
  plans as data, thresholds, incidents, locales); imports nothing else from the core.
- ``diagnosis``: what the evidence says (attribution, rules, findings, history, the ledger, the
  verdict); imports only ``model``.
- ``remedies``: what can be done and what it buys (tier plans, caps, relief, placement,
  autoscalers, safety, prevention); imports ``model`` and ``diagnosis``.
- ``reporting``: what is told (the analysis, talking points, outcomes, records, diffs, charts as
  data, the postmortem's story); imports the three layers below.
- ``governance``: who may do what (policy and roles, approvals, impersonation, leases, the
  command grammar, alert caps); imports only ``model``, and no other part imports it.
"""
