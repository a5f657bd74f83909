"""The collector's pod attribution on a real kernel: pod cgroups planted as the kubelet lays them
out, a GPU process in one pod, a real memory-cgroup OOM kill in another.

Root only, on a machine whose kernel has the memory cgroup controller (v2 at /sys/fs/cgroup,
or v1 at /sys/fs/cgroup/memory); it changes that machine's cgroup tree (and removes what it
made), so it is meant for a throwaway machine (the device machine), never the suite. Without
root or the controller it prints why it skipped and exits 0.

1. Plants the kubelet's systemd layout (``kubepods.slice/kubepods-burstable.slice/
   kubepods-burstable-pod<uid>.slice/cri-containerd-<64 hex>.scope``) for two pods:
   - ``holder``: limit 4 GiB; a process started inside it allocates ``--gpu-mib`` of GPU
     memory through PyTorch (0: a CPU-only process, for a machine without a GPU);
   - ``victim``: limit 256 MiB; a process started inside it writes 1 GiB, and the kernel's
     memory-cgroup OOM killer ends it.
2. Runs the Job's command as root (``collect --kernel-log-window 3600``) and checks the bundle
   against what was planted: each container found with its pod UID, container ID and limit;
   the victim's container counts one OOM kill (``memory.events``, or v1's
   ``memory.oom_control``); the kernel log's OOM-kill record names the victim's PID and pod;
   the holder is a GPU process of its pod and container (when it holds GPU memory).

Last line: {"bench": "nvml_pods", "metric": "checks_passed", "value", "baseline" (the checks
made), "ratio", "target": 1.0, "checks_failed", "cgroup_version", "kernel"}. Exit 1 when a check
failed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.nvml import HOLDER, job_command, job_home  # noqa: E402  (after the path: run as a file)

MIB = 1024 * 1024
CPU_HOLDER = "import time; x = b'x' * (64 << 20); print('ready', flush=True); time.sleep(300)\n"
VICTIM = "import time; x = b'x' * (1 << 30); time.sleep(30)\n"


class Pod:
    """One pod's and one container's cgroups, in the kubelet's systemd layout."""

    def __init__(self, mount: Path, version: int, limit: int) -> None:
        self.uid = str(uuid.uuid4())
        self.container_id = uuid.uuid4().hex + uuid.uuid4().hex
        self.version = version
        slices = [
            "kubepods.slice",
            "kubepods-burstable.slice",
            f"kubepods-burstable-pod{self.uid.replace('-', '_')}.slice",
        ]
        self.levels = [mount.joinpath(*slices[: i + 1]) for i in range(len(slices))]
        self.container = self.levels[-1] / f"cri-containerd-{self.container_id}.scope"
        for level in [*self.levels, self.container]:
            level.mkdir(exist_ok=True)
            if version == 2 and level != self.container:
                (level / "cgroup.subtree_control").write_text("+memory")
        limit_file = "memory.max" if version == 2 else "memory.limit_in_bytes"
        (self.container / limit_file).write_text(str(limit))
        self.limit = limit

    def start(self, code: str, *args: str) -> subprocess.Popen[str]:
        """``python3 -c code args`` inside the container's cgroup from its first instruction."""
        procs = self.container / "cgroup.procs"
        return subprocess.Popen(
            [
                "sh",
                "-c",
                f'echo $$ > "{procs}" && exec "$0" -c "$@"',
                sys.executable,
                code,
                *args,
            ],
            stdout=subprocess.PIPE,
            text=True,
        )

    def remove(self) -> None:
        for level in [self.container, *reversed(self.levels)]:
            for _ in range(50):
                try:
                    level.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # busy (another pod's level, or a process still leaving)
                    time.sleep(0.1)


def memory_mount() -> tuple[Path, int] | str:
    """The memory controller's mount and cgroup version, or why there is none."""
    root = Path("/sys/fs/cgroup")
    controllers = root / "cgroup.controllers"
    if controllers.exists():
        if "memory" not in controllers.read_text().split():
            return "cgroup v2 without the memory controller"
        return root, 2
    if (root / "memory" / "memory.limit_in_bytes").exists():
        return root / "memory", 1
    return "no memory cgroup controller mounted"


