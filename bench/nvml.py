"""NVML on a real GPU: what the driver reports, what the collector records, and what it costs.

Needs a machine with an NVIDIA GPU, its driver, ``nvidia-smi`` and ``nvidia-ml-py``; PyTorch
(``torch``) places the GPU memory the checks look for. Without a GPU it prints why and exits 0
with ``"skipped"`` in its last line; it is run by hand on a GPU machine, never by the suite.

What it does, in one run:

1. Starts two holder processes that each allocate and touch a known amount of GPU memory
   (``--hold-mib``, default 8192 and 2048) through PyTorch and wait.
2. Reads the driver's own figures with ``pynvml`` directly (memory info v1 and v2, the compute
   processes) and with ``nvidia-smi`` (``--query-gpu`` and ``--query-compute-apps``).
3. Runs the diagnostic Job's command as the collector image lays it out (``python -I -S
   HOME/bot/__main__.py collect --format json``, with NVML's bindings beside ``bot/`` in HOME)
   twice, as root and as the Job's user (uid and gid 65534, no capabilities), and reads both
   bundles; every check below runs on each.
4. Checks, and names each check in ``checks`` with what it compared:
   - the bundle has one device per GPU NVML counts, with nvidia-smi's UUID, name and total;
   - each holder's host PID is among the bundle's GPU processes on its GPU, holding at least
     what it allocated and at most that plus ``--context-mib`` (CUDA's context), and the same
     figure nvidia-smi reports for that PID (to the MiB it rounds to);
   - each holder's command line was read from /proc (the PID is a host PID);
   - the bundle's device used memory is NVML's own (v2 when the binding has it), within what
     changed between the two reads.
5. Reports, without judging them, the memory identities reference/kubernetes.md §8 left open:
   whether ``total == free + used`` (v1), ``total == free + used + reserved`` (v2) and ``v1
   used == v2 used + v2 reserved``, each with its difference in bytes.
6. Times ``read_gpus`` (nvmlInit to nvmlShutdown, in a warm process) against the baseline,
   ``nvidia-smi --query-gpu=... --query-compute-apps=...`` as a monitoring script would run it,
   alternating, medians of ``--rounds``.

Last line: {"bench": "nvml", "metric": "read_ms_median", "value", "baseline" (nvidia-smi ms),
"ratio", "target": 1.0, "checks_passed", "checks_failed", "identities", "driver", "gpu"}. The exit
status is 1 when a check failed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

MIB = 1024 * 1024

HOLDER = (
    "import sys, time, torch\n"
    "n = int(sys.argv[1]) * 1024 * 1024\n"
    "x = torch.empty(n, dtype=torch.uint8, device='cuda')\n"
    "x.fill_(1)\n"
    "torch.cuda.synchronize()\n"
    "print('ready', flush=True)\n"
    "time.sleep(float(sys.argv[2]))\n"
)


def _smi(*query: str) -> list[list[str]]:
    out = subprocess.run(
        ["nvidia-smi", *query, "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return [[cell.strip() for cell in line.split(",")] for line in out.splitlines() if line.strip()]


def _raw_nvml() -> dict[str, Any]:
    """The driver's figures, read with pynvml directly (not through the collector)."""
    import pynvml as nv

    nv.nvmlInit()
    try:
        out: dict[str, Any] = {"driver": _text(nv.nvmlSystemGetDriverVersion()), "devices": []}
        for i in range(nv.nvmlDeviceGetCount()):
            h = nv.nvmlDeviceGetHandleByIndex(i)
            v1 = nv.nvmlDeviceGetMemoryInfo(h)
            dev: dict[str, Any] = {
                "index": i,
                "uuid": _text(nv.nvmlDeviceGetUUID(h)),
                "v1": {"total": v1.total, "free": v1.free, "used": v1.used},
            }
            if hasattr(nv, "nvmlMemory_v2"):
                v2 = nv.nvmlDeviceGetMemoryInfo(h, version=nv.nvmlMemory_v2)
                dev["v2"] = {
                    "total": v2.total,
                    "free": v2.free,
                    "used": v2.used,
                    "reserved": v2.reserved,
                }
            dev["processes"] = {
                int(p.pid): p.usedGpuMemory for p in nv.nvmlDeviceGetComputeRunningProcesses(h)
            }
            out["devices"].append(dev)
        return out
    finally:
        nv.nvmlShutdown()


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def identities(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """reference §8's open question, per device: each identity's difference in bytes."""
    rows = []
    for dev in raw["devices"]:
        v1 = dev["v1"]
        row: dict[str, Any] = {
            "index": dev["index"],
            "v1_total_minus_free_plus_used": v1["total"] - (v1["free"] + v1["used"]),
        }
        v2 = dev.get("v2")
        if v2 is not None:
            row["v2_total_minus_free_used_reserved"] = v2["total"] - (
                v2["free"] + v2["used"] + v2["reserved"]
            )
            row["v2_total_minus_free_used"] = v2["total"] - (v2["free"] + v2["used"])
            row["v1_used_minus_v2_used_plus_reserved"] = v1["used"] - (v2["used"] + v2["reserved"])
            row["v1_used_minus_v2_used"] = v1["used"] - v2["used"]
            row["v2_reserved"] = v2["reserved"]
        rows.append(row)
    return rows


def job_home(tmp: Path) -> Path:
    """The collector image's layout: bot/ and NVML's bindings (pynvml.py) in one folder."""
    import pynvml

    home = tmp / "gpunode"
    home.mkdir()
    # a copy, not a link: the checkout may sit where the Job's user cannot read
    shutil.copytree(REPO / "bot", home / "bot", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(pynvml.__file__, home / "pynvml.py")
    return home


def _as_job() -> None:
    """The diagnostic Job's identity (templates/kube/diagnostic-job.yaml.j2: runAsUser and
    runAsGroup 65534; a root process that sets all its uids to 65534 loses its capabilities)."""
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)


def collect(home: Path, *, as_job: bool) -> tuple[dict[str, Any], float]:
    """The Job's command's bundle and wall seconds: under this interpreter, or where the Job's
    user may not run it (a virtual environment in root's home), the system's ``python3``."""
    for python in (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3"):
        try:
            return _collect(python, home, as_job=as_job)
        except PermissionError:
            continue
    raise SystemExit("no python3 the Job's user may run")


def job_command(python: str, home: Path, *, kernel_log_window_s: int) -> list[str]:
    """The diagnostic Job's command, run from ``home`` (``job_home``) by ``python``."""
    main = str(home / "bot" / "__main__.py")
    window = ["--kernel-log-window", str(kernel_log_window_s)]
    return [python, "-I", "-S", main, "collect", "--format", "json", *window]


def _collect(python: str, home: Path, *, as_job: bool) -> tuple[dict[str, Any], float]:
    started = time.perf_counter()
    proc = subprocess.run(
        job_command(python, home, kernel_log_window_s=0),
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_as_job if as_job else None,
    )
    took = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"the Job's command failed ({proc.returncode}): {proc.stderr}")
    return json.loads(proc.stdout), took


def check(
    bundle: dict[str, Any],
    raw: dict[str, Any],
    smi_gpus: list[list[str]],
    smi_apps: list[list[str]],
    holders: dict[int, int],
    context_mib: int,
) -> list[dict[str, Any]]:
    """Every check, passed or not, with the figures it compared."""
    checks: list[dict[str, Any]] = []

    def add(name: str, ok: bool, **seen: Any) -> None:
        checks.append({"check": name, "ok": bool(ok), **seen})

    gpus = bundle.get("gpus", [])
    add(
        "one device per GPU NVML counts",
        len(gpus) == len(raw["devices"]),
        bundle=len(gpus),
        nvml=len(raw["devices"]),
    )
    by_uuid = {row[1]: row for row in smi_gpus}
    for g in gpus:
        smi = by_uuid.get(g["uuid"])
        add(f"gpu{g['index']} is one nvidia-smi lists", smi is not None, uuid=g["uuid"])
        if smi is None:
            continue
        add(
            f"gpu{g['index']} name as nvidia-smi's",
            g["name"] == smi[2],
            bundle=g["name"],
            smi=smi[2],
        )
        add(
            f"gpu{g['index']} total as nvidia-smi's (MiB)",
            g["memory_total_bytes"] // MIB == int(smi[3]),
            bundle_mib=g["memory_total_bytes"] // MIB,
            smi_mib=int(smi[3]),
        )
        dev = raw["devices"][g["index"]]
        mem = dev.get("v2") or dev["v1"]
        add(
            f"gpu{g['index']} used is NVML's {'v2' if 'v2' in dev else 'v1'} used",
            abs(g["memory_used_bytes"] - mem["used"]) <= 64 * MIB,
            bundle=g["memory_used_bytes"],
            nvml=mem["used"],
        )
        if "v2" in dev:
            add(
                f"gpu{g['index']} reserved is NVML's v2 reserved",
                g["memory_reserved_bytes"] == dev["v2"]["reserved"],
                bundle=g["memory_reserved_bytes"],
                nvml=dev["v2"]["reserved"],
            )
    smi_pid = {int(row[0]): int(row[1]) for row in smi_apps if row[0].isdigit()}
    seen = {p["pid"]: p for p in bundle.get("gpu_processes", [])}
    for pid, mib in holders.items():
        got = seen.get(pid)
        add(
            f"holder {pid} ({mib} MiB) is a GPU process of the bundle",
            got is not None,
            bundle_pids=sorted(seen),
        )
        if got is None:
            continue
        used = got.get("used_gpu_memory_bytes")
        add(
            f"holder {pid} holds its {mib} MiB plus at most {context_mib} MiB of context",
            used is not None and mib * MIB <= used <= (mib + context_mib) * MIB,
            bundle_mib=None if used is None else used / MIB,
        )
        add(
            f"holder {pid}'s figure is nvidia-smi's (MiB)",
            used is not None and used // MIB == smi_pid.get(pid),
            bundle_mib=None if used is None else used // MIB,
            smi_mib=smi_pid.get(pid),
        )
        row: dict[str, Any] = next((p for p in bundle.get("processes", []) if p["pid"] == pid), {})
        add(
            f"holder {pid}'s command line was read from /proc (host PID)",
            "torch" in (row.get("cmdline") or "") and bool(got.get("command")),
            command=got.get("command"),
            cmdline=(row.get("cmdline") or "")[:80],
        )
    return checks


def timed_reads(rounds: int) -> tuple[float, float]:
    from bot.collectors.gaps import GapLog
    from bot.collectors.nvml import read_gpus

    ours: list[float] = []
    smi: list[float] = []
    query = [
        "nvidia-smi",
        "--query-gpu=index,uuid,name,memory.total,memory.used,memory.free,utilization.gpu",
        "--format=csv,noheader,nounits",
    ]
    apps = [
        "nvidia-smi",
        "--query-compute-apps=gpu_uuid,pid,used_memory",
        "--format=csv,noheader,nounits",
    ]
    for _ in range(rounds):
        t = time.perf_counter()
        read_gpus(None, gaps=GapLog())
        ours.append(time.perf_counter() - t)
        t = time.perf_counter()
        subprocess.run(query, capture_output=True, check=True)
        subprocess.run(apps, capture_output=True, check=True)
        smi.append(time.perf_counter() - t)
    return statistics.median(ours) * 1000, statistics.median(smi) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hold-mib", default="8192,2048")
    parser.add_argument("--context-mib", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--out", type=Path, help="a folder for the raw figures and the bundle")
    args = parser.parse_args()
    if not os.path.exists("/dev/nvidiactl") or shutil.which("nvidia-smi") is None:
        reason = "no NVIDIA GPU here (/dev/nvidiactl or nvidia-smi missing)"
        print(reason)
        print(json.dumps({"bench": "nvml", "metric": "read_ms_median", "skipped": reason}))
        return 0
    sizes = [int(s) for s in args.hold_mib.split(",") if s]
    holders: dict[int, int] = {}
    procs: list[subprocess.Popen[str]] = []
    try:
        for mib in sizes:
            p = subprocess.Popen(
                [sys.executable, "-c", HOLDER, str(mib), "300"], stdout=subprocess.PIPE, text=True
            )
            procs.append(p)
            holders[p.pid] = mib
        for p in procs:
            line = p.stdout.readline() if p.stdout else ""
            if line.strip() != "ready":
                raise SystemExit(f"holder {p.pid} did not start: {line!r}")
        raw_before = _raw_nvml()
        smi_gpus = _smi(
            "--query-gpu=index,uuid,name,memory.total,memory.used,memory.free,"
            "memory.reserved,driver_version"
        )
        smi_apps = _smi("--query-compute-apps=pid,used_memory,gpu_uuid")
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o755)
            home = job_home(Path(tmp))
            bundle, job_s = collect(home, as_job=False)
            job_bundle, job_user_s = collect(home, as_job=True)
        raw = _raw_nvml()
        checks = [
            {**c, "check": f"as root: {c['check']}"}
            for c in check(bundle, raw, smi_gpus, smi_apps, holders, args.context_mib)
        ] + [
            {**c, "check": f"as the Job's uid 65534: {c['check']}"}
            for c in check(job_bundle, raw, smi_gpus, smi_apps, holders, args.context_mib)
        ]
        ids = identities(raw)
        ours_ms, smi_ms = timed_reads(args.rounds)
    finally:
        for p in procs:
            p.kill()
            p.wait()
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "bundle.json").write_text(json.dumps(bundle, indent=1))
        (args.out / "bundle_job_user.json").write_text(json.dumps(job_bundle, indent=1))
        (args.out / "raw.json").write_text(
            json.dumps(
                {
                    "before": raw_before,
                    "after": raw,
                    "smi_gpus": smi_gpus,
                    "smi_apps": smi_apps,
                    "holders": holders,
                    "job_s": job_s,
                    "job_user_s": job_user_s,
                    "gaps": bundle.get("gaps"),
                    "job_user_gaps": job_bundle.get("gaps"),
                },
                indent=1,
            )
        )
    for c in checks:
        print(("ok   " if c["ok"] else "FAIL ") + json.dumps(c))
    print("identities:", json.dumps(ids))
    print(f"the Job's whole run as root: {job_s * 1000:.1f} ms; gaps: {bundle.get('gaps')}")
    print(
        f"as uid 65534: {job_user_s * 1000:.1f} ms; gaps: {job_bundle.get('gaps')}",
    )
    failed = [c["check"] for c in checks if not c["ok"]]
    gpu0 = bundle["gpus"][0] if bundle.get("gpus") else {}
    print(
        json.dumps(
            {
                "bench": "nvml",
                "metric": "read_ms_median",
                "value": round(ours_ms, 2),
                "baseline": round(smi_ms, 2),
                "ratio": round(ours_ms / smi_ms, 3),
                "target": 1.0,
                "checks_passed": len(checks) - len(failed),
                "checks_failed": failed,
                "identities": ids,
                "driver": raw["driver"],
                "gpu": gpu0.get("name"),
            }
        )
    )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
