"""The verdict, from the attribution: who holds the memory the node is short of. Pure.

Rules add findings; they do not decide the verdict by their order. ``decide``:

1. No memory evidence at all (no meminfo, no ``free``, no cgroups): ``inconclusive``.
2. The node is short (MemAvailable under ``available_low_share``, PSI stalls, kernel OOM
   kills, or the MemoryPressure condition): rank every consumer of host RAM
   (``bot.core.diagnosis.consumers``) by bytes. Blame follows the contract: only consumers holding
   memory above it may be the cause (pods above their requests, pods without one, memory
   outside pods; never reclaimable page cache); a pod inside its request is neither the
   primary nor the runner-up that lowers confidence. The biggest such culprit is the primary
   cause when it holds at least ``culprit_min_share`` of RAM and more than the memory no kept
   process explains (a near tie, within ``verdict_tie_margin_share``, goes in the kubelet's
   eviction order: above request, then lower priority, then most above request); the split
   against requests goes into the params (``bot.core.diagnosis.contracts``); otherwise
   ``overcommit`` when limits are critically overcommitted, else ``inconclusive``. The others of at
   least half that share are ``contributing``, with any local problem (a container at its limit, a
   full GPU).
   When no host consumer stands out and a GPU raised an XID that leaves it unusable,
   ``gpu_xid`` (medium).
3. The node has headroom: a GPU that raised an XID that leaves it unusable until reset
   (fallen off the bus, uncorrectable ECC; ``GPU_XID`` critical) is ``gpu_xid`` (high): a
   hardware fault, not memory; else a container at its own limit (or cgroup-OOM-killed) is
   ``container_limit``; else a GPU process of no pod holding ``gpu_orphan_share`` of a GPU,
   or the top holder of an exhausted GPU when it is an orphan, is ``gpu_orphan`` (its login
   session or unit and command line named); else, on a shared GPU (time-slicing, MPS), a pod
   holding more than an equal share while other pods on that physical GPU keep restarting is
   ``gpu_memory`` on that GPU; else an exhausted GPU is ``gpu_memory`` (its top holder
   named); else ``overcommit`` (low) when
   limits are critically overcommitted; else ``healthy`` with the reason (a node that only
   looks full to ``free`` holds reclaimable page cache: ``reason=page_cache_reclaimable``).

Confidence: ``high`` when the primary leads the next consumer by ``verdict_clear_margin_share``
of the total; ``low`` on a near tie (under ``verdict_tie_margin_share``) that the primary alone
cannot cover; else ``medium``. Any evidence gap bearing on the verdict (meminfo, cgroups,
processes for host causes; NVML for GPU causes) lowers it one step.
"""

from __future__ import annotations

from bot.core.diagnosis.consumers import (
    Consumer,
    GpuHolder,
    gpu_holders,
    host_consumers,
    kubelet_rank,
    unreserved_bytes,
)
from bot.core.diagnosis.contracts import contract_split, within_request_note
from bot.core.diagnosis.findings import Contribution, Fact, Finding, Verdict
from bot.core.diagnosis.gpus import node_has_gpus, process_origin
from bot.core.diagnosis.rules.context import MEMINFO, Context, fact, ratio
from bot.core.diagnosis.rules.gpu import shared_gpu_crash_loops, shared_gpu_params
from bot.core.diagnosis.rules.host import available_bytes, under_pressure
from bot.core.model.evidence import GpuDevice
from bot.core.model.thresholds import Thresholds

_PRESSURE_CODES = frozenset(
    {"SYSTEM_OOM_EVENTS", "MEMORY_PRESSURE_STALL", "MEMORY_AVAILABLE_LOW", "NODE_MEMORY_PRESSURE"}
)
#: gaps that hide consumers of host memory (an unreadable /proc/slabinfo only hides which
#: slab caches, not how much slab: it does not lower confidence)
_HOST_GAPS = ("procfs:/proc/meminfo", "cgroup", "procfs:/proc/<pid>")
_LEVELS = ("low", "medium", "high")
Params = dict[str, str | int | float]


def _codes(findings: list[Finding], code: str, severity: str | None = None) -> list[Finding]:
    return [f for f in findings if f.code == code and (severity is None or f.severity == severity)]


def _num(f: Finding, key: str) -> float:
    value = f.params.get(key, 0)
    return float(value) if isinstance(value, int | float) else 0.0


