"""Run a command as a container whose device cgroup refuses ``/dev/kmsg`` (char 1:11).

A container runtime admits only its default devices (null, zero, random, tty...) to a
non-privileged container; opening any other device node, ``/dev/kmsg`` included, fails with
EPERM whatever the file mode, user or capabilities. The stand-in's host trees are plain files,
so this wrapper stages that refusal at the same boundary: the open system call's Python entry
(``posix.open``, which ``os.open`` is; the collector calls ``posix`` directly, see
``bot.collectors.hostos``) of a path ending in ``/dev/kmsg`` raises ``PermissionError(EPERM)``,
then the module named on the command line
runs (``python -m gpunode_sandbox.kubesim.devcgroup bot collect ...``). It is how the job
controller runs the collector of a pod that is not privileged on a node whose runtime does
not admit the device (``scenarios.Node.runtime_allows_kmsg``).
"""

from __future__ import annotations

import errno
import os
import posix
import runpy
import sys
from typing import Any

_real_open = posix.open


def _device_cgroup_open(path: Any, flags: int, mode: int = 0o777, **kw: Any) -> int:
    if os.fsdecode(path).endswith("/dev/kmsg"):
        raise PermissionError(errno.EPERM, os.strerror(errno.EPERM), os.fspath(path))
    return _real_open(path, flags, mode, **kw)


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit("usage: python -m gpunode_sandbox.kubesim.devcgroup MODULE [ARGS...]")
    module = sys.argv[1]
    sys.argv = [module, *sys.argv[2:]]
    posix.open = os.open = _device_cgroup_open
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
