"""The kernel's own record: OOM-killer kills and NVIDIA XID errors from ``/dev/kmsg``.

``read_kernel_log(root, ...)`` reads ``{root}/dev/kmsg`` (read-only, non-blocking: one
``read()`` returns one record and ``EAGAIN`` ends the log; ``EPIPE`` means records were
overwritten while we read, and we go on) or a plain file holding the same text (the stand-in
writes one), keeps the records of the last ``window_s`` seconds and returns a JSON-ready dict
(``bot.core.model.kernel_records.KernelLog``'s fields). Everything it cannot do is a gap, never an
exception. On a real node the open is usually refused (EPERM): the container runtime's device
cgroup admits ``/dev/kmsg`` only to privileged containers, and with ``kernel.dmesg_restrict=1``
the kernel also wants CAP_SYSLOG, which Kubernetes does not make effective for a non-root
process. The gap names the causes that hold (the collector's own ``CapEff`` and the sysctl
are read, never guessed); the bot then has node-problem-detector's events (README: Kernel log).

Record format (Documentation/ABI/testing/dev-kmsg): ``prio,seq,usec,flags[,...];message``
then optional continuation lines that start with a space (``" SUBSYSTEM=pci"``). Non-printable
bytes in the message are escaped as ``\\xNN``, so one line is one message. ``usec`` is the
time since boot; wall time = ``btime`` (``/proc/stat``) + usec.

Messages parsed (formats of mm/oom_kill.c, mm/memcontrol.c and the NVIDIA driver):
- ``<comm> invoked oom-killer: gfp_mask=..., order=N, oom_score_adj=N`` (start of a report);
- ``oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=...,mems_allowed=0,
  oom_memcg=/kubepods/...,task_memcg=/kubepods/.../<id>,task=python,pid=4242,uid=1000``
  (kernels >= 5.0; a global kill prints ``,global_oom`` instead of ``,oom_memcg=``);
- ``Out of memory: Killed process 4242 (python) total-vm:..kB, anon-rss:..kB, file-rss:..kB,
  shmem-rss:..kB, UID:1000 pgtables:..kB oom_score_adj:0`` (global) and the same after
  ``Memory cgroup out of memory:`` (cgroup); older kernels print a bare ``Killed process``
  line after ``Task in /a killed as a result of limit of /b``;
- ``NVRM: Xid (PCI:0000:3b:00): 79, pid=..., name=..., GPU has fallen off the bus.``

Pure parsing (``parse_records``, ``parse_events``) is separate from reading so the tests can
feed recorded text; this module imports no pydantic (``gpunode collect`` stays light).
"""

from __future__ import annotations

import errno
import time

from bot.collectors import cgroups, hostos
from bot.collectors.gaps import GapLog

TYPE_CHECKING = False  # importing typing costs ~3 ms of `gpunode collect`'s start-up
if TYPE_CHECKING:
    import re
    from collections.abc import Callable, Iterable
    from datetime import datetime
    from typing import Any

SOURCE = "kmsg:/dev/kmsg"
DEFAULT_WINDOW_S = 24 * 3600
MAX_BYTES = 32 * 1024 * 1024  # the largest log_buf_len distributions set (CONFIG_LOG_BUF_SHIFT 25)
MAX_EVENTS = 50  # per kind, the latest kept: a report quotes a few, the chart marks them
_READ_SIZE = 16384  # > CONSOLE_EXT_LOG_MAX (8192): a smaller buffer makes read() fail EINVAL


#: a record's header and message, matched whole; ``record_header`` reads it by hand (tests
#: compare the two), so a log without OOM or XID messages is read without ``import re``
RECORD_HEADER = r"^(\d+),(\d+),(\d+),([^;,]*)[^;]*;(.*)$"
#: an escaped byte in a message; ``_unescape`` replaces them by hand (tests compare)
ESCAPE = r"\\x([0-9a-fA-F]{2})"
_HEX = "0123456789abcdefABCDEF"


