"""Read ``/proc`` under a host root: meminfo, PSI, sockstat, and per-process memory.

``parse_*`` functions are pure and total: any text (truncated, garbled, empty) gives a result
plus a list of problems, never an exception. ``read_*`` / ``scan_*`` do the I/O and turn
unreadable files into gaps (``GapLog``).

Speed matters (the collector runs on busy nodes): processes are ranked by ``statm`` (one short
line each, mode 0444, no ptrace check), and only the top-N candidates plus GPU processes get
their ``status``, ``cmdline``, ``cgroup`` and ``smaps_rollup`` read. ``smaps_rollup`` gives the
exact RSS (``status``/``statm`` are approximate, see proc_pid_statm(5)); when it is denied (it
needs the ptrace read check) ``VmRSS`` from ``status`` is used and the gap recorded.
Results are plain dicts shaped like the ``bot.core.model.evidence`` models (no pydantic here).
"""

from __future__ import annotations

import _heapq  # heapq's C half: heapq.py itself is ~1M instructions of the Job's start-up

from bot.collectors import hostos
from bot.collectors.cgroups import parse_kube_path
from bot.collectors.gaps import GapLog
from bot.core.model.redaction import redact_command_line

TYPE_CHECKING = False  # importing typing costs ~3 ms of `gpunode collect`'s start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    #: ``_statm.rank``: (base, page size) -> (ranked, denied pids, names left to Python)
    NativeRank = Callable[[bytes, int], tuple[list[tuple[int, int]], list[int], list[bytes]]]

_KB = 1024
#: meminfo key -> MemInfo field (all kB lines except the HugePages_* counts)
MEMINFO_FIELDS = {
    "MemTotal": "mem_total_bytes",
    "MemFree": "mem_free_bytes",
    "MemAvailable": "mem_available_bytes",
    "Buffers": "buffers_bytes",
    "Cached": "cached_bytes",
    "SwapCached": "swap_cached_bytes",
    "Active(anon)": "active_anon_bytes",
    "Inactive(anon)": "inactive_anon_bytes",
    "Active(file)": "active_file_bytes",
    "Inactive(file)": "inactive_file_bytes",
    "AnonPages": "anon_pages_bytes",
    "Mapped": "mapped_bytes",
    "Shmem": "shmem_bytes",
    "KReclaimable": "k_reclaimable_bytes",
    "Slab": "slab_bytes",
    "SReclaimable": "s_reclaimable_bytes",
    "SUnreclaim": "s_unreclaim_bytes",
    "KernelStack": "kernel_stack_bytes",
    "PageTables": "page_tables_bytes",
    "VmallocUsed": "vmalloc_used_bytes",
    "Percpu": "percpu_bytes",
    "SwapTotal": "swap_total_bytes",
    "SwapFree": "swap_free_bytes",
    "HugePages_Total": "hugepages_total",
    "HugePages_Free": "hugepages_free",
    "Hugepagesize": "hugepage_size_bytes",
    "Hugetlb": "hugetlb_bytes",
}
#: fields procps reads as 0 when absent (the model's defaults); every other absent one is None
_ZERO_DEFAULT = frozenset({"buffers_bytes", "cached_bytes"})
#: a meminfo line, matched whole (``re.fullmatch``): ``meminfo_line`` takes the usual ones by
#: hand and hands only the rest to this expression (``import re`` costs ~7 ms of start-up)
MEMINFO_LINE = r"([A-Za-z0-9_()]+):[ \t]*(\d+)(?:[ \t]+(kB))?[ \t]*"
_KEY_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_()"
_CMDLINE_MAX = 512
SMAPS_SOURCE = "procfs:/proc/<pid>/smaps_rollup"
SMAPS_DENIED = (
    "permission denied (reading it needs ptrace rights, CAP_SYS_PTRACE); RSS from status "
    "(VmRSS, approximate)"
)
#: processes ranked by statm beyond N whose exact RSS is also read, so that statm's
#: approximation (per-CPU counter lag) cannot push a true top-N process out
_RANK_SLACK = 8


