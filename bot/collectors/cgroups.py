"""Read memory cgroups (v1 and v2) and attribute them to pods and containers.

Attribution is by path *segments*, never by absolute prefix, so it works for both kubelet
cgroup drivers, all three runtimes' leaf names, nested layouts (kind's ``kubelet.slice``) and
``../`` components from cgroup namespaces (see the package docstring for the layout).
``parse_*`` functions are pure and total; ``read_*``/``find_*`` do I/O and record gaps.

Unit rules: v2 ``memory.max`` ``max`` means no limit; v1 reports "unlimited" as a huge number
(PAGE_COUNTER_MAX * page size, 9223372036854771712 on 4 KiB pages), so anything >= 2**62 is
treated as no limit. v1 has no OOM event counter (``failcnt`` counts limit hits, not OOMs), so
``oom_events`` stays None there; ``oom_kill`` comes from ``memory.oom_control``.
"""

from __future__ import annotations

from bot.collectors import hostos
from bot.collectors.gaps import GapLog
from bot.core.diagnosis.memory import working_set_bytes

TYPE_CHECKING = False  # importing typing costs ~3 ms of `gpunode collect`'s start-up
if TYPE_CHECKING:
    from typing import Any, Literal

#: what a pod's cgroup segment and a container's leaf look like, as regular expressions: the
#: specification ``pod_uid_of`` and ``container_of`` implement by hand (``import re`` costs ~7 ms
#: of a collection's start-up); tests/collectors/test_cgroups.py checks them against these
POD_PATTERN = (
    r"(?:^|-)pod([0-9a-f]{8}[-_]?[0-9a-f]{4}[-_]?[0-9a-f]{4}[-_]?[0-9a-f]{4}[-_]?[0-9a-f]{12})"
    r"(?:\.slice)?$"
)
CONTAINER_PATTERN = r"^(?:(cri-containerd|crio|docker)-)?([0-9a-f]{64})(?:\.scope)?$"
_HEX = "0123456789abcdef"
_UID_GROUPS = (12, 4, 4, 4, 8)  # right to left
_PREFIXES = {"": None, "cri-containerd-": "cri-containerd", "crio-": "crio", "docker-": "docker"}
_RUNTIMES = {"cri-containerd": "containerd", "crio": "cri-o", "docker": "docker"}
_QOS = {
    "burstable": "burstable",
    "kubepods-burstable.slice": "burstable",
    "besteffort": "besteffort",
    "kubepods-besteffort.slice": "besteffort",
}
#: v1 "unlimited" is PAGE_COUNTER_MAX * PAGE_SIZE, just under 2**63; no real limit is this big
_V1_UNLIMITED = 1 << 62
#: kubepods sits at depth 1 (or 2 under kind's kubelet.slice); pod/QoS/container below it
_FIND_DEPTH = 2
_KUBE_DEPTH = 4


class KubePath:
    """What a cgroup path says about Kubernetes. ``pod_depth`` indexes the pod segment.

    A plain slotted class: ``dataclasses`` costs ~5 ms of collector start-up.
    """

    __slots__ = ("container_id", "pod_depth", "pod_uid", "qos", "runtime_prefix")

    def __init__(
        self,
        pod_uid: str | None,
        qos: str | None,
        container_id: str | None,
        runtime_prefix: str | None,
        pod_depth: int | None,
    ) -> None:
        self.pod_uid = pod_uid
        self.qos = qos
        self.container_id = container_id
        self.runtime_prefix = runtime_prefix
        self.pod_depth = pod_depth


def _segments(path: str) -> list[str]:
    return [s for s in path.split("/") if s and s not in (".", "..")]


def _is_hex(text: str) -> bool:
    return not text.strip(_HEX)  # strip leaves nothing only when every character is hex


def pod_uid_of(segment: str) -> str | None:
    """Group 1 of ``re.search(POD_PATTERN, segment)``: the pod UID as written, or None."""
    # ``$`` also matches before a last newline; the UID cannot end after one
    text = segment[:-1] if segment.endswith("\n") else segment
    if text.endswith(".slice"):  # ``...e.slice``: "slice" is not hex, so this is the suffix
        text = text[:-6]
    end = i = len(text)
    for n, size in enumerate(_UID_GROUPS):
        if n and i and text[i - 1] in "-_":  # the optional separator before the group at right
            i -= 1
        if i < size or not _is_hex(text[i - size : i]):
            return None
        i -= size
    if i < 3 or text[i - 3 : i] != "pod" or (i > 3 and text[i - 4] != "-"):
        return None
    return text[i:end]


