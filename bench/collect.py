"""Benchmark ``gpunode collect`` against ``ps aux --sort=-%mem`` and a C reader of the same
files, on a busy process table.

For each count in ``--procs`` (default 500,2000; the issue's set adds 20,000), starts that
many idle ``sleep`` processes (one process group, always killed at the end), then runs the
collector (the Job's command, ``python -I -S bot/__main__.py collect --format json``: default
top 20, real NVML lookup) under each interpreter of ``--python``, ``ps`` and the C reader
(bench/collect_reader.c, compiled with ``cc -O2`` when a compiler is present, else skipped with
the reason) in alternation for several rounds. The C reader reads the files the collector reads,
in its order: meminfo, PSI, sockstat and slabinfo; the cgroup version, the kubepods walk and
its cgroups' memory files; statm of every process, then status, cmdline, smaps_rollup and
cgroup of the top 20 + 8 (the collector's rank slack); /dev/kmsg and /proc/stat (or, refused,
what words the gap); the kept processes' own cgroups' memory files. It prints a line per
process, no JSON and no analysis. The same source built with ``-DNARROW`` is the reader this
bench used before (statm of every process, then status, comm, smaps_rollup and cgroup of the top
20 only), timed too and reported as ``ratio_vs_c_narrow``: a floor, not a peer, since the
collector must read more than that. The ``bot`` package is byte-compiled first (``compileall``)
and the Job's code pack built (``python -m bot.collectors.codepack``, by the headline
interpreter), as the collector image does, so no run pays for compiling. Prints medians and, as
the last line, one JSON object for the largest count: {"bench": "collect", "metric":
"wall_s_median", "value", "baseline" (ps), "ratio", "target": 1.0, "ratio_vs_c", "target_vs_c":
1.5, "cpu_ratio_vs_c", "ratio_vs_c_narrow", "max_ratio_vs_c", "max_ratio_vs_c_procs",
"max_ratio_vs_ps", "floor_ratio_vs_c", "resident_ratio_vs_c", "python_loop_ratio_vs_c" (all three
at max_ratio_vs_c_procs), "native",
"python", "interpreters", "peak_rss_mib", "counts": [...]}.
``cpu_ratio_vs_c`` is the ratio of the median CPU seconds (user + system, from wait4) of the
collector's and the C reader's runs: on a loaded machine the wall clock also counts the wait for
a core. Peak RSS (target <= 20 MiB) is the largest ``ru_maxrss`` of three more collector runs,
each fork()ed by bench/maxrss.c (a small C process): a child that subprocess starts with vfork()
reports in ``ru_maxrss`` the bench's own resident memory at the moment it exec'd, so the timed
runs' figure is not the collector's. Each count also reports ``top20_rss_mib``: the resident
memory of the 20 largest processes, whose smaps_rollup the collector and the C reader both read
(the kernel walks their page tables: on a shared machine that, not the process count, can
dominate).

Interpreters: the Job runs the collector image's python:3.11-slim, which is built with
``--enable-optimizations --with-lto``; a development interpreter may not be (pyenv's default
build is neither), and then starts and runs the same code markedly slower. By default the
collector runs under both, in alternation: first an interpreter of the same version built as
a release is (``/usr/local/bin`` as in the official image, else the distribution's
``/usr/bin``), whose figures are the headline, then this one (``sys.executable``). Each
interpreter's version, the optimization flags its configure line states and its bare
start-up (``-I -S -c pass``) are in ``interpreters``, and each count's per-interpreter
figures under ``counts[].interpreters``. ``max_ratio_vs_c`` is the largest ratio to the C
reader over the counts of 2,000 and more (the issue's target holds at each of them).

Two more figures place the collector between what CPython must pay and what C pays, from the
same alternation:

- ``floor_ratio_vs_c``: the least a collector in CPython could take were each of its reads as
  cheap as C's. A run of the Job's command that loads the collector's code from the pack and
  exits before its first read (``load_only_s``), plus the C reader's whole run, less one
  process start and exit under the same prefix (``true``: ``empty_s``), which both count.
  What the collector takes above it (``collect_s`` minus the floor) is its reads' cost in
  Python over their cost in C.
- ``python_loop_ratio_vs_c``: the same collector with its C statm loop turned off
  (``GPUNODE_NATIVE=0``), as a machine without the C module (``bot/collectors/_statm.c``,
  built by ``make setup`` where a compiler is) runs it. ``native`` says whether the headline
  collector had the module.
- ``resident_ratio_vs_c``: the DaemonSet mode's collector (``gpunode agent``), one process
  started once, timed inside that process per collection (``Agent.evidence``: the bundle and
  its JSON bytes; no HTTP, TLS or TokenReview), against the C reader's whole run: what a
  collection costs when no interpreter has to start.

``--as-job`` runs all of them as the diagnostic Job does (uid 65534, no capabilities): the
kernel then refuses smaps_rollup of other users' processes, /proc/slabinfo and /dev/kmsg to
the collector and the C readers alike (the collector records them as gaps). Without it, as
root, they read every top process's smaps_rollup, which the Job never may.

Usage: python bench/collect.py [--procs 500,2000,20000] [--rounds 7] [--as-job]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def collector_command(python: str) -> list[str]:
    """The diagnostic Job's own command (templates/kube/diagnostic-job.yaml.j2: ``python -I -S
    /opt/gpunode/bot/__main__.py collect --root /host --format json``) on this checkout's
    ``bot``, with the host root and kernel log window at their defaults (``/``, 24 h), run by
    ``python``: the same interpreter flags, so the timing includes the start-up the Job pays,
    no more, no less."""
    return [
        python,
        "-I",
        "-S",
        str(REPO / "bot" / "__main__.py"),
        "collect",
        "--format",
        "json",
    ]


#: the Job's run up to its first read (bot/__main__.py's JOB_RUN path: the collector's code
#: loaded from the pack, the collector's runner imported) and its exit, nothing read: the
#: least any collector in CPython pays before and after its reads
LOAD_ONLY = (
    "import sys, gc; gc.disable(); sys.path.insert(0, {home!r}); "
    "from bot.collectors.codepack import install; install({home!r}); "
    "import bot.collectors.cli; from posix import _exit; sys.stdout.flush(); _exit(0)"
)

#: the DaemonSet mode's collector (``gpunode agent``), resident: for each line it reads, one
#: collection as the agent serves ``GET /v1/evidence`` (``Agent.evidence``: the bundle and its
#: JSON bytes, no HTTP, no TLS, no TokenReview), and its own wall seconds written back
RESIDENT = (
    "import sys, time; sys.path.insert(0, {home!r}); "
    "from bot.collectors.agent import Agent; "
    "agent = Agent(root='/', allow='-', api_server='https://127.0.0.1:9', "
    "api_token_file='/nonexistent')\n"
    "for _ in sys.stdin:\n"
    "    t = time.perf_counter(); agent.evidence(); "
    "print(time.perf_counter() - t, flush=True)\n"
)


def has_native(python: str) -> bool:
    """Whether the collector run by ``python`` uses its C statm loop (built by ``make setup``:
    ``python -m bot.collectors.native``) or, without it, reads statm in Python."""
    probe = (
        f"import sys; sys.path.insert(0, {str(REPO)!r}); from bot.collectors import procfs; "
        "print(procfs.NATIVE_RANK is not None)"
    )
    done = subprocess.run([python, "-I", "-S", "-c", probe], capture_output=True, text=True)
    return done.stdout.strip() == "True"


def load_only_command(python: str) -> list[str]:
    """A run of ``python`` as the Job's that loads the collector's code and reads nothing."""
    return [python, "-I", "-S", "-c", LOAD_ONLY.format(home=str(REPO))]


class Resident:
    """The agent's collector in one long-lived process (started under ``prefix``, so as the
    Job's user with ``--as-job``): ``collect()`` asks for one collection and returns the wall
    seconds it took, timed inside that process. The bench's side of the pipe is not timed."""

    def __init__(self, prefix: list[str], python: str) -> None:
        self.proc = subprocess.Popen(
            [*prefix, python, "-I", "-S", "-c", RESIDENT.format(home=str(REPO))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=REPO,
            text=True,
        )

    def collect(self) -> float:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        if not answer:
            err = self.proc.stderr.read() if self.proc.stderr else ""
            raise SystemExit(f"the resident collector failed: {err}")
        return float(answer)

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


def build_code_pack(python: str) -> None:
    """The Job's code in one file, as the collector image builds it after byte-compiling
    (Dockerfile: ``python -I -m bot.collectors.codepack /opt/gpunode``), here for this
    checkout; a run whose sources changed since is served the ordinary way."""
    subprocess.run(
        [python, "-S", "-m", "bot.collectors.codepack", str(REPO)],
        cwd=REPO,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def release_python() -> str | None:
    """An interpreter of this one's version built as the Job's is, if this machine has one.

    The Job runs the collector image's ``python`` (python:3.11-slim), which docker-library
    builds with ``--enable-optimizations --with-lto`` (profile-guided and link-time optimized;
    docker-library/python, 3.11/slim-bookworm/Dockerfile). A development interpreter need not
    be: pyenv's default build, for one, has neither, and starts and runs markedly slower.
    Looked for, in order: the official image's path (``/usr/local/bin``), then the
    distribution's (``/usr/bin``; Debian and Ubuntu build theirs with PGO and LTO too).
    ``None`` when neither exists or it is this interpreter."""
    name = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for folder in ("/usr/local/bin", "/usr/bin"):
        found = Path(folder) / name
        if found.exists() and found.resolve() != Path(sys.executable).resolve():
            return str(found)
    return None


def describe_python(python: str, rounds: int = 21) -> dict[str, Any]:
    """What the interpreter is (version, configure's optimization flags) and its bare
    start-up, ``python -I -S -c pass``: median wall seconds of ``rounds`` runs, which every
    collection pays before reading a file."""
    facts = subprocess.run(
        [
            python,
            "-I",
            "-S",
            "-c",
            "import sys, sysconfig; a = sysconfig.get_config_var('CONFIG_ARGS') or ''; "
            "print(sys.version.split()[0]); "
            "print(' '.join(f for f in ('--enable-optimizations', '--with-lto') if f in a))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    starts = [timed([python, "-I", "-S", "-c", "pass"]) for _ in range(rounds)]
    return {
        "python": python,
        "version": facts[0],
        "configure_optimizations": facts[1] if len(facts) > 1 and facts[1] else "none stated",
        "startup_s": round(statistics.median(starts), 4),
    }


#: CPU seconds (user + system) of each command's runs, by command: ``timed`` adds to it. On a
#: shared machine the wall clock also counts waiting for a core; CPU time does not
CPU: dict[tuple[str, ...], list[float]] = {}


#: the collector's environment with its C statm loop turned off (bot/collectors/procfs.py)
PYTHON_LOOP_ENV = {**os.environ, "GPUNODE_NATIVE": "0"}


def timed(cmd: list[str], env: dict[str, str] | None = None) -> float:
    """Wall seconds of one run, output discarded (its CPU seconds go to ``CPU``, under the
    command, and ``GPUNODE_NATIVE=0`` after it when ``env`` is ``PYTHON_LOOP_ENV``)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO, env=env
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    key = (*cmd, "GPUNODE_NATIVE=0") if env is PYTHON_LOOP_ENV else tuple(cmd)
    CPU.setdefault(key, []).append(usage.ru_utime + usage.ru_stime)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        err = proc.stderr.read().decode() if proc.stderr else ""
        raise SystemExit(f"{cmd[0]} failed ({proc.returncode}): {err}")
    if proc.stderr:
        proc.stderr.close()
    return wall


def peak_rss_kib(maxrss: list[str], cmd: list[str]) -> int:
    """The command's own peak RSS (KiB), as bench/maxrss.c reports it."""
    done = subprocess.run(
        [*maxrss, *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO, check=False
    )
    last = done.stderr.decode().strip().rsplit("\n", 1)[-1]
    if done.returncode != 0 or not last.startswith("maxrss_kib "):
        raise SystemExit(f"{cmd[0]} failed under maxrss ({done.returncode}): {last}")
    return int(last.split()[1])


def _pids() -> int:
    return sum(1 for p in os.listdir("/proc") if p.isdigit())


def top_rss_mib(n: int = 20) -> float:
    """Resident MiB of the ``n`` largest processes (statm). The kernel builds smaps_rollup by
    walking their page tables, so the collector's and the C reader's exact-RSS reads cost
    about this much memory's worth of walking; ps reads no smaps at all."""
    pages: list[int] = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/statm", "rb") as fh:
                    pages.append(int(fh.read().split()[1]))
            except (OSError, IndexError, ValueError):
                continue
    return round(sum(sorted(pages)[-n:]) * os.sysconf("SC_PAGE_SIZE") / 2**20, 1)


def start_sleepers(count: int) -> subprocess.Popen[bytes]:
    """``count`` idle sleeps in their own process group (the shell that started them leads it)."""
    before = _pids()
    spawner = subprocess.Popen(
        ["sh", "-c", f"i=0; while [ $i -lt {count} ]; do sleep 600 & i=$((i+1)); done; wait"],
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while _pids() < before + count and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1.0)  # let the spawner settle so it does not compete with the measurements
    return spawner


def stop_sleepers(spawner: subprocess.Popen[bytes]) -> None:
    """Kill the whole group and wait until none of it is left."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(spawner.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                os.killpg(spawner.pid, 0)
            except ProcessLookupError:
                break
            spawner.poll()
            time.sleep(0.1)
    spawner.wait(timeout=30)


def build_reader(
    tmp: str, *, narrow: bool = False, name: str = "collect_reader"
) -> list[str] | str:
    """The C program ``name``.c's command (``narrow``: built with -DNARROW), or why it is
    skipped."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return "skipped: no C compiler (cc) on this machine"
    out = str(Path(tmp) / (f"{name}_narrow" if narrow else name))
    source = str(Path(__file__).with_name(f"{name}.c"))
    done = subprocess.run(
        [cc, "-O2", *(["-DNARROW"] if narrow else []), "-o", out, source],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        return f"skipped: cc failed: {done.stderr[:200]}"
    return [out]


#: the diagnostic Job's identity (templates/kube/diagnostic-job.yaml.j2: runAsUser 65534, every
#: capability dropped). As that user the kernel refuses smaps_rollup of other users'
#: processes, /proc/slabinfo and /dev/kmsg, to the collector and the C reader alike.
AS_JOB = [
    "setpriv",
    "--reuid=65534",
    "--regid=65534",
    "--clear-groups",
    "--inh-caps=-all",
    "--bounding-set=-all",
]


def one_count(
    count: int,
    rounds: int,
    readers: tuple[list[str] | str, list[str] | str, list[str] | str],
    prefix: list[str],
    pythons: list[str],
) -> dict[str, Any]:
    """Times every interpreter's collector, ps and the C readers in alternation on ``count``
    idle processes. The row's own figures are the first interpreter's (the Job's model); each
    interpreter's are under ``interpreters``."""
    reader, narrow, maxrss = readers
    collectors = [[*prefix, *collector_command(python)] for python in pythons]
    baseline = [*prefix, "ps", "aux", "--sort=-%mem"]
    if isinstance(reader, list):
        reader = [*prefix, *reader]
    if isinstance(narrow, list):
        narrow = [*prefix, *narrow]
    load_only = [*prefix, *load_only_command(pythons[0])]
    empty = [*prefix, shutil.which("true") or "/bin/true"]  # a start and an exit, nothing else
    spawner = start_sleepers(count)
    resident = Resident(prefix, pythons[0])
    loads: list[float] = []
    empties: list[float] = []
    residents: list[float] = []
    python_loops: list[float] = []
    ours: list[list[float]] = [[] for _ in collectors]
    theirs: list[float] = []
    cs: list[float] = []
    narrows: list[float] = []
    peaks: list[int] = []
    try:
        pids = _pids()
        top20 = top_rss_mib()
        print(f"process table: {pids} pids; collectors: {collectors}", file=sys.stderr)
        CPU.clear()
        for collector in collectors:  # warm the page cache
            timed(collector)
        timed(baseline)
        timed(load_only)
        resident.collect()
        for _ in range(rounds):
            for times, collector in zip(ours, collectors, strict=True):
                times.append(timed(collector))
            python_loops.append(timed(collectors[0], env=PYTHON_LOOP_ENV))
            theirs.append(timed(baseline))
            if isinstance(reader, list):
                cs.append(timed(reader))
            if isinstance(narrow, list):
                narrows.append(timed(narrow))
            loads.append(timed(load_only))
            empties.append(timed(empty))
            residents.append(resident.collect())
        if isinstance(maxrss, list):
            peaks = [peak_rss_kib(maxrss, collectors[0]) for _ in range(3)]
    finally:
        resident.close()
        stop_sleepers(spawner)
    base = statistics.median(theirs)
    c_s = statistics.median(cs) if cs else None
    c_cpu = statistics.median(CPU[tuple(reader)]) if cs and isinstance(reader, list) else None
    each: list[dict[str, Any]] = []
    for python, times, collector in zip(pythons, ours, collectors, strict=True):
        value = statistics.median(times)
        # the timed rounds' CPU median (the warm-up run is the first of the list)
        cpu = statistics.median(CPU[tuple(collector)][1:])
        entry: dict[str, Any] = {
            "python": python,
            "collect_s": round(value, 4),
            "ratio_vs_ps": round(value / base, 3),
            "collect_cpu_s": round(cpu, 4),
        }
        if c_s is not None and c_cpu is not None:
            entry["ratio_vs_c"] = round(value / c_s, 3)
            entry["cpu_ratio_vs_c"] = round(cpu / c_cpu, 3)
        each.append(entry)
    first = each[0]
    row: dict[str, Any] = {
        "procs": count,
        "pids": pids,
        "python": first["python"],
        "collect_s": first["collect_s"],
        "ps_s": round(base, 4),
        "ratio_vs_ps": first["ratio_vs_ps"],
        "peak_rss_mib": round(max(peaks) / 1024, 1) if peaks else maxrss,
        "top20_rss_mib": top20,
    }
    if c_s is not None and c_cpu is not None:
        row["c_reader_s"] = round(c_s, 4)
        row["ratio_vs_c"] = first["ratio_vs_c"]
        row["collect_cpu_s"], row["c_reader_cpu_s"] = first["collect_cpu_s"], round(c_cpu, 4)
        row["cpu_ratio_vs_c"] = first["cpu_ratio_vs_c"]
    else:
        row["c_reader_s"] = reader
    load_s, resident_s = statistics.median(loads), statistics.median(residents)
    empty_s = statistics.median(empties)
    row["load_only_s"], row["empty_s"] = round(load_s, 4), round(empty_s, 4)
    row["resident_s"] = round(resident_s, 4)
    if c_s is not None:
        # the least a CPython collector could take were each of its reads as cheap as C's: the
        # Job's start-up, code and exit (load_only) plus the C reader's whole run, less one
        # process start and exit (``true``), which both of those count
        row["floor_ratio_vs_c"] = round((load_s + c_s - empty_s) / c_s, 3)
        row["resident_ratio_vs_c"] = round(resident_s / c_s, 3)
    # the same collector with its statm loop in Python (GPUNODE_NATIVE=0): what a machine
    # without the C module gets, and what the module saves
    loop_s = statistics.median(python_loops)
    row["python_loop_s"] = round(loop_s, 4)
    if c_s is not None and c_cpu is not None:
        loop_cpu = statistics.median(CPU[(*collectors[0], "GPUNODE_NATIVE=0")])
        row["python_loop_ratio_vs_c"] = round(loop_s / c_s, 3)
        row["python_loop_cpu_ratio_vs_c"] = round(loop_cpu / c_cpu, 3)
    if narrows:
        row["c_narrow_s"] = round(statistics.median(narrows), 4)
        row["ratio_vs_c_narrow"] = round(first["collect_s"] / statistics.median(narrows), 3)
    row["interpreters"] = each
    print(json.dumps(row), file=sys.stderr)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--procs", default="500,2000", help="process counts, comma-separated")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument(
        "--as-job",
        action="store_true",
        help="run the collector, ps and the C reader as the Job runs (uid 65534, no "
        "capabilities; needs root and setpriv). Default: as the caller (root reads every "
        "process's smaps_rollup, which the Job never may)",
    )
    parser.add_argument(
        "--python",
        action="append",
        default=None,
        help="an interpreter to run the collector with (repeat for several; the first is the "
        "headline). Default: an interpreter built as the Job image's is (release_python), "
        "then this one",
    )
    args = parser.parse_args()
    pythons: list[str] = args.python or [
        p for p in (release_python(), sys.executable) if p is not None
    ]
    compileall.compile_dir(str(REPO / "bot"), quiet=1)  # .pyc before timing
    build_code_pack(pythons[0])
    native = has_native(pythons[0])
    print(f"the C statm loop (bot.collectors._statm) under {pythons[0]}: {native}", file=sys.stderr)
    described = [describe_python(python) for python in pythons]
    with tempfile.TemporaryDirectory() as tmp:
        prefix: list[str] = []
        if args.as_job:
            if os.geteuid() != 0 or shutil.which("setpriv") is None:
                raise SystemExit("--as-job needs root and setpriv (util-linux)")
            prefix = AS_JOB
            os.chmod(tmp, 0o755)  # the Job's user runs the C reader from here
        readers = (
            build_reader(tmp),
            build_reader(tmp, narrow=True),
            build_reader(tmp, name="maxrss"),
        )
        rows = [
            one_count(int(c), args.rounds, readers, prefix, pythons) for c in args.procs.split(",")
        ]
    last = rows[-1]
    # the counts (2,000 and up): the target holds at each, not only at the last
    judged = [r for r in rows if r["procs"] >= 2000 and "ratio_vs_c" in r] or rows[-1:]
    worst = max(judged, key=lambda r: r.get("ratio_vs_c", 0.0))
    print(
        json.dumps(
            {
                "bench": "collect",
                "metric": "wall_s_median",
                "value": last["collect_s"],
                "baseline": last["ps_s"],
                "ratio": last["ratio_vs_ps"],
                "target": 1.0,
                "ratio_vs_c": last.get("ratio_vs_c"),
                "cpu_ratio_vs_c": last.get("cpu_ratio_vs_c"),
                "target_vs_c": 1.5,
                "ratio_vs_c_narrow": last.get("ratio_vs_c_narrow"),
                "max_ratio_vs_c": worst.get("ratio_vs_c"),
                "max_ratio_vs_c_procs": worst["procs"],
                "max_ratio_vs_ps": max(r["ratio_vs_ps"] for r in judged),
                "floor_ratio_vs_c": worst.get("floor_ratio_vs_c"),
                "resident_ratio_vs_c": worst.get("resident_ratio_vs_c"),
                "python_loop_ratio_vs_c": worst.get("python_loop_ratio_vs_c"),
                "native": native,
                "python": pythons[0],
                "interpreters": described,
                "peak_rss_mib": last["peak_rss_mib"],
                "target_rss_mib": 20,
                "as_job": args.as_job,
                "counts": rows,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
