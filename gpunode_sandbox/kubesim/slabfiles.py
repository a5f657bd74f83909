"""``/proc/slabinfo`` of a simulated node (SLUB, version 2.1). Pure: returns text.

The scenario names its biggest caches (``kernel.slab_caches``: name -> bytes, e.g. a leaking
``kmalloc-4k``); the rest of meminfo's Slab is spread over caches every node has, split by
what is reclaimable (dentry, inode caches, radix_tree_node, buffer_head: counted in
SReclaimable) and what is not. A named cache counts against SReclaimable when it is one of
those, else against SUnreclaim; generating fails when the named caches do not fit.

A cache's memory is ``num_slabs x pagesperslab x 4096``: whole slabs, so the caches add up
to Slab within a few pages per cache, as on a real kernel (slabinfo never matches meminfo to
the byte). SLUB prints ``tunables 0 0 0`` and ``sharedavail 0``.
"""

from __future__ import annotations

from gpunode_sandbox.kubesim import scenarios as sc
from gpunode_sandbox.kubesim.quantities import to_bytes

PAGE = 4096
HEADER = (
    "slabinfo - version: 2.1\n"
    "# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab>"
    " : tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs>"
    " <sharedavail>\n"
)
#: reclaimable caches (SLAB_RECLAIM_ACCOUNT) and their share of SReclaimable
RECLAIMABLE = {
    "dentry": 0.45,
    "ext4_inode_cache": 0.25,
    "radix_tree_node": 0.15,
    "inode_cache": 0.1,
    "buffer_head": 0.05,
}
#: unreclaimable background caches and their share of what SUnreclaim has left
UNRECLAIMABLE = {
    "kmalloc-512": 0.2,
    "kmalloc-1k": 0.15,
    "vm_area_struct": 0.15,
    "kmalloc-64": 0.1,
    "task_struct": 0.1,
    "anon_vma_chain": 0.1,
    "filp": 0.1,
    "kmalloc-4k": 0.1,
}
OBJSIZE = {
    "dentry": 192,
    "ext4_inode_cache": 1096,
    "radix_tree_node": 576,
    "inode_cache": 608,
    "buffer_head": 104,
    "vm_area_struct": 184,
    "task_struct": 9856,
    "anon_vma_chain": 64,
    "filp": 256,
}


def _objsize(name: str) -> int:
    if name in OBJSIZE:
        return OBJSIZE[name]
    size = name.rsplit("-", 1)[-1]
    if size.endswith("k") and size[:-1].isdecimal():
        return int(size[:-1]) * 1024
    return int(size) if size.isdecimal() else 256


def _line(name: str, nbytes: int) -> str:
    size = _objsize(name)
    pages = 8 if size >= 1024 else (2 if size >= 256 else 1)  # SLUB's usual orders
    per_slab = pages * PAGE // size
    slabs = nbytes // (pages * PAGE)
    objs = slabs * per_slab
    active = objs - objs // 40  # a few free objects per cache
    return (
        f"{name:<17} {active:>6} {objs:>6} {size:>6} {per_slab:>4} {pages:>4} : tunables"
        f"    0    0    0 : slabdata {slabs:>6} {slabs:>6}      0\n"
    )


def slabinfo_text(kernel: sc.Kernel) -> str:
    """The node's ``/proc/slabinfo``; ValueError when the named caches exceed the slab."""
    named = {name: to_bytes(q) for name, q in kernel.slab_caches.items()}
    reclaimable = to_bytes(kernel.slab_reclaimable)
    unreclaimable = to_bytes(kernel.slab_unreclaimable)
    rec_left = reclaimable - sum(b for n, b in named.items() if n in RECLAIMABLE)
    unrec_left = unreclaimable - sum(b for n, b in named.items() if n not in RECLAIMABLE)
    if rec_left < 0 or unrec_left < 0:
        raise ValueError(
            "kernel.slab_caches add up to more than slab_reclaimable / slab_unreclaimable"
        )
    caches = dict(named)
    for pool, left in ((RECLAIMABLE, rec_left), (UNRECLAIMABLE, unrec_left)):
        for name, share in pool.items():
            caches[name] = caches.get(name, 0) + int(left * share)
    order = sorted(caches.items(), key=lambda kv: (-kv[1], kv[0]))
    return HEADER + "".join(_line(name, nbytes) for name, nbytes in order)