def container_of(leaf: str) -> tuple[str | None, str] | None:
    """Groups 1 and 2 of ``re.match(CONTAINER_PATTERN, leaf)``: (runtime prefix, id), or None."""
    text = leaf[:-1] if leaf.endswith("\n") else leaf
    if text.endswith(".scope"):  # "scope" is not hex: this is the suffix
        text = text[:-6]
    if len(text) < 64 or not _is_hex(text[-64:]):
        return None
    head = text[:-64]
    if head not in _PREFIXES:
        return None
    return _PREFIXES[head], text[-64:]


def parse_kube_path(path: str) -> KubePath:
    """Pod UID (dashed), QoS tier, container id and runtime prefix found in a cgroup path."""
    segments = _segments(path)
    pod_uid: str | None = None
    pod_depth: int | None = None
    qos: str | None = None
    for i, seg in enumerate(segments):
        uid = pod_uid_of(seg)
        if uid is not None:
            pod_uid, pod_depth = uid.replace("_", "-"), i
            break
        qos = _QOS.get(seg, qos)
    if pod_uid is not None and qos is None:
        qos = "guaranteed"
    container_id = prefix = None
    if segments:
        leaf = container_of(segments[-1])
        if leaf is not None:
            prefix, container_id = leaf
    return KubePath(pod_uid, qos if pod_uid else None, container_id, prefix, pod_depth)


def runtime_name(prefix: str | None) -> str:
    """Runtime from a leaf prefix; ``unknown`` for a bare 64-hex leaf (cgroupfs driver).

    No guess from the runtime's socket: that would need the host's /run mounted, which also
    holds every container's root filesystem; the API's containerID prefix names it anyway."""
    return _RUNTIMES[prefix] if prefix else "unknown"


