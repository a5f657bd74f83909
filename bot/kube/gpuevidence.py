"""GPU evidence on every install: which way the collector tries to read GPU memory on a node,
and, when it gets none, a gap that names what was tried and why it failed in the words of
the node's install (GPU Operator, toolkit as default runtime, GKE, Bottlerocket, MIG, MPS,
AMD). Never "install the GPU Operator" blindly: the node's own facts decide the sentence.

The order (README "GPU evidence"):
1. NVML through the NVIDIA RuntimeClass (``kube.nvidia_runtime_class``) when it exists;
2. NVML through the node's default runtime: no RuntimeClass, ``NVIDIA_VISIBLE_DEVICES=all``
   kept, for nodes whose default runtime is NVIDIA's (the toolkit configured as containerd's
   default, GKE-style installs);
3. dcgm-exporter's per-pod framebuffer figures (``DCGM_FI_DEV_FB_USED`` with the
   ``pod``/``namespace``/``container`` labels of its Kubernetes mapping): from the exporter's
   endpoint on the node, found through its Service (``bot.kube.dcgm``, by the gateway), then
   from Prometheus when ``prometheus.url`` is set (``bot.services.diagnosing``). Each attempt
   adds its sentence to the gap (``bot.core.diagnosis.dcgm.join``).

Pure: node facts and settings in, a plan and gaps out (the gateway performs the reads).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.config import KubeSettings
from bot.core.diagnosis.dcgm import GAP_SOURCE
from bot.core.model.cluster import NodeInfo
from bot.core.model.evidence import EvidenceBundle, Gap, GapParam

SOURCE = GAP_SOURCE
GKE_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"


@dataclass(frozen=True)
class GpuPlan:
    """How the collector Job asks for NVML on this node."""

    runtime_class: str | None = None
    visible_devices: bool = False
    tried: list[str] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)
    #: the RuntimeClass the settings name (``kube.nvidia_runtime_class``), even when missing
    asked_class: str = ""


def plan(info: NodeInfo, settings: KubeSettings, *, runtime_class: str) -> GpuPlan:
    """``runtime_class``: ``present``/``missing``/``unknown`` (``preflight.read_runtime_class``;
    ``unknown`` when not read)."""
    if not info.has_gpus:
        return GpuPlan()  # no GPUs: nothing to read, and CPU nodes often lack the NVIDIA handler
    if not info.has_nvidia_gpus:
        vendors = sorted({r.split("/")[0] for r in info.gpu_resources} | set(info.gpu_dra_drivers))
        gap = Gap(
            source=SOURCE,
            reason=_not_nvidia(vendors),
            code="gpu_not_nvidia",
            params={"vendors": ", ".join(vendors)},
        )
        return GpuPlan(gaps=[gap])
    if not settings.nvidia_visible_devices_all:
        return GpuPlan(
            gaps=[
                Gap(
                    source="nvml:settings",
                    reason="GPU evidence is off in the bot's settings: set "
                    "kube.nvidia_visible_devices_all=true "
                    "(GPUNODE_KUBE__NVIDIA_VISIBLE_DEVICES_ALL)",
                    code="gpu_evidence_off",
                )
            ]
        )
    name = settings.nvidia_runtime_class
    if name and runtime_class != "missing":
        return GpuPlan(name, True, [f'NVML through RuntimeClass "{name}"'], asked_class=name)
    tried = [f'RuntimeClass "{name}" (it does not exist)'] if name else []
    return GpuPlan(
        None, True, [*tried, "NVML through the node's default runtime"], asked_class=name or ""
    )


def _not_nvidia(vendors: list[str]) -> str:
    return (
        f"GPUs of {', '.join(vendors)}: gpunode reads GPU memory through NVIDIA's NVML only, so "
        "on this node no GPU memory per process or per device is measured (ROCm SMI and AMD's "
        "device-metrics-exporter are not read); host memory evidence is complete"
    )


def _nvml_failures(bundle: EvidenceBundle) -> list[Gap]:
    return [g for g in bundle.gaps if g.source == "nvml" or g.source.startswith("nvml:gpu")]


def evidence_gap(info: NodeInfo, gpu_plan: GpuPlan, bundle: EvidenceBundle) -> Gap | None:
    """The gap that says why this node has no (or partial) GPU evidence, or None."""
    if not gpu_plan.visible_devices:
        return None  # no NVML was asked for; the plan's own gap said why
    failures = _nvml_failures(bundle)
    if not failures:
        return None
    what = "; ".join(f"{g.source}: {g.reason}" for g in failures[:3])
    hinted = _install_hints(info, gpu_plan, bundle)
    hints = [HINTS[h].format(runtime_class=gpu_plan.runtime_class) for h in hinted]
    reason = (
        f"GPU memory per process was not fully read. Tried: {', then '.join(gpu_plan.tried)} "
        f"({what}).{''.join(' ' + h for h in hints)}"
    )
    if gpu_plan.runtime_class:
        tried = "runtime_class"
    else:
        tried = "missing_runtime_class" if gpu_plan.asked_class else "default_runtime"
    params: dict[str, GapParam] = {
        "tried": tried,
        "runtime_class": gpu_plan.asked_class,
        "hints": ",".join(hinted),
        "failures": len(failures[:3]),
    }
    for i, g in enumerate(failures[:3], 1):  # each NVML failure's own code and params
        params |= {f"f{i}_source": g.source, f"f{i}_code": g.code, f"f{i}_reason": g.reason}
        params |= {f"f{i}_{k}": v for k, v in g.params.items()}
    return Gap(source=SOURCE, reason=reason, code="gpu_evidence_unread", params=params)


#: why NVML may not reach the collector on this kind of install (``gpu_evidence_unread``'s
#: ``hints``), in English; worded per locale in ``templates/sentences/gaps.j2``
HINTS = {
    "mig": (
        "MIG: NVML lists the GPUs, but the processes on MIG devices need the MIG monitor "
        "capability (NVIDIA_MIG_MONITOR_DEVICES=all with CAP_SYS_ADMIN), which the collector "
        "does not take; device totals are shown, per-process GPU memory is not."
    ),
    "mps": (
        "MPS: the GPU memory of client pods shows under the MPS server process "
        "(nvidia-cuda-mps-server), not under the pods that use it."
    ),
    "gke": (
        "GKE: the driver is installed by GKE and its device plugin gives NVML only to pods "
        "that request nvidia.com/gpu; the collector requests none (it must not take a GPU "
        "from a workload), so GKE's managed DCGM metrics are the source for GPU memory."
    ),
    "bottlerocket": (
        "Bottlerocket: its NVIDIA runtime injects GPUs only for nvidia.com/gpu requests and "
        "ignores NVIDIA_VISIBLE_DEVICES in an unprivileged pod's environment, so NVML is not "
        "available to the collector."
    ),
    "runtime_class_without_nvml": (
        'The RuntimeClass "{runtime_class}" exists (GPU Operator or toolkit install) but NVML '
        "was not injected: check that its handler is configured on this node and that the "
        "toolkit accepts NVIDIA_VISIBLE_DEVICES from unprivileged pods "
        "(accept-nvidia-visible-devices-envvar-when-unprivileged)."
    ),
    "default_runtime_without_nvml": (
        "Without a RuntimeClass, NVML comes only when the NVIDIA toolkit is the node's default "
        "runtime and honours NVIDIA_VISIBLE_DEVICES for unprivileged pods; here it did not "
        "(the default runtime is not NVIDIA's, or the toolkit refuses the variable). If the "
        "cluster has an NVIDIA RuntimeClass under another name, set kube.nvidia_runtime_class "
        "to it."
    ),
}


def _install_hints(info: NodeInfo, gpu_plan: GpuPlan, bundle: EvidenceBundle) -> list[str]:
    """The ``HINTS`` that fit this node's install, in order."""
    hints: list[str] = []
    labels = info.labels
    os_image = (info.os_image or "").lower()
    processes_refused = any(
        g.source.startswith("nvml:gpu") and g.source.endswith(":processes") for g in bundle.gaps
    )
    mig = info.mig_resources or labels.get("nvidia.com/mig.strategy") in ("mixed", "single")
    if mig and (processes_refused or not bundle.gpus):
        hints.append("mig")
    if (
        labels.get("nvidia.com/mps.capable") == "true"
        or labels.get("nvidia.com/gpu.sharing-strategy") == "mps"
    ):
        hints.append("mps")
    if GKE_ACCELERATOR_LABEL in labels:
        hints.append("gke")
    elif "bottlerocket" in os_image:
        hints.append("bottlerocket")
    elif gpu_plan.runtime_class and not bundle.gpus:
        hints.append("runtime_class_without_nvml")
    elif not gpu_plan.runtime_class and not bundle.gpus:
        hints.append("default_runtime_without_nvml")
    return hints
