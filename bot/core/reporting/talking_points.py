"""What to tell the AI/ML team and the ops team, every claim bound to facts. Pure: no I/O.

Wording lives in ``templates/*/talking_points`` (one sentence per key); this module and the
builders in ``bot.core.reporting.points`` (one module per topic family) only choose keys, params and
facts. A point without facts is only ever ``unverified=True``.
``stance`` is relative to each team's usual position: AI team "our GPU use is fine",
ops team "the node is out of memory (because of the GPU jobs)". Keys are stable.

Byte params end in ``_bytes`` (ints); percentages in ``_percent`` (floats, one decimal)
unless noted (kubectl's integer percentages).

=================================  ==========  ==============================================
key                                stance      params
=================================  ==========  ==============================================
ai.gpu_memory_not_cause            supports    requested, allocatable, max_used_bytes,
                                               max_total_bytes, max_percent, gpu_count
ai.gpu_memory_is_cause             contradicts gpu_index, used_bytes, total_bytes, percent
ai.foreign_process_on_gpu          supports    gpu_index, pid, command, cmdline, origin
                                               (login_session / user_service / system_unit /
                                               stale_pod / ""), unit, user_id, process_bytes,
                                               total_bytes, gpu_pods, gpu_pod_count
ai.gpu_isolation_broken            contradicts requested, allocatable, mismatched
ai.host_memory_workload            neutral     pod, controller, working_set_bytes,
                                               limit_bytes, share_percent (separate from GPU),
                                               biggest_consumer (0/1: the node's largest pod)
ai.training_host_memory_cause      contradicts pod, working_set_bytes, limit_bytes,
                                               at_limit (0/1: container_limit verdict),
                                               request_bytes, share_percent, processes
                                               ("comm[pid], ..."), shmem_bytes
ai.training_host_memory_share      contradicts pod, held_bytes, share_percent, rank (2 = second
                                               consumer), primary (the verdict's subject)
ai.shmem_held                      contradicts pod, held_bytes, share_percent (its tmpfs,
                                               /dev/shm or memory-backed emptyDir),
                                               working_set_bytes (the pod's one figure)
ai.pods_not_cause                  supports    cause, subject, held_bytes, share_percent,
                                               shortage_bytes, pods_bytes, pods_share_percent
ai.pods_against_requests           neutral     contract_rows, contract_N_subject,
                                               contract_N_pods, contract_N_held_bytes,
                                               contract_N_request_bytes,
                                               contract_N_above_bytes, contract_N_shmem_bytes,
                                               contract_N_working_set_above_bytes (N =
                                               1..rows, in the kubelet's eviction order;
                                               held: the working set, /dev/shm included;
                                               above: the row less /dev/shm; short nodes
                                               only)
ai.container_near_limit            neutral     pod, container, working_set_bytes,
                                               limit_bytes, percent
ai.container_at_own_limit          neutral     pod, container, working_set_bytes,
                                               limit_bytes, gpu (0/1), limits_known (0/1),
                                               limits_headroom_bytes, limits_excess_bytes
                                               (allocatable vs limits total), available_bytes
                                               (MemAvailable, -1 unknown), room_bytes (the
                                               smaller of the two, >= 0; -1 unknown)
ai.suggest_memory_limit            neutral     pod, controller, current_limit_bytes,
                                               proposed_limit ("" when no tier-3 plan),
                                               working_set_bytes, below_working_set (0/1);
                                               only when the proposal is below the current
                                               limit (or there is none)
ai.suggest_chunked_processing      neutral     pod (e.g. Dask instead of pandas)
ai.suggest_dedicated_node_pool     neutral     pod, node
ai.training_request_buffer         neutral     pod, limit_bytes, request_bytes,
                                               suggested_request_bytes (87.5% of limit)
ai.training_priority_missing       neutral     pods, count, priority_class
ai.oom_killed                      neutral     pod, container, restarts, oom_kills
ai.gpu_hardware_fault              supports    gpu_index (-1 unknown), pci_bus_id, code,
                                               meaning, last_at, action (a GPU lost: XID)
ai.cgroup_oom_kill                 neutral     comm, pid, killed_at, pod, container,
                                               anon_rss_bytes (-1 unknown), limit_level
ops.verdict                        neutral     cause, subject, confidence
ops.consumer_outside_pods          contradicts cause, subject, held_bytes, share_percent,
                                               shortage_bytes (the primary consumer is a
                                               process, the kernel, huge pages, host shmem
                                               or a GPU process of no pod)
ops.scheduler_unseen               neutral     unseen_bytes (above + outside), above_bytes,
                                               above_count, no_request_bytes,
                                               no_request_count, outside_bytes,
                                               within_bytes, shortage_bytes
ops.node_out_of_memory             supports    available_bytes, mem_total_bytes,
                                               share_percent
ops.page_cache_squeezed            supports    buff_cache_bytes, available_bytes,
                                               share_percent (not when MemAvailable exceeds
                                               buff/cache: that is free memory, no pressure)
ops.gpu_not_cause                  contradicts requested, allocatable, max_used_bytes,
                                               max_total_bytes, max_percent
ops.limits_overcommitted           neutral     limits, requests, limits_percent,
                                               requests_percent (kubectl ints)
ops.kernel_slab_eviction_blind     neutral     s_unreclaim_bytes, share_percent
ops.socket_memory_eviction_blind   neutral     socket_memory_bytes, share_percent
ops.system_oom_without_eviction    neutral     count
ops.gpu_hardware_fault             contradicts as ai.gpu_hardware_fault
ops.global_oom_kill                supports    as ai.cgroup_oom_kill (the latest global kill)
ops.besteffort_on_gpu_node         neutral     pods, count
ops.gpu_process_without_pod        neutral     pid, command, gpu_index, used_bytes
ops.node_healthy                   contradicts node, reason (within_bounds /
                                               page_cache_reclaimable), page_cache_bytes
ops.tier1_available                neutral     plan_id, evictions, protected,
                                               already_cordoned (0/1); every tier point also
                                               has relief_bytes, shortage_bytes (0: not
                                               short), relieves (0/1)
ops.tier2_available                neutral     plan_id, priority_class, restarts
ops.tier3_available                neutral     plan_id, target, memory_limit, memory_request,
                                               below_working_set (0/1), memory_unchanged
                                               (0/1), cpu_limit ("" none), omp_num_threads
unverified.gpu_memory              neutral     reason (both audiences, unverified=True)
unverified.gap                     neutral     source, reason (ops, unverified=True)
=================================  ==========  ==============================================

Pods the API view does not know (``pod-uid/...``: gpunode's own diagnostic pod, or a pod that
just left) get no point: nobody can act on them.
"""

