"""The memory ledger: where every byte of the node's RAM went, summing exactly to MemTotal.

Decomposition (all from one reading; bytes):

====================  =====================================================================
line                  value
====================  =====================================================================
kernel lines          SUnreclaim, SReclaimable, PageTables, KernelStack (``/proc/meminfo``);
                      "kernel_other": Percpu, VmallocUsed, HugeTLB, and socket buffers
                      (``/proc/net/sockstat``, its own line: not in any meminfo line)
pod (one per pod)     the pod's *user* memory = anon + active_file of its containers'
                      cgroups, labelled with the pod's name (``pod_label``). The kubelet's
                      working set (usage - inactive_file) also holds kernel memory charged to
                      the cgroup (v2 slab, sockets, stacks); that is already in the kernel
                      lines, so it is left out here: a pod's line sits slightly below the
                      working set the findings quote. Without the anon/file split: working
                      set - charged kernel memory (or the working set)
page_cache            Buffers + Cached - the pods' active_file (that part is in the pod lines)
system                anon RSS of processes outside every pod (top-N kept by the collector,
                      so a lower bound), capped at the anon not already in pod lines
unattributed          AnonPages - pods' anon - system: anon memory no kept process explains
free                  MemFree
residual              MemTotal - all of the above; stated, never hidden. Positive: memory no
                      counter explains (driver/DMA allocations, pinned buffers); negative:
                      double counting (e.g. a pod line larger than the anon it stands for)
====================  =====================================================================

``sum(entries) + residual == total`` always holds (by construction, property-tested).
A pod entry also carries the pod's working set (``LedgerEntry.figure``): the one figure
every section names the pod with (pod lists, talking points, tier plans), the kubelet's own.
Pure: no I/O.
"""

from __future__ import annotations

from bot.core.diagnosis.attribution import Attribution, PodUsage
from bot.core.diagnosis.findings import Ledger, LedgerCategory, LedgerEntry
from bot.core.model.evidence import EvidenceBundle

MEMINFO = "procfs:/proc/meminfo"


def _pod_parts(p: PodUsage) -> tuple[int, int]:
    """(anon part, file part) of a pod's user working set; both >= 0."""
    if p.anon_bytes is not None and p.active_file_bytes is not None:
        return max(0, p.anon_bytes), max(0, p.active_file_bytes)
    ws = p.working_set_bytes or 0
    user = max(0, ws - (p.kernel_bytes or 0))
    file_part = min(user, max(0, p.active_file_bytes or 0))
    return user - file_part, file_part


def pod_label(p: PodUsage) -> str:
    """The pod's name; a cgroup whose UID the API view lacks is named readably: in practice
    gpunode's own diagnostic pod (deleted before the view is read) or a pod that just left."""
    if p.pod is not None:
        return p.pod.key
    return f"pod {p.uid[:8]}… (not in the API: gpunode's diagnostic pod or a pod that just left)"


def build_ledger(bundle: EvidenceBundle, attr: Attribution) -> Ledger:
    entries: list[LedgerEntry] = []

    def add(
        category: LedgerCategory,
        label: str,
        value: int | None,
        source: str,
        pod_key: str | None = None,
    ) -> None:
        if value is not None and (value != 0 or category == "free"):
            entries.append(
                LedgerEntry(
                    category=category, label=label, bytes=int(value), source=source, pod_key=pod_key
                )
            )

    mi = bundle.meminfo
    free = bundle.free
    total = mi.mem_total_bytes if mi is not None else (free.total_bytes if free is not None else 0)

    if mi is not None:
        add(
            "kernel_slab_unreclaimable",
            "SUnreclaim (unreclaimable slab)",
            mi.s_unreclaim_bytes,
            MEMINFO,
        )
        add(
            "kernel_slab_reclaimable",
            "SReclaimable (reclaimable slab)",
            mi.s_reclaimable_bytes,
            MEMINFO,
        )
        add("kernel_page_tables", "PageTables", mi.page_tables_bytes, MEMINFO)
        add("kernel_stacks", "KernelStack", mi.kernel_stack_bytes, MEMINFO)
        add("kernel_other", "Percpu", mi.percpu_bytes, MEMINFO)
        add("kernel_other", "VmallocUsed", mi.vmalloc_used_bytes, MEMINFO)
        add("kernel_other", "HugeTLB (huge pages)", mi.hugetlb_bytes, MEMINFO)
    add("kernel_other", "socket buffers", bundle.socket_memory_bytes, "procfs:/proc/net/sockstat")

    pods = sorted(attr.pods.values(), key=lambda p: (-(p.working_set_bytes or 0), p.key))
    pods_anon = pods_file = 0
    pod_entries: list[LedgerEntry] = []
    for p in pods:
        anon, file_part = _pod_parts(p)
        if anon + file_part == 0:
            continue
        pods_anon += anon
        pods_file += file_part
        pod_entries.append(
            LedgerEntry(
                category="pod",
                label=pod_label(p),
                bytes=anon + file_part,
                source=p.source,
                pod_key=p.pod.key if p.pod is not None else None,
                working_set_bytes=p.working_set_bytes,
            )
        )

    if mi is not None:
        add(
            "page_cache",
            "page cache (Buffers + Cached, less pods' active file)",
            max(0, mi.buffers_bytes + mi.cached_bytes - pods_file),
            MEMINFO,
        )
    elif free is not None:
        add(
            "page_cache",
            "buff/cache (free)",
            max(0, free.buff_cache_bytes - pods_file),
            "procfs:free",
        )
    entries.extend(pod_entries)

    node_anon: int | None = None
    if mi is not None:
        if mi.anon_pages_bytes is not None:
            node_anon = mi.anon_pages_bytes
        elif mi.active_anon_bytes is not None and mi.inactive_anon_bytes is not None:
            node_anon = mi.active_anon_bytes + mi.inactive_anon_bytes
    anon_left = max(0, node_anon - pods_anon) if node_anon is not None else None
    system = sum(
        (p.rss_anon_bytes if p.rss_anon_bytes is not None else p.rss_bytes)
        for p in attr.system_processes
    )
    if anon_left is not None:
        system = min(system, anon_left)
    add("system", "processes outside pods (anon RSS)", system, "procfs:/proc/<pid>/status")
    if anon_left is not None:
        add("unattributed", "anon memory no kept process explains", anon_left - system, MEMINFO)
    if mi is not None:
        add("free", "MemFree", mi.mem_free_bytes, MEMINFO)
    elif free is not None:
        add("free", "free", free.free_bytes, "procfs:free")

    residual = total - sum(e.bytes for e in entries)
    return Ledger(total_bytes=total, entries=entries, residual_bytes=residual)


def category_bytes(ledger: Ledger, *categories: LedgerCategory) -> int:
    return sum(e.bytes for e in ledger.entries if e.category in categories)


KERNEL_CATEGORIES: tuple[LedgerCategory, ...] = (
    "kernel_slab_unreclaimable",
    "kernel_slab_reclaimable",
    "kernel_page_tables",
    "kernel_stacks",
    "kernel_other",
)
