"""What restarting a process outside Kubernetes does, per kind of unit: ONE table. Pure: no I/O.

A consumer outside pods (a systemd unit, or a process of no unit) cannot be freed through the
API; the tier-3 plan carries manual steps instead (``bot.core.remedies.relief.runbook_plan``). What
a restart risks depends on what the unit is, so each kind has its own entry: which units it
matches, whether to cordon first (the restart can take the node NotReady), and the code of the
sentence that says the risk (``templates/sentences/warnings.j2``, ``runbook_<kind>``).

Facts behind the entries (looked up, not guessed):

- kubelet: the pods keep running (they belong to the runtime), but the node's heartbeats stop
  while it is down. The node lifecycle controller marks the node NotReady after
  ``--node-monitor-grace-period`` (40s by default; raised to 50s in Kubernetes 1.32,
  kubernetes/kubernetes#127352), and taint-based eviction then removes pods that do not
  tolerate ``node.kubernetes.io/not-ready`` (300s by default). Cordon first.
- containerd / CRI-O / dockerd: running containers survive a restart, held by their shims
  (containerd-shim-runc-v2, conmon; moby/moby discussion #46449), but nothing can start, stop
  or be inspected meanwhile. The kubelet's PLEG relist stalls; past 3 minutes it reports
  "PLEG is not healthy" and the node goes NotReady (kubernetes/kubernetes#41569, #94829).
  Cordon first.
- nvidia-persistenced: keeps the driver's GPU state loaded while no client has a device open
  (NVIDIA "Driver Persistence" docs). Running CUDA processes hold their devices open and are
  not affected; while it is down, the next job on an idle GPU pays the driver initialisation.
  No NotReady risk.
- DCGM (nv-hostengine, nvidia-dcgm): GPU health checks and metrics stop until it is back;
  dcgm-exporter reconnects. The training is not affected. No NotReady risk.
- journald: logs keep flowing after a restart (systemd keeps the services' stream fds), but
  messages in flight during the restart can be lost, and log agents reading the journal resume
  from their cursor. No NotReady risk.
- log agents (fluentd/td-agent, fluent-bit, vector, filebeat, promtail, rsyslog, otel
  collector): the pods are not affected; whatever the agent buffers in memory and has not
  shipped is lost. No NotReady risk.
- any other unit: what it serves stops while it restarts; check who depends on it
  (``systemctl list-dependencies --reverse``) before restarting.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

RunbookKind = Literal[
    "kubelet", "container_runtime", "gpu_persistence", "dcgm", "journald", "log_agent", "other"
]


@dataclass(frozen=True)
class UnitRunbook:
    kind: RunbookKind
    #: unit names (without ``.service``) or process names this entry matches
    names: tuple[str, ...]
    #: the restart can take the node NotReady: cordon before, uncordon once Ready again
    cordon_first: bool

    @property
    def warning(self) -> str:
        """The plan warning that words this kind's restart risk."""
        return f"runbook_{self.kind}"


#: log shippers as their systemd units are usually named
LOG_AGENTS = (
    "td-agent",
    "fluentd",
    "fluent-bit",
    "google-fluentd",
    "vector",
    "filebeat",
    "promtail",
    "rsyslog",
    "otelcol",
    "otelcol-contrib",
    "datadog-agent",
)
RUNBOOKS: tuple[UnitRunbook, ...] = (
    UnitRunbook("kubelet", ("kubelet",), cordon_first=True),
    UnitRunbook(
        "container_runtime",
        ("containerd", "crio", "cri-o", "docker", "dockerd", "cri-docker"),
        cordon_first=True,
    ),
    UnitRunbook("gpu_persistence", ("nvidia-persistenced",), cordon_first=False),
    UnitRunbook(
        "dcgm", ("nvidia-dcgm", "dcgm", "nv-hostengine", "dcgm-exporter"), cordon_first=False
    ),
    UnitRunbook("journald", ("systemd-journald", "journald"), cordon_first=False),
    UnitRunbook("log_agent", LOG_AGENTS, cordon_first=False),
)
OTHER = UnitRunbook("other", (), cordon_first=False)


def _name(unit: str) -> str:
    """``system.slice/containerd.service`` -> ``containerd``; ``vector[812]`` -> ``vector``."""
    leaf = unit.rsplit("/", 1)[-1].split("[", 1)[0]
    for suffix in (".service", ".scope"):
        if leaf.endswith(suffix):
            leaf = leaf[: -len(suffix)]
    return leaf.split("@", 1)[0].lower()


def runbook_for(unit: str) -> UnitRunbook:
    """The table's entry for a unit (or ``comm[pid]``); ``OTHER`` when none matches."""
    name = _name(unit)
    return next((r for r in RUNBOOKS if name in r.names), OTHER)