def check(
    bundle: dict[str, Any], holder: Pod, victim: Pod, pids: dict[str, int], gpu: bool
) -> list[dict[str, Any]]:
    checks: list[dict[str, Any]] = []

    def add(name: str, ok: bool, **seen: Any) -> None:
        checks.append({"check": name, "ok": bool(ok), **seen})

    containers = {c.get("container_id"): c for c in bundle.get("containers", [])}
    for role, pod in (("holder", holder), ("victim", victim)):
        got = containers.get(pod.container_id)
        add(f"the {role}'s container is found", got is not None, found=sorted(map(str, containers)))
        if got is None:
            continue
        add(
            f"the {role}'s container names its pod",
            got.get("pod_uid") == pod.uid,
            bundle=got.get("pod_uid"),
            planted=pod.uid,
        )
        add(
            f"the {role}'s container has its limit",
            got.get("limit_bytes") == pod.limit,
            bundle=got.get("limit_bytes"),
            planted=pod.limit,
        )
    got = containers.get(victim.container_id) or {}
    add(
        "the victim's container counts one OOM kill",
        got.get("oom_kill_events") == 1,
        bundle=got.get("oom_kill_events"),
    )
    kills = ((bundle.get("kernel_log") or {}).get("oom_kills")) or []
    mine = [k for k in kills if k.get("pid") == pids["victim"]]
    add(
        "the kernel log's OOM kill names the victim",
        len(mine) == 1,
        pids=[k.get("pid") for k in kills],
        victim=pids["victim"],
        gaps=[g["source"] for g in bundle.get("gaps", []) if "kmsg" in g["source"]],
    )
    if mine:
        add(
            "that OOM kill is the victim's cgroup's, in its pod",
            mine[0].get("scope") == "cgroup"
            and mine[0].get("pod_uid") == victim.uid
            and mine[0].get("container_id") == victim.container_id,
            scope=mine[0].get("scope"),
            pod_uid=mine[0].get("pod_uid"),
            container_id=mine[0].get("container_id"),
            task_memcg=mine[0].get("task_memcg"),
        )
    rows = [("process", "processes", True), ("GPU process", "gpu_processes", gpu)]
    for what, key, wanted in rows:
        if not wanted:
            continue
        row = next((p for p in bundle.get(key, []) if p["pid"] == pids["holder"]), None)
        seen = None if row is None else {k: row.get(k) for k in ("pod_uid", "container_id")}
        add(
            f"the holder's {what} names its pod and container",
            seen == {"pod_uid": holder.uid, "container_id": holder.container_id},
            row=seen,
        )
    return checks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gpu-mib", type=int, default=2048, help="0: a CPU-only holder")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    mount = memory_mount()
    why = ("not root" if os.geteuid() != 0 else None) or (mount if isinstance(mount, str) else None)
    if why is not None or isinstance(mount, str):
        print(f"skipped: {why}")
        print(json.dumps({"bench": "nvml_pods", "metric": "checks_passed", "skipped": why}))
        return 0
    path, version = mount
    gpu = args.gpu_mib > 0
    holder = Pod(path, version, 4 << 30)
    victim = Pod(path, version, 256 << 20)
    procs: list[subprocess.Popen[str]] = []
    try:
        hold = holder.start(HOLDER if gpu else CPU_HOLDER, str(args.gpu_mib), "300")
        procs.append(hold)
        line = hold.stdout.readline() if hold.stdout else ""
        if line.strip() != "ready":
            raise SystemExit(f"the holder did not start: {line!r}")
        kill = victim.start(VICTIM)
        procs.append(kill)
        status = kill.wait(timeout=120)
        print(f"victim {kill.pid} ended with {status} (the OOM killer's SIGKILL is -9)")
        pids = {"holder": hold.pid, "victim": kill.pid}
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o755)
            home = job_home(Path(tmp))
            run = subprocess.run(
                job_command(sys.executable, home, kernel_log_window_s=3600),
                capture_output=True,
                text=True,
                timeout=120,
            )
        if run.returncode != 0:
            raise SystemExit(f"the Job's command failed: {run.stderr}")
        bundle = json.loads(run.stdout)
        checks = check(bundle, holder, victim, pids, gpu)
    finally:
        for p in procs:
            p.kill()
            p.wait()
        time.sleep(0.2)
        victim.remove()
        holder.remove()
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "pods_bundle.json").write_text(json.dumps(bundle, indent=1))
    for c in checks:
        print(("ok   " if c["ok"] else "FAIL ") + json.dumps(c))
    failed = [c["check"] for c in checks if not c["ok"]]
    print(
        json.dumps(
            {
                "bench": "nvml_pods",
                "metric": "checks_passed",
                "value": len(checks) - len(failed),
                "baseline": len(checks),
                "ratio": round((len(checks) - len(failed)) / len(checks), 3),
                "target": 1.0,
                "checks_failed": failed,
                "cgroup_version": version,
                "kernel": platform.release(),
                "gpu": gpu,
            }
        )
    )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