class _Patterns:
    """The OOM and XID messages' regular expressions. Compiled once, on first use
    (``_patterns()``), and only when a message could match one (``_candidate``): a Job that may
    not open the log (the usual case, see the module docstring), and a log that holds no OOM or
    XID report, never import ``re`` (~5 ms of start-up) nor pay the ~0.7 ms of compiling."""

    def __init__(self) -> None:
        import re  # here, not at the top: see the class docstring

        self.invoked = re.compile(r"^(?P<comm>.*) invoked oom-killer: ")
        self.summary = re.compile(
            r"^oom-kill:constraint=(?P<constraint>[A-Z_]+),nodemask=(?P<nodemask>.*?)"
            r"(?:,cpuset=(?P<cpuset>.*?),mems_allowed=(?P<mems>.*?))?"
            r"(?:,oom_memcg=(?P<oom_memcg>.*?)|,global_oom)"
            r"(?:,task_memcg=(?P<task_memcg>.*?))?"
            r",task=(?P<task>.*),pid=(?P<pid>\d+),uid=(?P<uid>\d+)$"
        )
        self.killed = re.compile(
            r"^(?:(?P<prefix>[^:]*): )?Killed process (?P<pid>\d+) \((?P<comm>.*)\) "
            r"total-vm:(?P<vm>\d+)kB, anon-rss:(?P<anon>\d+)kB, file-rss:(?P<file>\d+)kB"
            r"(?:, shmem-rss:(?P<shmem>\d+)kB)?(?:, UID:(?P<uid>\d+))?"
        )
        self.legacy_task = re.compile(
            r"^Task in (?P<task>\S+) killed as a result of limit of (?P<oom>\S+)"
        )
        self.xid = re.compile(
            r"NVRM: Xid \((?:PCI:)?(?P<pci>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})"
            r"(?:\.[0-9a-fA-F])?\): (?P<code>\d+), ?(?P<rest>.*)$"
        )
        self.xid_pid = re.compile(r"^pid='?(?P<pid><unknown>|\d+)'?, ?")
        self.xid_name = re.compile(r"^name=(?P<name>[^,]*), ?")


_COMPILED: list[_Patterns] = []  # a cache by hand: ``functools`` costs ~1 ms of start-up


def _patterns() -> _Patterns:
    if not _COMPILED:
        _COMPILED.append(_Patterns())
    return _COMPILED[0]


#: a PCI bus id's domain, bus and device, as ``normalize_pci`` reads them by hand
PCI_ADDRESS = r"^([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})"


def _is_hex(text: str) -> bool:
    return all(c in _HEX for c in text)


def normalize_pci(bus_id: str) -> str | None:
    """``00000000:3B:00.0`` / ``0000:3b:00`` -> ``0000:3b:00`` (domain:bus:device), else None
    (``re.match(PCI_ADDRESS, bus_id.strip())``, by hand)."""
    parts = bus_id.strip().split(":", 2)
    if len(parts) < 3:
        return None
    domain, bus, device = parts[0], parts[1], parts[2][:2]
    if not (4 <= len(domain) <= 8 and len(bus) == 2 and len(device) == 2):
        return None
    if not (_is_hex(domain) and _is_hex(bus) and _is_hex(device)):
        return None
    return f"{domain[-4:]}:{bus}:{device}".lower()


def _unescape(text: str) -> str:
    """``\\xNN`` escapes back to the bytes they stand for, then UTF-8 (``re.sub(ESCAPE, ...)``
    by hand: an escape is ``\\x`` and two hex digits, read left to right, none overlapping)."""
    if "\\x" not in text:
        return text
    first, *rest = text.split("\\x")
    out = [first]
    for piece in rest:
        if len(piece) >= 2 and piece[0] in _HEX and piece[1] in _HEX:
            out.append(chr(int(piece[:2], 16)))
            out.append(piece[2:])
        else:
            out.append("\\x")
            out.append(piece)
    return "".join(out).encode("latin-1", "replace").decode("utf-8", "replace")


def record_header(line: str) -> tuple[int, int, str] | None:
    """(seq, usec, raw message) of one record line, or None: ``re.match(RECORD_HEADER, line)``
    by hand (three decimal fields and a fourth, each ended by a comma, then anything up to
    the first ``;``). ``line`` holds no newline (a line of ``text.split("\\n")``)."""
    head, semicolon, message = line.partition(";")
    if not semicolon:
        return None
    fields = head.split(",", 3)
    if len(fields) < 4:
        return None
    _prio, seq, usec = fields[0], fields[1], fields[2]
    if not (_prio.isdecimal() and seq.isdecimal() and usec.isdecimal()):
        return None
    return int(seq), int(usec), message


