"""The PromQL gpunode asks for one node's memory history, with the README's label conventions.

- node_exporter: ``instance`` is the node name with an optional ``:port`` (kube-prometheus
  relabels ``__meta_kubernetes_pod_node_name`` into it), matched as ``instance=~"NODE(:[0-9]+)?"``;
- cAdvisor (kubelet): ``node`` from the Prometheus Operator's endpoint relabeling; pod-level and
  pause-container series are excluded (``container!=""``, ``container!="POD"``);
- DCGM exporter: ``Hostname`` is the node name; ``DCGM_FI_DEV_FB_USED`` is in MiB;
- kube-state-metrics v2: container series carry ``namespace``/``pod``; ``node`` comes from
  ``kube_pod_info`` (joined ``on(namespace, pod)``).
Pure: strings in, strings out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


def _string(text: str) -> str:
    """A PromQL double-quoted string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True)
class Query:
    key: str  # what the history service files the result under
    expr: str
    metric: str  # the metric a gap names when nothing comes back
    exporter: str


def node_queries(node: str) -> list[Query]:
    inst = f"instance=~{_string(re.escape(node) + '(:[0-9]+)?')}"
    on_node = f"node={_string(node)}"
    host = f"Hostname={_string(node)}"
    pods = f"kube_pod_info{{{on_node}}}"
    return [
        Query(
            "mem_total",
            f"node_memory_MemTotal_bytes{{{inst}}}",
            "node_memory_MemTotal_bytes",
            "node_exporter",
        ),
        Query(
            "mem_available",
            f"node_memory_MemAvailable_bytes{{{inst}}}",
            "node_memory_MemAvailable_bytes",
            "node_exporter",
        ),
        Query(
            "slab_unreclaimable",
            f"node_memory_SUnreclaim_bytes{{{inst}}}",
            "node_memory_SUnreclaim_bytes",
            "node_exporter",
        ),
        Query(
            "page_cache",
            f"node_memory_Cached_bytes{{{inst}}}",
            "node_memory_Cached_bytes",
            "node_exporter",
        ),
        Query(
            "psi_full_rate",
            f"rate(node_pressure_memory_stalled_seconds_total{{{inst}}}[5m])",
            "node_pressure_memory_stalled_seconds_total",
            "node_exporter",
        ),
        Query(
            "oom_kills", f"node_vmstat_oom_kill{{{inst}}}", "node_vmstat_oom_kill", "node_exporter"
        ),
        Query(
            "pods",
            "sum by (namespace, pod) (container_memory_working_set_bytes"
            f'{{{on_node}, container!="", container!="POD"}})',
            "container_memory_working_set_bytes",
            "cAdvisor",
        ),
        Query(
            "gpu_fb_used", f"DCGM_FI_DEV_FB_USED{{{host}}}", "DCGM_FI_DEV_FB_USED", "dcgm-exporter"
        ),
        Query(
            "gpu_xid",
            f"DCGM_FI_DEV_XID_ERRORS{{{host}}}",
            "DCGM_FI_DEV_XID_ERRORS",
            "dcgm-exporter",
        ),
        Query(
            "restarts",
            f"kube_pod_container_status_restarts_total * on (namespace, pod) group_left () {pods}",
            "kube_pod_container_status_restarts_total",
            "kube-state-metrics",
        ),
        Query(
            "oom_killed",
            'kube_pod_container_status_last_terminated_reason{reason="OOMKilled"}'
            f" * on (namespace, pod) group_left () {pods}",
            "kube_pod_container_status_last_terminated_reason",
            "kube-state-metrics",
        ),
    ]


def gpu_memory_query(node: str) -> str:
    """dcgm-exporter's framebuffer figures on ``node``, every label kept (the per-pod
    mapping's ``pod``/``namespace``/``container``, or their ``exported_`` spelling)."""
    names = "DCGM_FI_DEV_FB_USED|DCGM_FI_DEV_FB_FREE"
    return f"{{__name__=~{_string(names)}, Hostname={_string(node)}}}"