from __future__ import annotations

from bot.core.diagnosis.findings import Diagnosis, TalkingPoint
from bot.core.model.cluster import ClusterView
from bot.core.model.thresholds import DEFAULT, Thresholds
from bot.core.reporting.points.attribution import attribution_points
from bot.core.reporting.points.common import by_code
from bot.core.reporting.points.contract import contract_points
from bot.core.reporting.points.culprits import culprit_points
from bot.core.reporting.points.gpu import gpu_points
from bot.core.reporting.points.kernel_log import kernel_log_points
from bot.core.reporting.points.ops import ops_points
from bot.core.reporting.points.tiers import tier_points
from bot.core.reporting.points.training import training_points


def build_talking_points(
    diagnosis: Diagnosis, view: ClusterView | None, *, thresholds: Thresholds = DEFAULT
) -> list[TalkingPoint]:
    """AI-team points first, then ops-team points; deterministic order."""
    codes = by_code(diagnosis)
    points = [
        *gpu_points(diagnosis, codes),
        *culprit_points(diagnosis, view, codes=codes),
        *attribution_points(diagnosis, view),
        *contract_points(diagnosis),
        *training_points(diagnosis, view, codes=codes, t=thresholds),
        *ops_points(diagnosis, codes),
        *kernel_log_points(diagnosis, view, codes=codes),
        *tier_points(diagnosis),
    ]
    for gap in diagnosis.unverified:
        points.append(
            TalkingPoint(
                audience="ops_team",
                key="unverified.gap",
                params={
                    "source": gap.source,
                    "reason": gap.reason,
                    "code": gap.code,
                    # the gap's own params, flat (``gap_<name>``; a list of PIDs as text)
                    **{
                        f"gap_{k}": ", ".join(map(str, v)) if isinstance(v, list) else v
                        for k, v in gap.params.items()
                    },
                },
                unverified=True,
            )
        )
    points.sort(key=lambda p: 0 if p.audience == "ai_team" else 1)
    return points