def parse_memory_stat(text: str) -> dict[str, int]:
    """``memory.stat`` -> {key: value}; keyed, order-independent; bad lines skipped."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) == 2 and words[1].isascii() and words[1].isdecimal():
            out[words[0]] = int(words[1])
    return out


def parse_limit(text: str) -> tuple[int | None, bool]:
    """A limit file (v2 ``memory.max`` / v1 ``limit_in_bytes``) -> (bytes or None, valid)."""
    value = text.strip()
    if value == "max":
        return None, True
    if not (value.isascii() and value.isdecimal()):
        return None, False
    number = int(value)
    return (None if number >= _V1_UNLIMITED else number), True


def parse_int(text: str) -> int | None:
    value = text.strip()
    return int(value) if value.isascii() and value.isdecimal() else None


def detect_version(root: str) -> Literal[1, 2] | None:
    """2 when ``sys/fs/cgroup`` is the unified mount, 1 when a v1 memory controller exists."""
    if hostos.exists(f"{root}/sys/fs/cgroup/cgroup.controllers"):
        return 2
    if hostos.isdir(f"{root}/sys/fs/cgroup/memory"):
        return 1
    return None


def memory_mount(root: str, version: int) -> str:
    return f"{root}/sys/fs/cgroup" if version == 2 else f"{root}/sys/fs/cgroup/memory"


def _read(path: str) -> str | None:
    """``open(path, encoding="utf-8", errors="replace").read()``, universal newlines
    included, or None on ``OSError``: by ``hostos.read_file``, without io objects (a node's
    collection reads four to six files per cgroup)."""
    try:
        text = hostos.read_file(path).decode("utf-8", errors="replace")
    except OSError:
        return None
    if "\r" in text:  # what text mode's newline=None makes of \r\n and a lone \r
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def read_cgroup_memory(mount: str, rel: str, *, version: int, gaps: GapLog) -> dict[str, Any]:
    """Usage, limit and breakdown of one memory cgroup (ContainerMemory figure fields)."""
    base = f"{mount}{rel}"
    src = f"cgroup:{rel}"
    names = (
        ("memory.current", "memory.max", "memory.stat")
        if version == 2
        else ("memory.usage_in_bytes", "memory.limit_in_bytes", "memory.stat")
    )
    usage_text, limit_text, stat_text = (_read(f"{base}/{n}") for n in names)
    usage = parse_int(usage_text) if usage_text is not None else None
    if usage is None:
        gaps.add(f"{src}/{names[0]}", "missing or unparsable", "missing_or_unparsable")
    limit: int | None = None
    if limit_text is None:
        gaps.add(f"{src}/{names[1]}", "missing", "missing")
    else:
        limit, valid = parse_limit(limit_text)
        if not valid:
            shown = limit_text.strip()[:20]
            gaps.add(
                f"{src}/{names[1]}",
                f"unparsable limit {shown!r}",
                "unparsable_limit",
                {"value": shown},
            )
    stat = parse_memory_stat(stat_text) if stat_text is not None else {}
    if stat_text is None:
        gaps.add(f"{src}/memory.stat", "missing", "missing")
    out: dict[str, Any] = {"usage_bytes": usage, "limit_bytes": limit}
    if version == 2:
        out.update(_v2_breakdown(base, stat))
    else:
        out.update(_v1_breakdown(base, stat))
    out["working_set_bytes"] = working_set_bytes(usage, out["inactive_file_bytes"])
    return out


def _sum_present(stat: dict[str, int], keys: tuple[str, ...]) -> int | None:
    values = [stat[k] for k in keys if k in stat]
    return sum(values) if values else None


def _v2_breakdown(base: str, stat: dict[str, int]) -> dict[str, Any]:
    events = parse_memory_stat(_read(f"{base}/memory.events") or "")
    kernel = stat.get("kernel")
    if kernel is None:  # kernels before 5.18 have no "kernel" key
        kernel = _sum_present(stat, ("kernel_stack", "pagetables", "percpu", "slab"))
    slab = stat.get("slab")
    if slab is None:
        slab = _sum_present(stat, ("slab_reclaimable", "slab_unreclaimable"))
    return {
        "anon_bytes": stat.get("anon"),
        "file_bytes": stat.get("file"),
        "shmem_bytes": stat.get("shmem"),
        "inactive_file_bytes": stat.get("inactive_file"),
        "kernel_bytes": kernel,
        "slab_bytes": slab,
        "sock_bytes": stat.get("sock"),
        "oom_events": events.get("oom"),
        "oom_kill_events": events.get("oom_kill"),
    }


def _v1_breakdown(base: str, stat: dict[str, int]) -> dict[str, Any]:
    oom = parse_memory_stat(_read(f"{base}/memory.oom_control") or "")
    kmem = _read(f"{base}/memory.kmem.usage_in_bytes")
    tcp = _read(f"{base}/memory.kmem.tcp.usage_in_bytes")

    def pick(key: str) -> int | None:
        return stat.get(f"total_{key}", stat.get(key))

    return {
        "anon_bytes": pick("rss"),
        "file_bytes": pick("cache"),
        "shmem_bytes": pick("shmem"),
        "inactive_file_bytes": pick("inactive_file"),
        "kernel_bytes": parse_int(kmem) if kmem else None,
        "slab_bytes": None,
        "sock_bytes": parse_int(tcp) if tcp else None,
        "oom_events": None,
        "oom_kill_events": oom.get("oom_kill"),
    }


def _subdirs(path: str) -> list[str]:
    try:
        with hostos.scandir(path) as it:
            return sorted(e.name for e in it if e.is_dir(follow_symlinks=False))
    except OSError:
        return []


def find_kube_cgroups(mount: str) -> tuple[list[str], list[str]]:
    """(pod cgroup paths, container cgroup paths), relative to the mount, leading ``/``."""
    roots: list[str] = []
    frontier = [""]
    for _ in range(_FIND_DEPTH):
        nxt: list[str] = []
        for rel in frontier:
            for name in _subdirs(mount + rel):
                (roots if name.startswith(("kubepods", "kubelet-kubepods")) else nxt).append(
                    f"{rel}/{name}"
                )
        frontier = [r for r in nxt if r.endswith(".slice")]
    pods: list[str] = []
    containers: list[str] = []
    stack = [(r, 0) for r in roots]
    while stack:
        rel, depth = stack.pop()
        for name in _subdirs(mount + rel):
            child = f"{rel}/{name}"
            if pod_uid_of(name) is not None:
                pods.append(child)
                containers += [
                    f"{child}/{leaf}"
                    for leaf in _subdirs(mount + child)
                    if container_of(leaf) is not None
                ]
            elif depth < _KUBE_DEPTH:
                stack.append((child, depth + 1))
    return sorted(pods), sorted(containers)