def parse_records(text: str) -> list[tuple[int, int, str]]:
    """``/dev/kmsg`` text -> [(seq, usec, message)], continuation lines and junk skipped."""
    out: list[tuple[int, int, str]] = []
    for line in text.split("\n"):
        if not line or line[0] == " ":
            continue
        record = record_header(line)
        if record is not None:
            seq, usec, message = record
            out.append((seq, usec, _unescape(message)))
    return out


def _candidate(message: str) -> bool:
    """Whether any OOM or XID expression could match ``message``: each needs the words tested
    here (a test checks that no match escapes this), so the rest are skipped without ``re``."""
    return (
        "NVRM: Xid" in message
        or " invoked oom-killer: " in message
        or message.startswith(("oom-kill:constraint=", "Task in "))
        or "Killed process " in message
    )


def _kb(value: str | None) -> int | None:
    return int(value) * 1024 if value is not None else None


def _kube(path: str | None) -> tuple[str | None, str | None]:
    if not path:
        return None, None
    kube = cgroups.parse_kube_path(path)
    return kube.pod_uid, kube.container_id


def _kill(usec: int, context: dict[str, Any], match: re.Match[str]) -> dict[str, Any]:
    prefix = match.group("prefix") or ""
    constraint = context.get("constraint")
    if constraint is None:
        if prefix.startswith("Memory cgroup") or context.get("oom_memcg"):
            constraint = "CONSTRAINT_MEMCG"
        elif prefix.startswith("Out of memory"):
            constraint = "CONSTRAINT_NONE"
    task_memcg = context.get("task_memcg")
    pod_uid, container_id = _kube(task_memcg)
    uid = match.group("uid") or context.get("uid")
    return {
        "uptime_us": usec,
        "scope": "cgroup" if constraint == "CONSTRAINT_MEMCG" else "node",
        "constraint": constraint,
        "invoked_by": context.get("invoked_by"),
        "pid": int(match.group("pid")),
        "comm": match.group("comm"),
        "uid": int(uid) if uid is not None else None,
        "total_vm_bytes": _kb(match.group("vm")),
        "anon_rss_bytes": _kb(match.group("anon")),
        "file_rss_bytes": _kb(match.group("file")),
        "shmem_rss_bytes": _kb(match.group("shmem")),
        "oom_memcg": context.get("oom_memcg"),
        "task_memcg": task_memcg,
        "pod_uid": pod_uid,
        "container_id": container_id,
    }


def _xid(usec: int, match: re.Match[str]) -> dict[str, Any]:
    rest = match.group("rest").strip()
    pid: int | None = None
    name: str | None = None
    patterns = _patterns()
    pid_m = patterns.xid_pid.match(rest)
    if pid_m:
        pid = int(pid_m.group("pid")) if pid_m.group("pid").isdigit() else None
        rest = rest[pid_m.end() :]
    name_m = patterns.xid_name.match(rest)
    if name_m:
        value = name_m.group("name").strip()
        name = None if value in ("", "<unknown>") else value
        rest = rest[name_m.end() :]
    return {
        "uptime_us": usec,
        "pci_bus_id": normalize_pci(match.group("pci")),
        "code": int(match.group("code")),
        "pid": pid,
        "process": name,
        "message": rest[:300],
        "gpu_index": None,
        "gpu_uuid": None,
    }


