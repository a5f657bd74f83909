"""The bot's process tree, as ``bench/fleet.py`` counts its memory (issue #25's 300 MiB).

A serving bot is more than its own process: it starts workers, ``python -m MODULE`` processes
(``bot.working.WorkerProcess``): the page decoder (``bot.kube.decoding``) and the analysis
and chart worker (``bot.working``). ``TreeSampler`` runs in a process of its own (the
bot's process does none of the reading: it would hold the bot's interpreter lock) and reads,
every ``interval_s``, each child of the bot's process that is such a worker: its role and
its peak resident set (``VmHWM``, the kernel's high-water mark over the process's life).

``tree_peaks`` then counts, for each measured window (a ``top``), every worker seen alive in
it at its highest peak read there, summed by role, and answers the window whose sum is
largest: the sum of per-process peaks, the conservative figure (the processes need not have
peaked at the same moment). Workers of different windows are never added together (each
``top`` of the bench runs on a fresh gateway with a decoder of its own); a worker that ended
before a window began is not counted in it (it holds nothing then).
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

#: a bot worker's role by the module it runs (``python -m MODULE``)
ROLES = {"bot.kube.decoding": "decoder", "bot.working": "analysis_worker"}


class Sighting(NamedTuple):
    """One read of one worker: when (``time.time()``), which, its role, its VmHWM in MiB."""

    at: float
    pid: int
    role: str
    hwm_mib: float


def role_of(cmdline: Sequence[str]) -> str | None:
    """The role of a process started as ``cmdline`` if it is one of the bot's workers
    (``python -m bot.…``; ``other_worker`` for a module ``ROLES`` does not name); None for any
    other process (the Kubernetes stand-in, the bench's own helpers)."""
    args = list(cmdline)
    if "-m" not in args[:-1]:
        return None
    module = args[args.index("-m") + 1]
    if module in ROLES:
        return ROLES[module]
    return "other_worker" if module.startswith("bot.") else None


def tree_peaks(
    sightings: Iterable[Sighting], windows: Iterable[tuple[float, float]]
) -> dict[str, float]:
    """By role, the workers' peaks in the window where their sum is largest (see the module
    docstring); ``{}`` when no worker was seen in any window."""
    seen = list(sightings)
    best: dict[str, float] = {}
    for start, end in windows:
        peaks: dict[int, Sighting] = {}
        for s in seen:
            if start <= s.at <= end and (s.pid not in peaks or s.hwm_mib > peaks[s.pid].hwm_mib):
                peaks[s.pid] = s
        by_role: dict[str, float] = defaultdict(float)
        for s in peaks.values():
            by_role[s.role] += s.hwm_mib
        if sum(by_role.values()) > sum(best.values()):
            best = dict(by_role)
    return best


def peak_of(sightings: Iterable[Sighting], role: str) -> float:
    """The highest peak read of any one worker of ``role``, whenever it was read."""
    return max((s.hwm_mib for s in sightings if s.role == role), default=0.0)


def holds_memory(pid: int) -> bool:
    """Whether process ``pid`` runs still (ended, or a zombie not yet reaped: it holds no
    memory then)."""
    return status_mib(pid) is not None


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found.update(int(c) for c in (task / "children").read_text().split())
        except OSError:
            continue  # the thread ended meanwhile
    return found


def status_mib(pid: int | str = "self", field: str = "VmHWM") -> float | None:
    """A memory ``field`` of ``/proc/<pid>/status`` (VmHWM: the peak; VmRSS: now) in MiB;
    None when the process is gone (or the field absent: a zombie)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _sample(pid: int, interval_s: float, ready: Any, stop: Any, out: Any) -> None:
    sightings: list[Sighting] = []
    roles: dict[int, str] = {}  # a child not (yet) a worker is read again: forked, it shows
    ready.set()  # its parent's command line until it execs
    while not stop.is_set():
        try:
            children = _children(pid)
        except OSError:
            break  # the bot's process is gone
        for child in children:
            role = roles.get(child)
            if role is None:
                try:
                    cmdline = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                role = role_of([a.decode(errors="replace") for a in cmdline if a])
                if role is None:
                    continue
                roles[child] = role
            hwm = status_mib(child)
            if hwm is not None:
                sightings.append(Sighting(time.time(), child, role, hwm))
        time.sleep(interval_s)
    out.put(sightings)


class TreeSampler:
    """``_sample`` of this process's workers, in a process of its own, from its return (it
    waits for the sampler's first read: a spawned process imports the main module first)
    until ``stop`` (which answers every sighting)."""

    def __init__(self, interval_s: float = 0.1) -> None:
        ctx = multiprocessing.get_context("spawn")
        ready, self._stop, self._out = ctx.Event(), ctx.Event(), ctx.Queue()
        self._proc = ctx.Process(
            target=_sample,
            args=(os.getpid(), interval_s, ready, self._stop, self._out),
            daemon=True,
        )
        self._proc.start()
        self.pid = self._proc.pid
        if not ready.wait(timeout=120):
            raise RuntimeError("the process tree sampler did not start")

    def stop(self) -> list[Sighting]:
        self._stop.set()
        sightings: list[Sighting] = self._out.get(timeout=60)
        self._proc.join(timeout=30)
        return sightings
