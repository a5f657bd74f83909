"""What the collector pod can read on the node, decided by its spec as on a real node.

- NVML: only when the pod names an existing RuntimeClass and sets ``NVIDIA_VISIBLE_DEVICES``
  (the NVIDIA runtime injects the library and devices then; a pod requesting no GPU gets
  none otherwise). Without it the fake NVML fails as nvidia-ml-py does: LIBRARY_NOT_FOUND.
- ``/proc/<pid>/smaps_rollup`` of other processes: only with ptrace rights
  (``capabilities.add: [SYS_PTRACE]`` or ``privileged``). Without them the files are mode 0
  and the collector runs without CAP_DAC_* (``setpriv``), so reads fail with EACCES even
  when the sandbox runs as root.
- ``/proc/sys/kernel/hostname``: the reader's UTS namespace, the node's name only with
  ``hostNetwork`` (the kubelet then shares the host's UTS namespace), else the pod's name.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.sandbox.kubesim.hosttree import write_host_tree

if TYPE_CHECKING:
    from bot.sandbox.kubesim.sim import KubeSim

Obj = dict[str, Any]
#: run the collector without the capabilities that bypass file permissions, as a container
#: with ``capabilities.drop: [ALL]`` runs
NO_DAC = ("setpriv", "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-all", "--")


def nvml_injected(sim: KubeSim, pod: Obj) -> bool:
    spec = pod.get("spec") or {}
    handler = spec.get("runtimeClassName")
    if not handler or sim.api.store.get("runtimeclasses", None, handler) is None:
        return False
    return any(
        e.get("name") == "NVIDIA_VISIBLE_DEVICES" and e.get("value")
        for c in spec.get("containers") or []
        for e in c.get("env") or []
    )


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
    uts = node if (pod.get("spec") or {}).get("hostNetwork") else pod["metadata"]["name"]
    hostname = root / "proc" / "sys" / "kernel" / "hostname"
    hostname.parent.mkdir(parents=True, exist_ok=True)
    hostname.write_text(uts[:63] + "\n", encoding="utf-8")
    if not ptrace(pod):
        for path in (root / "proc").glob("[0-9]*/smaps_rollup"):
            path.chmod(0)
    return spec


def collector_prefix(pod: Obj) -> list[str]:
    """The command prefix that takes the pod's lack of DAC-bypassing capabilities along."""
    if not ptrace(pod) and os.geteuid() == 0 and shutil.which("setpriv"):
        return list(NO_DAC)
    return []