def parse_events(
    records: Iterable[tuple[int, int, str]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(OOM kills, XIDs) from records in log order; times are still ``uptime_us``."""
    kills: list[dict[str, Any]] = []
    xids: list[dict[str, Any]] = []
    context: dict[str, Any] = {}
    for _seq, usec, msg in records:
        if not _candidate(msg):
            continue
        p = _patterns()
        if "NVRM: Xid" in msg:
            match = p.xid.search(msg)
            if match:
                xids.append(_xid(usec, match))
            continue
        invoked = p.invoked.match(msg)
        if invoked:
            context = {"invoked_by": invoked.group("comm")}
            continue
        summary = p.summary.match(msg)
        if summary:
            context.update(
                constraint=summary.group("constraint"),
                oom_memcg=summary.group("oom_memcg"),
                task_memcg=summary.group("task_memcg"),
                summary_pid=int(summary.group("pid")),
                uid=summary.group("uid"),
            )
            continue
        legacy = p.legacy_task.match(msg)
        if legacy:
            context.update(task_memcg=legacy.group("task"), oom_memcg=legacy.group("oom"))
            continue
        killed = p.killed.match(msg)
        if killed:
            if context.get("summary_pid") not in (None, int(killed.group("pid"))):
                context = {}
            kills.append(_kill(usec, context, killed))
            context = {}
    return kills, xids


#: the seconds since the epoch ``datetime`` can place (years 1 to 9999)
_FIRST_S, _LAST_S = -62135596800, 253402300799


def iso_utc_us(us: int) -> str:
    """``us`` (microseconds since the epoch) as an aware UTC ``datetime.isoformat()`` writes
    it: ``2026-01-01T00:00:00.250000+00:00``, no fraction when it is zero. By hand, because
    ``import datetime`` costs ~2 ms of a collection's CPU."""
    seconds, micro = divmod(us, 1_000_000)
    t = time.gmtime(seconds)
    fraction = f".{micro:06d}" if micro else ""
    return (
        f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}"
        f"T{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}{fraction}+00:00"
    )


def _epoch_us(now: int | datetime | Callable[[], datetime]) -> int:
    """The collection's moment in microseconds since the epoch (an aware datetime's exactly)."""
    if isinstance(now, int):
        return now
    moment = now() if callable(now) else now
    from datetime import UTC, datetime, timedelta

    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)


def _boot_time_s(root: str, gaps: GapLog) -> int | None:
    """The boot time (``btime`` of ``/proc/stat``, seconds since the epoch), or None and a gap."""
    try:
        for line in ascii_text(f"{root}/proc/stat", errors="replace").split("\n"):
            if line.startswith("btime "):
                btime = int(line.split()[1])
                if _FIRST_S <= btime <= _LAST_S:
                    return btime
                break
    except (OSError, ValueError, IndexError):
        pass
    gaps.add(
        "procfs:/proc/stat", "no btime: kernel log times cannot be placed on the clock", "no_btime"
    )
    return None


def _read_all(path: str, opener: Callable[[str, int], int]) -> bytes:
    fd = opener(path, hostos.O_RDONLY | hostos.O_NONBLOCK)
    chunks: list[bytes] = []
    size = 0
    try:
        while size < MAX_BYTES:
            try:
                data = hostos.read(fd, _READ_SIZE)
            except BlockingIOError:  # EAGAIN: the end of /dev/kmsg
                break
            except BrokenPipeError:  # EPIPE: records overwritten under us; next read goes on
                continue
            if not data:  # a plain file (the stand-in, a saved log): end of file
                break
            chunks.append(data)
            size += len(data)
    finally:
        hostos.close(fd)
    return b"".join(chunks)


def ascii_text(path: str, *, errors: str = "strict") -> str:
    """A small file's text as ``open(path, encoding="ascii", errors=errors).read()`` gives it
    (universal newlines: ``\\r\\n`` and ``\\r`` read as ``\\n``), without the io stack and the
    ``encodings.ascii`` module ``open`` imports for it (~0.3 ms of a refused Job's run)."""
    text = _read_all(path, hostos.open).decode("ascii", errors)
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_kernel_log(
    root: str,
    *,
    now: int | datetime | Callable[[], datetime],
    gpus: list[dict[str, Any]],
    gaps: GapLog,
    window_s: int = DEFAULT_WINDOW_S,
    opener: Callable[[str, int], int] = hostos.open,
    status_path: str = "/proc/self/status",
) -> dict[str, Any] | None:
    """The ``kernel_log`` document, or None with a gap when the log cannot be read.

    ``now``: the collection's moment: microseconds since the epoch (the collector's own
    clock: then ``datetime`` is never imported), an aware datetime, or a function that gives
    one (called only once the log is open).
    ``gpus`` are the NVML devices already read (``pci_bus_id`` maps an XID to its GPU).
    ``opener`` is ``os.open``; tests pass one that fails as the kernel would.
    ``status_path``: this process's status (its ``CapEff`` says whether CAP_SYSLOG is
    effective, so the gap blames it only when it is missing).
    """
    path = f"{root}/dev/kmsg"
    try:
        raw = _read_all(path, opener)
    except OSError as exc:
        gaps.add(SOURCE, *_open_reason(exc, root, cap_syslog=_cap_syslog_effective(status_path)))
        return None
    boot = _boot_time_s(root, gaps)
    boot_us = boot * 1_000_000 if boot is not None else None
    records = parse_records(raw.decode("utf-8", "replace"))
    kills, xids = parse_events(records)
    since_us = _epoch_us(now) - window_s * 1_000_000
    by_pci = {normalize_pci(g.get("pci_bus_id") or ""): g for g in gpus if g.get("pci_bus_id")}
    kept_kills = _placed(kills, boot_us, since_us)
    kept_xids = _placed(xids, boot_us, since_us)
    for x in kept_xids:
        gpu = by_pci.get(x["pci_bus_id"])
        if gpu is not None:
            x["gpu_index"], x["gpu_uuid"] = gpu["index"], gpu["uuid"]
        elif gpus:
            gaps.add(
                f"kmsg:xid:{x['pci_bus_id']}",
                "no GPU with this PCI address among the devices NVML lists (it may have "
                "fallen off the bus)",
                "xid_gpu_unknown",
                {"pci_bus_id": str(x["pci_bus_id"])},
            )
    return {
        "source": "/dev/kmsg",
        "window_s": window_s,
        "boot_time": iso_utc_us(boot_us) if boot_us is not None else None,
        "records_read": len(records),
        "first_record_at": _at(boot_us, records[0][1]) if records else None,
        "oom_kills": kept_kills[-MAX_EVENTS:],
        "xids": kept_xids[-MAX_EVENTS:],
    }


