"""Runs on the node, inside the diagnostic Job: reads /proc, cgroups and NVML from a host root.

Contract: imports only the standard library, ``bot.core`` and ``bot.errors`` (the Job's run:
its two classes from ``bot.errorbase``, and ``os``'s functions from ``posix``, see ``hostos``;
pydantic only inside ``bundle.collect``; ``pynvml`` lazily, in ``nvml.py`` only).
Never raises on partial evidence: every unreadable source becomes a ``Gap`` in the bundle.

Host-tree layout read under ``--root`` (standard Linux formats; generated host trees for the
Kubernetes stand-in must match it)::

    proc/meminfo                 proc/pressure/memory (optional)   proc/net/sockstat
    proc/sys/kernel/hostname     (or etc/hostname; hostname when --root is not /)
    proc/<pid>/statm             ranks every process (pages, 2nd field = resident)
    proc/<pid>/status            Name, VmRSS, RssAnon, RssFile, RssShmem (kB)
    proc/<pid>/cmdline           NUL-separated argv (any bytes)
    proc/<pid>/cgroup            v2 "0::<path>" / v1 "<id>:memory:<path>"; "../" allowed
    proc/<pid>/smaps_rollup      "Rss: N kB" (exact RSS; top-N candidates only)
    proc/<pid>/comm              fallback name
    sys/fs/cgroup/cgroup.controllers   present => cgroup v2, unified at sys/fs/cgroup
    sys/fs/cgroup/memory/              else    => cgroup v1 memory controller

Each cgroup directory holds v2 ``memory.current``, ``memory.max`` (``max`` = no limit),
``memory.stat``, ``memory.events``; or v1 ``memory.usage_in_bytes``,
``memory.limit_in_bytes`` (>= 2**62 = no limit), ``memory.stat`` (``total_*`` keys),
``memory.oom_control``, ``memory.kmem.usage_in_bytes``, ``memory.kmem.tcp.usage_in_bytes``.

Pod and container cgroups, below a ``kubepods``/``kubepods.slice`` directory at depth 1 or 2
(kind: ``kubelet.slice/kubelet-kubepods.slice``)::

    cgroupfs: kubepods[/burstable|/besteffort]/pod<uid>/<64hex>        containerd, cri-dockerd
              kubepods[/burstable|/besteffort]/pod<uid>/crio-<64hex>   CRI-O
    systemd:  kubepods.slice[/kubepods-<qos>.slice]/kubepods[-<qos>]-pod<uid_>.slice/
                  cri-containerd-<64hex>.scope | crio-<64hex>.scope | docker-<64hex>.scope

Guaranteed pods have no QoS level. ``<uid_>`` is the UID with ``-`` replaced by ``_``.
Matching is by regex on path segments (``pod<uid>``, a 64-hex leaf), so ``../`` components
from cgroup namespaces and extra nesting are harmless; ``crio-conmon-*`` is not a container.
"""
