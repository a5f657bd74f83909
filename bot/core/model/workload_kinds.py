"""What kind of work a pod does, so messages use its words: a training pod, an inference
server, a notebook. Pure: no I/O. The one classifier every message uses.

======================  ===============================================================
kind                    recognised by (first match wins)
======================  ===============================================================
``training``            a gang (``bot.core.model.gangs.gang_of``: PyTorchJob, MPIJob, TFJob,
                        Volcano, RayJob/RayCluster, JobSet, LeaderWorkerSet, ...), a
                        ``batch`` Job with accelerators, or an accelerated pod whose
                        labels or controller name say it trains (``train``, ``finetune``)
``notebook``            a Kubeflow ``Notebook`` owner, the ``notebook-name`` label, or
                        ``jupyter``/``notebook`` in its labels, name or image
``inference``           a KServe ``InferenceService`` (or its label), a serving image
                        (vLLM, Triton, TGI, TorchServe, ...), or ``serving``, ``inference``,
                        ``predictor`` in its labels or controller name
``gpu_workload``        any other pod with accelerators
``workload``            everything else
======================  ===============================================================
"""

from __future__ import annotations

import re
from typing import Literal

from bot.core.model.cluster import PodInfo
from bot.core.model.gangs import builtin_kind, gang_of

WorkloadKind = Literal["training", "notebook", "inference", "gpu_workload", "workload"]

_TRAIN = re.compile(r"(^|[^a-z])(train|training|trainer|finetune|fine-tune|pretrain)", re.I)
_NOTEBOOK = re.compile(r"jupyter|notebook", re.I)
_SERVING_IMAGE = re.compile(
    r"vllm|tritonserver|text-generation-inference|torchserve|tensorrt-llm|sglang|"
    r"kserve|seldon|ray-serve|llama\.cpp|ollama",
    re.I,
)
_SERVING = re.compile(r"serving|inference|predictor|(^|[^a-z])serve($|[^a-z])", re.I)
KSERVE_LABEL = "serving.kserve.io/inferenceservice"
NOTEBOOK_LABEL = "notebook-name"


def _names(pod: PodInfo) -> list[str]:
    top = pod.top_owner
    return [
        *(f"{k}={v}" for k, v in pod.labels.items()),
        top.name if top is not None else pod.name,
    ]


def workload_kind(pod: PodInfo) -> WorkloadKind:
    """The kind of work ``pod`` does (see the module table)."""
    names = _names(pod)
    images = [c.image for c in pod.containers]
    owners = {o.kind for o in pod.owners}
    if gang_of(pod) is not None:
        return "training"
    if pod.accelerated and any(builtin_kind(o) == "Job" for o in pod.owners):
        return "training"
    if pod.accelerated and any(_TRAIN.search(n) for n in names):
        return "training"
    if "Notebook" in owners or NOTEBOOK_LABEL in pod.labels:
        return "notebook"
    if any(_NOTEBOOK.search(x) for x in [*names, *images]):
        return "notebook"
    if "InferenceService" in owners or KSERVE_LABEL in pod.labels:
        return "inference"
    if any(_SERVING_IMAGE.search(i) for i in images) or any(_SERVING.search(n) for n in names):
        return "inference"
    return "gpu_workload" if pod.accelerated else "workload"


def is_sidecar(pod: PodInfo, container: str) -> bool:
    """True when ``container`` is a helper beside the pod's main work: a native sidecar (an
    init container with ``restartPolicy: Always``), or any regular container but the first
    one of a multi-container pod (the main container comes first by convention)."""
    regular = [c for c in pod.containers if not c.init]
    named = next((c for c in pod.containers if c.name == container), None)
    if named is None:
        return False
    if named.sidecar:
        return True
    return len(regular) > 1 and regular[0].name != container