def shortage(ctx: Context, t: Thresholds) -> int:
    """Bytes MemAvailable lacks to reach ``shortage_target_available_share`` of RAM."""
    avail, total = available_bytes(ctx), ctx.mem_total
    if avail is None or not total:
        return 0
    return max(0, int(t.shortage_target_available_share * total) - avail)


def _confidence(lead: float, covers: bool, gaps: int, t: Thresholds) -> str:
    level = 2 if lead >= t.verdict_clear_margin_share else 1
    if lead < t.verdict_tie_margin_share and not covers:
        level = 0
    return _LEVELS[max(0, level - (1 if gaps else 0))]


def _gap_count(ctx: Context, prefixes: tuple[str, ...]) -> int:
    return sum(1 for g in ctx.bundle.gaps if g.source.startswith(prefixes))


def _consumer_facts(c: Consumer, total: int) -> list[Fact]:
    share = ratio(c.bytes, total) or 0.0
    labels = {
        "host_memory_workload": ("pod.working_set_bytes", "working set"),
        "system_process": ("process.rss_anon_bytes", "anon RSS outside pods"),
        "kernel_slab": ("kernel.s_unreclaim_bytes", "SUnreclaim"),
        "kernel_memory": ("kernel.other_bytes", "kernel memory (page tables, stacks, vmalloc)"),
        "shmem": ("shmem.bytes", "shmem (tmpfs, /dev/shm)"),
        "hugepages": ("hugepages.reserved_bytes", "HugePages reserved"),
    }
    key, label = labels.get(str(c.cause), ("consumer.bytes", "memory"))
    value = (
        c.params.get("working_set_bytes", c.bytes) if c.cause == "host_memory_workload" else c.bytes
    )
    if c.cause == "host_memory_workload":  # the pod's share: its own bytes over MemTotal
        share = ratio(int(value), total) or 0.0
    facts = [
        fact(key, label, value, "bytes", c.source),
        fact("node.mem_total_bytes", "MemTotal", total, "bytes", MEMINFO),
        fact("consumer.host_memory_share", "share of host memory", share, "ratio", c.source),
    ]
    if c.cause == "host_memory_workload" and int(c.params.get("pods_in_group", 1)) > 1:
        group = str(c.params.get("group", ""))
        facts += [
            fact(
                "group.host_memory_bytes",
                f"{group} ({c.params.get('pods_in_group')} pods)",
                c.bytes,
                "bytes",
                "cgroup:kubepods",
            ),
            fact(
                "group.host_memory_share",
                f"{group} share of host memory",
                ratio(c.bytes, total) or 0.0,
                "ratio",
                "cgroup:kubepods",
            ),
        ]
    if c.cause == "host_memory_workload":
        src = f"k8s:pod/{c.subject}" if not c.subject.startswith("pod-uid/") else c.source
        facts.append(
            fact(
                "pod.memory_request_bytes",
                "memory request",
                c.params.get("request_bytes", 0),
                "bytes",
                src,
            )
        )
        facts.append(
            fact(
                "pod.memory_above_request_bytes",
                "held above its request",
                c.params.get("pod_above_request_bytes", 0),
                "bytes",
                src,
            )
        )
        if c.params.get("limit_bytes"):
            facts.append(
                fact(
                    "container.limit_bytes",
                    "memory limit",
                    c.params["limit_bytes"],
                    "bytes",
                    c.source,
                )
            )
        facts.append(
            fact("pod.gpu_request", "GPUs requested", c.params.get("gpu_request", 0), "count", src)
        )
    return facts


def _contribution(c: Consumer, total: int) -> Contribution:
    return Contribution.model_validate(
        {
            "cause": c.cause,
            "subject": c.subject,
            "bytes": c.bytes,
            "share": ratio(c.bytes, total) or 0.0,
        }
    )


def _local_contributions(
    findings: list[Finding], gpu: tuple[str, GpuHolder | None, GpuDevice] | None
) -> list[Contribution]:
    out: list[Contribution] = []
    for f in _codes(findings, "CONTAINER_NEAR_LIMIT", "critical"):
        limit = _num(f, "limit_bytes")
        out.append(
            Contribution(
                cause="container_limit",
                subject=f.subject,
                bytes=int(_num(f, "working_set_bytes")),
                share=round(_num(f, "working_set_bytes") / limit, 4) if limit else 0.0,
            )
        )
    if gpu is not None:
        cause, holder, device = gpu
        held = holder.bytes if holder is not None else device.memory_used_bytes
        out.append(
            Contribution.model_validate(
                {
                    "cause": cause,
                    "subject": device.uuid,
                    "bytes": held,
                    "share": ratio(held, device.memory_total_bytes) or 0.0,
                }
            )
        )
    return out