def _at(boot_us: int | None, usec: int) -> str | None:
    return iso_utc_us(boot_us + usec) if boot_us is not None else None


def _placed(
    events: list[dict[str, Any]], boot_us: int | None, since_us: int
) -> list[dict[str, Any]]:
    """The events at or after ``since_us``, each with its time (``at``; None without a boot
    time, and then all are kept)."""
    out = []
    for e in events:
        if boot_us is not None and boot_us + e["uptime_us"] < since_us:
            continue
        e["at"] = _at(boot_us, e["uptime_us"])
        out.append(e)
    return out


#: CAP_SYSLOG's bit in ``CapEff`` (linux/capability.h)
_CAP_SYSLOG = 34


def _cap_syslog_effective(status_path: str = "/proc/self/status") -> bool | None:
    """Whether this process holds CAP_SYSLOG in its effective set (None: unknown)."""
    try:
        for line in ascii_text(status_path, errors="replace").split("\n"):
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> _CAP_SYSLOG & 1)
    except (OSError, ValueError, IndexError):
        return None
    return None


def _restrict_value(root: str) -> str | None:
    try:
        return ascii_text(f"{root}/proc/sys/kernel/dmesg_restrict").strip()
    except OSError:
        return None


def _open_reason(
    exc: OSError, root: str, *, cap_syslog: bool | None
) -> tuple[str, str, dict[str, object]]:
    """(the English reason, its gap code, the code's params)."""
    if exc.errno in (errno.EPERM, errno.EACCES):
        restrict = _restrict_value(root)
        syslog = cap_syslog
        why = [
            "a container runtime admits the kmsg device (char 1:11) only to privileged "
            "containers, and the collector is not privileged"
        ]
        if restrict != "0" and syslog is False:
            why.append(
                f"kernel.dmesg_restrict={restrict or '?'} also wants CAP_SYSLOG, which the Job "
                "adds but which is not effective for the non-root collector (Kubernetes gives "
                "added capabilities to a non-root process in its bounding set only)"
            )
        errname = str(errno.errorcode.get(exc.errno or 0, exc.errno))
        text = (
            f"opening /dev/kmsg was refused ({errname}): "
            + "; ".join(why)
            + ". OOM-killer and XID records were not read on the node; OOM kills still come "
            "from node-problem-detector's OOMKilling events when it runs (README: Kernel log)"
        )
        params: dict[str, object] = {"errno": errname}
        if len(why) > 1:
            params["dmesg_restrict"] = restrict or "?"
        return text, "kmsg_refused", params
    if exc.errno == errno.ENOENT:
        return (
            "no /dev/kmsg under the host root: mount the host's /dev/kmsg into the collector",
            "no_kmsg",
            {},
        )
    error = str(exc.strerror or exc)
    return f"cannot read /dev/kmsg: {error}", "kmsg_unreadable", {"error": error}