#: heapq's max-heap functions in C: public from Python 3.14 (``heapify_max``), private before
_HEAP = vars(_heapq)
_heapify_max = _HEAP.get("heapify_max") or _HEAP["_heapify_max"]
_heappop_max = _HEAP.get("heappop_max") or _HEAP["_heappop_max"]


def largest(n: int, items: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``heapq.nlargest(n, items)`` (the ``n`` largest, largest first), by heapifying ``items``
    in place and popping, all in C: without heapq.py's import and its loop in Python over
    every process (issue #25). ``items`` is left in heap order."""
    _heapify_max(items)
    return [_heappop_max(items) for _ in range(min(max(n, 0), len(items)))]


#: a problem found while parsing: (gap code, English text, the code's params)
Problem = tuple[str, str, dict[str, object]]


def meminfo_line(line: str) -> tuple[str, int, bool] | None:
    """``re.fullmatch(MEMINFO_LINE, line)`` as (key, value, in kB), or None."""
    key, colon, rest = line.partition(":")
    if colon and key and not key.strip(_KEY_CHARS):  # strip leaves nothing: all key chars
        number = rest.strip(" \t")
        if number.isdigit() and number.isascii():
            return key, int(number), False
        if number.endswith("kB"):
            digits = number[:-2].rstrip(" \t")
            if len(digits) < len(number) - 2 and digits.isdigit() and digits.isascii():
                return key, int(digits), True
    import re  # an unusual line (Unicode digits, a stray character): the expression decides

    match = re.fullmatch(MEMINFO_LINE, line)
    if match is None:
        return None
    return match.group(1), int(match.group(2)), match.group(3) is not None


def parse_meminfo(text: str) -> tuple[dict[str, Any] | None, list[Problem]]:
    """``/proc/meminfo`` -> (MemInfo fields, problems). None without MemTotal and MemFree.

    A last line with no newline is treated as truncated and dropped.
    """
    problems: list[Problem] = []
    fields: dict[str, Any] = {}
    other: dict[str, int] = {}
    lines = text.split("\n")
    if lines and lines[-1] != "":
        last = lines[-1][:40]
        problems.append(("truncated_line", f"truncated last line {last!r}", {"line": last}))
    for line in lines[:-1]:
        parsed = meminfo_line(line)
        if parsed is None:
            if line.strip():
                bad = line[:40]
                problems.append(("unparsable_line", f"unparsable line {bad!r}", {"line": bad}))
            continue
        key, value, in_kb = parsed
        amount = value * _KB if in_kb else value
        if key in MEMINFO_FIELDS:
            fields[MEMINFO_FIELDS[key]] = amount
        else:
            other[key] = amount
    if "mem_total_bytes" not in fields or "mem_free_bytes" not in fields:
        problems.append(("meminfo_totals_missing", "MemTotal or MemFree missing", {}))
        return None, problems
    absent = {f: 0 if f in _ZERO_DEFAULT else None for f in MEMINFO_FIELDS.values()}
    return {**absent, **fields, "other": other}, problems


def parse_pressure(text: str) -> dict[str, Any] | None:
    """``/proc/pressure/memory`` -> MemoryPressure fields; None when ``some`` is unreadable."""
    lines: dict[str, dict[str, Any]] = {}
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        values = dict(part.partition("=")[::2] for part in rest.split())
        try:
            lines[kind] = {
                "avg10": float(values["avg10"]),
                "avg60": float(values["avg60"]),
                "avg300": float(values["avg300"]),
                "total_us": int(values["total"]),
            }
        except (KeyError, ValueError):
            continue
    if "some" not in lines:
        return None
    return {"some": lines["some"], "full": lines.get("full")}


def parse_sockstat(text: str, *, page_size: int) -> int | None:
    """TCP + UDP ``mem`` (pages) from ``/proc/net/sockstat``, in bytes; None if neither."""
    total, seen = 0, False
    for line in text.splitlines():
        proto, _, rest = line.partition(":")
        if proto not in ("TCP", "UDP"):
            continue
        words = rest.split()
        for name, value in zip(words[::2], words[1::2], strict=False):
            if name == "mem" and value.isdecimal():
                total += int(value) * page_size
                seen = True
    return total if seen else None


def parse_slabinfo(text: str, *, page_size: int, top: int = 10) -> list[dict[str, Any]]:
    """The ``top`` biggest caches of ``/proc/slabinfo`` (version 2.x) as SlabCache fields.

    Line format: ``name active_objs num_objs objsize objperslab pagesperslab : tunables ...
    : slabdata active_slabs num_slabs sharedavail``; bytes = num_slabs x pagesperslab x page
    size. Header lines, comments and malformed lines are skipped. Only the kept caches become
    dicts (a node's file has a few hundred lines; ~5M instructions of a root collection were
    spent on dicts for caches that were dropped).
    """
    ranked: list[tuple[int, str, int, list[str]]] = []  # (-bytes, name, line order, words)
    for line in text.splitlines():
        if not line or line.startswith(("slabinfo", "#")):
            continue
        head, _, rest = line.partition(":")
        words = head.split()
        slabdata = rest.rpartition("slabdata")[2].split()
        # split() leaves no empty word: the five are decimal when their join is
        if len(words) < 6 or not "".join(words[1:6]).isdecimal() or len(slabdata) < 2:
            continue
        if not slabdata[1].isdecimal():
            continue
        size = int(slabdata[1]) * int(words[5]) * page_size
        ranked.append((-size, words[0], len(ranked), words))
    ranked.sort()  # biggest first, then by name, then in the file's order (a stable sort's)
    return [
        {
            "name": words[0],
            "active_objs": int(words[1]),
            "num_objs": int(words[2]),
            "objsize_bytes": int(words[3]),
            "bytes": -negative,
        }
        for negative, _name, _order, words in ranked[: max(0, top)]
    ]


def parse_statm_rss(data: bytes, *, page_size: int) -> int | None:
    """Resident pages (second field of ``statm``) in bytes."""
    parts = data.split()
    if len(parts) < 2 or not parts[1].isdigit():
        return None
    return int(parts[1]) * page_size


_STATUS_KEYS = {"VmRSS": "rss", "RssAnon": "anon", "RssFile": "file", "RssShmem": "shmem"}


def parse_status(text: str) -> dict[str, Any]:
    """``status`` -> {"name": str|None, "rss"/"anon"/"file"/"shmem": bytes} (keys when seen)."""
    out: dict[str, Any] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key == "Name":
            out["name"] = value.strip()
        elif key in _STATUS_KEYS:
            words = value.split()
            if words and words[0].isdecimal():
                out[_STATUS_KEYS[key]] = int(words[0]) * _KB
    return out


def parse_smaps_rollup_rss(text: str) -> int | None:
    """The ``Rss:`` line of ``smaps_rollup`` in bytes (exact, unlike statm/status)."""
    for line in text.splitlines():
        if line.startswith("Rss:"):
            words = line[4:].split()
            if words and words[0].isdecimal():
                return int(words[0]) * _KB
    return None


def parse_cmdline(data: bytes) -> str:
    """argv joined by spaces; undecodable bytes replaced; secrets redacted (here, on the node,
    so the Job's log never holds them); then truncated to 512 characters."""
    text = data.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", errors="replace")
    return redact_command_line(text)[:_CMDLINE_MAX]


def parse_proc_cgroup(text: str) -> str | None:
    """The memory cgroup path from ``/proc/PID/cgroup`` (v2 ``0::`` line, else v1 memory).

    Paths are returned as written, ``../`` components (cgroup namespaces) included.
    """
    unified: str | None = None
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hid, controllers, path = parts
        if "memory" in controllers.split(","):
            return path
        if hid == "0" and controllers == "":
            unified = path
    return unified


def read_text(path: str, *, source: str, gaps: GapLog, missing_ok: bool = False) -> str | None:
    """A whole file as text (undecodable bytes replaced), or None with a gap recorded."""
    try:
        return hostos.read_file(path).decode("utf-8", errors="replace")
    except FileNotFoundError:
        if not missing_ok:
            gaps.add(source, "not present", "not_present")
    except PermissionError:
        gaps.add(source, "permission denied", "permission_denied")
    except OSError as exc:
        error = exc.strerror or exc.__class__.__name__
        gaps.add(source, f"unreadable ({error})", "unreadable", {"error": error})
    return None


def _native_rank() -> NativeRank | None:
    """``bot.collectors._statm.rank`` when it was built and ``GPUNODE_NATIVE`` is not ``0``."""
    if hostos.getenv("GPUNODE_NATIVE") == "0":
        return None
    try:
        from bot.collectors._statm import rank
    except ImportError:  # not built here (no compiler), or built for another interpreter
        return None
    return rank


#: the C loop (``_statm.c``) when this machine has it; None: the Python loop below
NATIVE_RANK = _native_rank()


def rank_by_statm(
    proc: str, *, page_size: int, gaps: GapLog, native: NativeRank | None = NATIVE_RANK
) -> tuple[list[tuple[int, int]], int]:
    """Every process's (approximate rss bytes, pid) and how many pids were seen.

    The hot loop of a busy node (one ``statm`` per process). ``native`` (default: the C module
    ``_statm``, when built) lists the folder and reads every ASCII-digit name's ``statm``;
    tests/collectors/test_native_statm.py holds it to the Python loop's answers. Without it,
    the Python loop is as cheap per process as CPython allows (callgrind counts each change):
    names are listed and opened as bytes (no path encoding per process), the resident field is
    parsed in line (``parse_statm_rss``'s rule), and a pair is built per process, nothing
    more. A name that is not ASCII digits but whose text is decimal (a hand-made host tree) is
    read as ``os.listdir(str)`` would have it; the C loop leaves every non-ASCII name to the
    Python loop.
    """
    base = hostos.fsencode(proc) + b"/"
    ranked: list[tuple[int, int]]
    denied: list[int]
    try:
        if native is not None:
            ranked, denied, names = native(base, page_size)
        else:
            ranked, denied, names = [], [], hostos.listdir(base)
    except OSError as exc:
        error = str(exc.strerror)
        gaps.add("procfs:/proc", f"cannot list ({error})", "cannot_list", {"error": error})
        return [], 0
    append = ranked.append
    open_, read, close, flags = hostos.open, hostos.read, hostos.close, hostos.O_RDONLY
    pid: bytes | str  # int() reads either
    for name in names:
        if name.isdigit():
            pid = name
        elif not name.isascii() and hostos.fsdecode(name).isdecimal():
            pid = hostos.fsdecode(name)
        else:
            continue
        try:
            fd = open_(base + name + b"/statm", flags)
            try:
                data = read(fd, 256)  # one short line: a single read
            finally:
                close(fd)
        except (FileNotFoundError, ProcessLookupError):
            continue  # exited mid-scan: nothing to report
        except PermissionError:
            denied.append(int(pid))
            continue
        except OSError:
            continue
        parts = data.split(None, 2)  # size, resident, the rest
        append(
            (int(parts[1]) * page_size if len(parts) > 1 and parts[1].isdigit() else 0, int(pid))
        )
    if denied:
        sample = ", ".join(str(p) for p in sorted(denied)[:5])
        gaps.add(
            "procfs:/proc/<pid>/statm",
            f"permission denied for {len(denied)} process(es) (e.g. {sample}); not ranked",
            "statm_denied",
            {"count": len(denied), "pids": sorted(denied)[:5]},
        )
    return ranked, len(ranked) + len(denied)


def _read_rollup(base: str, pid: int, *, label: str, gaps: GapLog) -> str | None:
    """``smaps_rollup`` text; a ptrace denial (EACCES: the collector lacks CAP_SYS_PTRACE,
    the usual case) joins one summarized gap instead of one gap per process."""
    try:
        return hostos.read_file(f"{base}/smaps_rollup").decode("utf-8", errors="replace")
    except ProcessLookupError:
        return None  # exited mid-scan
    except FileNotFoundError:
        gaps.add(f"{label}/smaps_rollup", "not present", "not_present")
    except PermissionError:
        gaps.add_each(SMAPS_SOURCE, SMAPS_DENIED, pid, "smaps_denied")
    except OSError as exc:
        error = exc.strerror or exc.__class__.__name__
        gaps.add(f"{label}/smaps_rollup", f"unreadable ({error})", "unreadable", {"error": error})
    return None


def read_process(proc: str, pid: int, *, gaps: GapLog) -> dict[str, Any] | None:
    """One process as ProcessMemory fields, or None when it has exited or is unreadable."""
    base = f"{proc}/{pid}"
    label = f"procfs:/proc/{pid}"  # sources name the host path, not the mount point
    try:
        status = parse_status(hostos.read_file(f"{base}/status").decode("utf-8", errors="replace"))
    except (FileNotFoundError, ProcessLookupError):
        return None
    except OSError as exc:
        error = exc.strerror or exc.__class__.__name__
        gaps.add(f"{label}/status", exc.strerror or "unreadable", "unreadable", {"error": error})
        return None
    name = status.get("name")
    if name is None:
        comm = read_text(f"{base}/comm", source=f"{label}/comm", gaps=gaps, missing_ok=True)
        name = comm.strip() if comm else ""
    try:
        cmdline = parse_cmdline(hostos.read_file(f"{base}/cmdline"))
    except OSError:
        cmdline = ""
    rollup = _read_rollup(base, pid, label=label, gaps=gaps)
    rss = parse_smaps_rollup_rss(rollup) if rollup else None
    if rss is None:
        rss = status.get("rss", 0)
    cg_text = read_text(f"{base}/cgroup", source=f"{label}/cgroup", gaps=gaps, missing_ok=True)
    cg_path = parse_proc_cgroup(cg_text) if cg_text else None
    kube = parse_kube_path(cg_path) if cg_path else None
    return {
        "pid": pid,
        "command": name,
        "cmdline": cmdline,
        "rss_bytes": rss,
        "rss_anon_bytes": status.get("anon"),
        "rss_file_bytes": status.get("file"),
        "rss_shmem_bytes": status.get("shmem"),
        "pod_uid": kube.pod_uid if kube else None,
        "container_id": kube.container_id if kube else None,
        "cgroup_path": cg_path,
    }


def scan_processes(
    proc: str, *, top: int, always: frozenset[int], page_size: int, gaps: GapLog
) -> tuple[list[dict[str, Any]], int]:
    """Top ``top`` processes by exact RSS plus every pid in ``always``; and the pid count."""
    ranked, seen = rank_by_statm(proc, page_size=page_size, gaps=gaps)
    candidates = [pid for _, pid in largest(max(top, 0) + _RANK_SLACK, ranked)]
    details: dict[int, dict[str, Any]] = {}
    for pid in candidates:
        info = read_process(proc, pid, gaps=gaps)
        if info is not None:
            details[pid] = info
    kept = sorted(details.values(), key=lambda p: (-p["rss_bytes"], p["pid"]))[: max(top, 0)]
    kept_pids = {p["pid"] for p in kept}
    for pid in sorted(always - kept_pids):
        info = details.get(pid) or read_process(proc, pid, gaps=gaps)
        if info is not None:
            kept.append(info)
    return kept, seen