def _host_verdict(
    ctx: Context, findings: list[Finding], t: Thresholds, short: int
) -> Verdict | None:
    """Blame follows the contract: only consumers holding memory above it (pods above their
    requests, pods without requests, memory outside pods) make up a shortage. A pod inside
    its request is never the primary, never the runner-up that lowers confidence."""
    total = ctx.mem_total or 0
    rows = host_consumers(ctx.bundle, ctx.attr, ctx.node)
    culprits = [r for r in rows if r.culprit and unreserved_bytes(r) > 0]
    unexplained = next((r.bytes for r in rows if r.cause == "unattributed"), 0)
    if not culprits or not total:
        return None
    biggest = culprits[0]
    if biggest.bytes < t.culprit_min_share * total or biggest.bytes < t.min_consumer_bytes:
        return None
    if unexplained > biggest.bytes:
        return None
    # a near tie (within verdict_tie_margin_share of RAM) goes as the kubelet would evict:
    # above request first, then lower priority, then the most above request
    tied = [c for c in culprits if biggest.bytes - c.bytes <= t.verdict_tie_margin_share * total]
    top = min(tied, key=kubelet_rank)
    others = [c for c in culprits if c is not top]
    runner_up = max(others[0].bytes if others else 0, unexplained)
    lead = (top.bytes - runner_up) / total
    gaps = _gap_count(ctx, _HOST_GAPS)
    contributing = [
        _contribution(c, total)
        for c in others[:4]
        if c.bytes >= max(t.min_consumer_bytes, t.culprit_min_share * total / 2)
    ]
    contributing += _local_contributions(findings, _gpu_candidate(ctx, t))
    params: Params = {**top.params, "held_bytes": top.bytes}
    share = ratio(top.bytes, total) or 0.0
    params["share_percent"] = round(share * 100, 1)
    params["shortage_bytes"] = short
    params.update(contract_split(rows))
    if top.cause == "host_memory_workload":
        pod_bytes = top.params.get("working_set_bytes", top.bytes)
        # a pod's share is its own bytes over MemTotal; the group's is labelled the group's
        params["share_percent"] = round((ratio(int(pod_bytes), total) or 0.0) * 100, 1)
        params["group_share_percent"] = round(share * 100, 1)
        params["controller"] = params.get("group", "") if params.get("owner_kind") != "Pod" else ""
        params.update(within_request_note(rows, top))
    facts = _consumer_facts(top, total)
    slab = _codes(findings, "KERNEL_SLAB_UNRECLAIMABLE_HIGH")
    if top.cause == "kernel_slab" and slab:
        facts = list(slab[0].facts)
        params.update({k: v for k, v in slab[0].params.items() if k not in params})
    return Verdict.model_validate(
        {
            "cause": top.cause,
            "subject": top.subject,
            "confidence": _confidence(lead, top.bytes >= short, gaps, t),
            "facts": facts,
            "params": params,
            "shortage_bytes": short,
            "primary_bytes": top.bytes,
            "share": share,
            "margin": round(lead, 4),
            "margin_bytes": top.bytes - runner_up,
            "contributing": contributing,
            "gaps": gaps,
        }
    )


def _gpu_candidate(ctx: Context, t: Thresholds) -> tuple[str, GpuHolder | None, GpuDevice] | None:
    """(cause, top holder, GPU) for the GPU worth naming, or None."""
    holders = gpu_holders(ctx.bundle, ctx.attr)
    orphans: list[GpuHolder] = []
    for held in holders.values():
        for h in held:
            total = h.gpu.memory_total_bytes
            full = (ratio(h.gpu.memory_used_bytes, total) or 0) >= t.gpu_memory_exhausted_ratio
            if h.orphan and (h.bytes >= t.gpu_orphan_share * total or (full and h is held[0])):
                orphans.append(h)
    if orphans:
        best = max(orphans, key=lambda h: (h.bytes, -h.gpu.index))
        return ("gpu_orphan", best, best.gpu)
    # a shared GPU (time-slicing, MPS): one pod's memory decides, the crash loops of the
    # others on that physical GPU are the evidence, however full the device looks
    looping = shared_gpu_crash_loops(ctx)
    if looping:
        g, top_holder, _ = max(looping, key=lambda x: (x[1].bytes, -x[0].index))
        return ("gpu_memory", top_holder, g)
    exhausted = [
        g
        for g in ctx.bundle.gpus
        if (ratio(g.memory_used_bytes, g.memory_total_bytes) or 0) >= t.gpu_memory_exhausted_ratio
    ]
    if not exhausted:
        return None
    worst = max(exhausted, key=lambda g: (g.memory_used_bytes / g.memory_total_bytes, -g.index))
    top = holders.get(worst.index, [])
    return ("gpu_memory", top[0] if top else None, worst)


