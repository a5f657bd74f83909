"""What the collector pod can read on the node, decided by its spec as on a real node.

- NVML: when the pod names an existing RuntimeClass and sets ``NVIDIA_VISIBLE_DEVICES``, or
  sets it on a node whose default runtime is NVIDIA's (``Node.nvidia_default_runtime``: the
  toolkit configured as containerd's default); the runtime injects the library and devices
  then. Without it the fake NVML fails as nvidia-ml-py does: LIBRARY_NOT_FOUND. On MIG GPUs
  the process listing also needs the monitor capability (``mig_monitor``).
- ``/proc/<pid>/smaps_rollup`` of other processes: only with ptrace rights
  (``capabilities.add: [SYS_PTRACE]`` or ``privileged``). Without them the files are mode 0
  and the collector runs without CAP_DAC_* (``setpriv``), so reads fail with EACCES even
  when the sandbox runs as root.
- ``/dev/kmsg``: a device the runtime's device cgroup refuses (EPERM) to a container that is
  not privileged, unless the node's runtime admits it (``Node.runtime_allows_kmsg``); the
  collector then runs under ``devcgroup``, which stages that refusal.
- ``/proc/sys/kernel/hostname``: the reader's UTS namespace, the node's name only with
  ``hostNetwork`` (the kubelet then shares the host's UTS namespace), else the pod's name.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpunode_sandbox.kubesim.hosttree import write_host_tree

if TYPE_CHECKING:
    from gpunode_sandbox.kubesim.sim import KubeSim

Obj = dict[str, Any]
#: run the collector without the capabilities that bypass file permissions, as a container
#: with ``capabilities.drop: [ALL]`` runs
NO_DAC = ("setpriv", "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-all", "--")


def nvml_injected(sim: KubeSim, pod: Obj) -> bool:
    spec = pod.get("spec") or {}
    asks = any(
        e.get("name") == "NVIDIA_VISIBLE_DEVICES" and e.get("value")
        for c in spec.get("containers") or []
        for e in c.get("env") or []
    )
    handler = spec.get("runtimeClassName")
    if handler:  # the class's handler is the NVIDIA runtime when the class exists
        return asks and sim.api.store.get("runtimeclasses", None, handler) is not None
    node = next((n for n in sim.scenario.nodes if n.name == spec.get("nodeName")), None)
    return asks and node is not None and node.nvidia_default_runtime


def mig_monitor(pod: Obj) -> bool:
    """The MIG monitor capability: NVIDIA_MIG_MONITOR_DEVICES=all and CAP_SYS_ADMIN (or
    privileged), which NVML needs to list processes on MIG devices."""
    for c in (pod.get("spec") or {}).get("containers") or []:
        env = {e.get("name"): e.get("value") for e in c.get("env") or []}
        sc = c.get("securityContext") or {}
        added = {
            str(x).upper().removeprefix("CAP_")
            for x in (sc.get("capabilities") or {}).get("add") or []
        }
        if env.get("NVIDIA_MIG_MONITOR_DEVICES") == "all" and (
            sc.get("privileged") or "SYS_ADMIN" in added
        ):
            return True
    return False


def ptrace(pod: Obj) -> bool:
    """Ptrace read rights over other processes: CAP_SYS_PTRACE added, or privileged."""
    for c in (pod.get("spec") or {}).get("containers") or []:
        sc = c.get("securityContext") or {}
        added = {
            str(x).upper().removeprefix("CAP_")
            for x in (sc.get("capabilities") or {}).get("add") or []
        }
        if sc.get("privileged") or "SYS_PTRACE" in added:
            return True
    return False


def prepare(sim: KubeSim, pod: Obj, node: str, root: Path) -> Path | None:
    """Write the node's host tree under ``root`` as this pod sees it; the fake NVML spec's
    path (None for a node without GPUs)."""
    spec = write_host_tree(sim, node, root)
    if spec is not None and not nvml_injected(sim, pod):
        doc = json.loads(spec.read_text(encoding="utf-8"))
        doc["fail"] = "library_not_found"
        spec.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    elif spec is not None and mig_monitor(pod):
        doc = json.loads(spec.read_text(encoding="utf-8"))
        for device in doc.get("devices") or []:
            device.pop("processes_error", None)
        spec.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    uts = node if (pod.get("spec") or {}).get("hostNetwork") else pod["metadata"]["name"]
    hostname = root / "proc" / "sys" / "kernel" / "hostname"
    hostname.parent.mkdir(parents=True, exist_ok=True)
    hostname.write_text(uts[:63] + "\n", encoding="utf-8")
    if not ptrace(pod):
        for path in (root / "proc").glob("[0-9]*/smaps_rollup"):
            path.chmod(0)
    return spec


def kmsg_refused(sim: KubeSim, pod: Obj, node: str) -> bool:
    """The device cgroup refuses /dev/kmsg to this pod's collector."""
    privileged = any(
        (c.get("securityContext") or {}).get("privileged")
        for c in (pod.get("spec") or {}).get("containers") or []
    )
    allowed = any(n.name == node and n.runtime_allows_kmsg for n in sim.scenario.nodes)
    return not privileged and not allowed


def collector_prefix(pod: Obj) -> list[str]:
    """The command prefix that takes the pod's lack of DAC-bypassing capabilities along."""
    if not ptrace(pod) and os.geteuid() == 0 and shutil.which("setpriv"):
        return list(NO_DAC)
    return []
