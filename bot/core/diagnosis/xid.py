"""NVIDIA XID codes: what each common one means, whose fault it is, and what to do. Pure data.

The driver logs ``NVRM: Xid (PCI:0000:3b:00): 79, pid=..., GPU has fallen off the bus.`` to
the kernel log. The meanings and the actions follow NVIDIA's Xid catalog ("Analyzing Xid
Errors with the Xid Catalog", docs.nvidia.com/deploy/xid-errors) and its resolution buckets
(RESTART_APP, RESET_GPU, RESTART_BM = reboot the node, CONTACT_SUPPORT); the wording is ours.

``origin``:
- ``hardware``: the GPU, its memory, its bus or its links failed; memory settings cannot fix it;
- ``application``: the program did something the GPU refused (bad address, killed mid-work);
- ``driver``: driver or firmware (GSP) trouble.

``gpu_lost``: the GPU is unusable until it is reset or the node rebooted (fallen off the bus,
uncorrectable/uncontained ECC, a halted micro-controller, a GSP timeout). Only these can be the
incident's verdict (``gpu_xid``); the rest are findings that give context.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Origin = Literal["hardware", "application", "driver"]


@dataclass(frozen=True)
class XidInfo:
    code: int
    meaning: str
    origin: Origin
    action: str
    gpu_lost: bool = False


_ENTRIES = (
    XidInfo(
        13,
        "graphics engine exception",
        "application",
        "restart the application; if it repeats with the same code, check the program for "
        "out-of-range accesses before suspecting the GPU",
    ),
    XidInfo(
        31,
        "GPU memory page fault",
        "application",
        "restart the application; an illegal memory access by the program is the usual cause",
    ),
    XidInfo(
        43,
        "GPU stopped processing (the application hit a software fault)",
        "application",
        "restart the application; the GPU itself stays healthy",
    ),
    XidInfo(
        45,
        "preemptive cleanup after earlier errors or a killed process",
        "application",
        "none by itself: it follows a process being killed (an OOM kill, a signal) or an "
        "earlier XID; look at what came before it",
    ),
    XidInfo(
        48,
        "double-bit (uncorrectable) ECC error",
        "hardware",
        "drain the GPU and reset it; if it repeats, have the GPU replaced",
        gpu_lost=True,
    ),
    XidInfo(
        61,
        "internal micro-controller breakpoint",
        "driver",
        "reset the GPU (or reboot the node); contact NVIDIA support if it repeats",
        gpu_lost=True,
    ),
    XidInfo(
        62,
        "internal micro-controller halt",
        "driver",
        "reset the GPU (or reboot the node); contact NVIDIA support if it repeats",
        gpu_lost=True,
    ),
    XidInfo(
        63,
        "ECC page retirement or row remapping recorded",
        "hardware",
        "reset the GPU when convenient so the remapping takes effect",
    ),
    XidInfo(
        64,
        "ECC page retirement or row remapping failed",
        "hardware",
        "drain and reset the GPU; if it repeats, have the GPU replaced",
    ),
    XidInfo(
        74,
        "NVLink error",
        "hardware",
        "reset the GPU and check the NVLink connections and NVSwitches",
    ),
    XidInfo(
        79,
        "fallen off the bus",
        "hardware",
        "drain the node and reboot it; check PCIe seating, power and cooling; repeated "
        "events mean the GPU or the board needs replacing",
        gpu_lost=True,
    ),
    XidInfo(
        92,
        "high single-bit ECC error rate",
        "hardware",
        "watch the GPU's ECC counters; plan a reset, and a replacement if the rate stays high",
    ),
    XidInfo(
        94,
        "contained ECC error (only the affected application was stopped)",
        "hardware",
        "restart the application; reset the GPU when convenient to remap the bad row",
    ),
    XidInfo(
        95,
        "uncontained ECC error",
        "hardware",
        "drain the GPU and reset it: every application on it is affected",
        gpu_lost=True,
    ),
    XidInfo(
        119,
        "GSP firmware RPC timeout",
        "driver",
        "reset the GPU or reboot the node; update the driver if it repeats",
        gpu_lost=True,
    ),
    XidInfo(
        154,
        "GPU recovery action changed (the driver asks for a reset or a reboot)",
        "driver",
        "do what the driver's message asks (GPU reset or node reboot)",
    ),
)

CATALOG: dict[int, XidInfo] = {e.code: e for e in _ENTRIES}


def describe(code: int) -> XidInfo:
    """The catalogue entry, or a neutral one for codes we do not describe."""
    return CATALOG.get(
        code,
        XidInfo(
            code,
            f"XID {code} (not in gpunode's catalogue)",
            "driver",
            "look the code up in NVIDIA's Xid catalog",
        ),
    )