def _gpu_verdict(
    ctx: Context, t: Thresholds, pick: tuple[str, GpuHolder | None, GpuDevice], pressured: bool
) -> Verdict:
    cause, holder, g = pick
    holders = gpu_holders(ctx.bundle, ctx.attr).get(g.index, [])
    src = f"nvml:{g.uuid}"
    used_share = ratio(g.memory_used_bytes, g.memory_total_bytes) or 0.0
    params: Params = {
        "gpu_index": g.index,
        "gpu_uuid": g.uuid,
        "used_bytes": g.memory_used_bytes,
        "total_bytes": g.memory_total_bytes,
        "percent": round(used_share * 100, 1),
        "exhausted_gpus": sum(
            1
            for d in ctx.bundle.gpus
            if (ratio(d.memory_used_bytes, d.memory_total_bytes) or 0)
            >= t.gpu_memory_exhausted_ratio
        ),
    }
    facts = [
        fact("gpu.memory_used_bytes", f"GPU {g.index} used", g.memory_used_bytes, "bytes", src),
        fact("gpu.memory_total_bytes", f"GPU {g.index} total", g.memory_total_bytes, "bytes", src),
        fact("gpu.memory_ratio", f"GPU {g.index} used / total", used_share, "ratio", src),
    ]
    held = g.memory_used_bytes
    runner_up = 0
    if holder is not None:
        held = holder.bytes
        params.update(pid=holder.pid, command=holder.command, process_bytes=holder.bytes)
        if holder.pod is not None:
            params["pod"] = holder.pod
        else:  # a process of no pod: whose session or unit runs it, and its command line
            proc = next((x for x in ctx.bundle.processes if x.pid == holder.pid), None)
            if proc is not None:
                origin, unit, user = process_origin(proc.cgroup_path)
                params.update(origin=origin, unit=unit, user_id=user, cmdline=proc.cmdline[:160])
            pods = [h.pod for h in holders if h.pod is not None]
            if pods:  # the pods the device plugin gave this GPU, who now lack its memory
                params.update(gpu_pods=", ".join(pods), gpu_pod_count=len(pods))
        facts.append(fact("gpu_process.pid", "PID", holder.pid, "count", src))
        facts.append(fact("gpu_process.used_bytes", "GPU memory", holder.bytes, "bytes", src))
        others = [h.bytes for h in holders if h != holder]
        runner_up = max(others, default=0)
    params.update(shared_gpu_params(ctx, g))
    gaps = _gap_count(ctx, ("nvml",)) + (1 if holder is None else 0)
    lead = (held - runner_up) / g.memory_total_bytes if g.memory_total_bytes else 0.0
    confidence = _confidence(lead, True, gaps, t)
    if pressured and confidence == "high":
        confidence = "medium"
    return Verdict.model_validate(
        {
            "cause": cause,
            "subject": g.uuid,
            "confidence": confidence,
            "facts": facts,
            "params": params,
            "primary_bytes": held,
            "share": ratio(held, g.memory_total_bytes) or 0.0,
            "margin": round(lead, 4),
            "margin_bytes": held - runner_up,
            "gaps": gaps,
        }
    )


def _simple(
    cause: str, f: Finding | None, confidence: str, subject: str | None, **extra: str | int | float
) -> Verdict:
    params: Params = dict(f.params) if f is not None else {}
    params.update(extra)
    return Verdict.model_validate(
        {
            "cause": cause,
            "subject": f.subject if f is not None else subject,
            "confidence": confidence,
            "facts": list(f.facts) if f is not None else [],
            "params": params,
        }
    )


def _container_verdict(ctx: Context, findings: list[Finding]) -> Verdict | None:
    near = _codes(findings, "CONTAINER_NEAR_LIMIT", "critical")
    ooms = _codes(findings, "CONTAINER_OOM_KILLED")
    if near:
        top = max(near, key=lambda f: (_num(f, "percent"), f.subject))
        killed = any(o.subject == top.subject for o in ooms)
        return _simple("container_limit", top, "high" if killed else "medium", None)
    if not ooms:
        return None
    killed_one = ooms[0]
    # OOM-killed below its limit now: quote what the container holds against that limit
    usage = next(
        (
            c
            for c in ctx.attr.containers
            if c.pod is not None
            and c.pod.key == killed_one.subject
            and c.name == killed_one.params.get("container")
        ),
        None,
    )
    extra: Params = {}
    if usage is not None:
        ws, limit = usage.mem.working_set_bytes or 0, usage.mem.limit_bytes or 0
        extra = {"working_set_bytes": ws, "limit_bytes": limit}
        if limit:
            extra["percent"] = round(ws * 100 / limit, 1)
    return _simple("container_limit", killed_one, "medium", None, **extra)


def _xid_verdict(findings: list[Finding], confidence: str) -> Verdict | None:
    lost = _codes(findings, "GPU_XID", "critical")
    if not lost:
        return None
    top = max(lost, key=lambda f: (str(f.params.get("last_at", "")), f.subject))
    return _simple("gpu_xid", top, confidence, None, xid_gpus=len(lost))


def _healthy(ctx: Context, findings: list[Finding], t: Thresholds) -> Verdict:
    mi = ctx.bundle.meminfo
    total = ctx.mem_total or 0
    avail = available_bytes(ctx)
    reason = "within_bounds"
    params: Params = {}
    if mi is not None and total:
        cache = max(0, mi.buffers_bytes + mi.cached_bytes - (mi.shmem_bytes or 0))
        params = {
            "mem_free_bytes": mi.mem_free_bytes,
            "page_cache_bytes": cache,
            "available_bytes": avail if avail is not None else -1,
            "mem_total_bytes": total,
        }
        if (
            mi.mem_free_bytes < t.shortage_target_available_share * total
            and cache > mi.mem_free_bytes
        ):
            reason = "page_cache_reclaimable"
    warned = any(f.severity in ("critical", "warning") for f in findings)
    return _simple(
        "healthy", None, "medium" if warned else "high", ctx.node, reason=reason, **params
    )


def decide(ctx: Context, findings: list[Finding], t: Thresholds) -> Verdict:
    """The verdict (module docstring), with ``gpu_node`` (0/1, ``bot.core.diagnosis.gpus``) in its
    params: every sentence that speaks of GPUs asks it first."""
    v = _decide(ctx, findings, t)
    gpu_node = int(node_has_gpus(ctx.bundle, ctx.view))
    return v.model_copy(update={"params": {**v.params, "gpu_node": gpu_node}})


def _decide(ctx: Context, findings: list[Finding], t: Thresholds) -> Verdict:
    pressured = under_pressure(ctx, t) or any(f.code in _PRESSURE_CODES for f in findings)
    b = ctx.bundle
    if b.meminfo is None and b.free is None and not b.containers:
        return _simple("inconclusive", None, "low", ctx.node, reason="no_memory_evidence")
    over = _codes(findings, "LIMITS_OVERCOMMITTED", "critical")
    if pressured:
        short = shortage(ctx, t)
        verdict = _host_verdict(ctx, findings, t, short)
        if verdict is not None:
            return verdict
        xid = _xid_verdict(findings, "medium")
        if xid is not None:
            return xid.model_copy(update={"shortage_bytes": short})
        if over:
            v = _simple("overcommit", over[0], "medium", None)
        else:
            v = _simple("inconclusive", None, "low", ctx.node, reason="no_consumer_stands_out")
        return v.model_copy(update={"shortage_bytes": short})
    xid = _xid_verdict(findings, "high")
    if xid is not None:
        return xid
    container = _container_verdict(ctx, findings)
    if container is not None:
        return container
    gpu = _gpu_candidate(ctx, t)
    if gpu is not None:
        return _gpu_verdict(ctx, t, gpu, pressured)
    if over:
        return _simple("overcommit", over[0], "low", None)
    return _healthy(ctx, findings, t)
