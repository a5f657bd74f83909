"""The diagnostic Job: render, create, watch to completion, read the evidence, delete.

Sync functions (the gateway runs them in threads) plus pure classifiers. The wait is a
list-then-watch loop on the Job's pods (label ``gpunode.io/run``), never a polling loop:
each watch ends at most ``WATCH_CHUNK_S`` seconds after the last event so a cancelled wait
releases its thread promptly.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import uuid
from collections.abc import Callable, Generator
from contextlib import closing
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from kubernetes.client.exceptions import ApiException
from pydantic import ValidationError

from bot.config import KubeSettings
from bot.core.model.evidence import SCHEMA_MAJOR, SCHEMA_VERSION, EvidenceBundle, foreign_schema
from bot.errors import DiagnosticJobError
from bot.kube.transport import Transport
from bot.render.manifests import render_manifest

Obj = dict[str, Any]

TEMPLATE = "diagnostic-job.yaml.j2"
CONTAINER = "collector"
#: the taints the collector tolerates, by key (the admission policy admits exactly these):
#: a sick node's condition taints (NoExecute ones too), the cordon, the NVIDIA GPU taint
TOLERATION_KEYS = (
    "node.kubernetes.io/memory-pressure",
    "node.kubernetes.io/disk-pressure",
    "node.kubernetes.io/pid-pressure",
    "node.kubernetes.io/unschedulable",
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
    "node.kubernetes.io/network-unavailable",
    "nvidia.com/gpu",
)
#: small and equal memory request/limit (see the template); cpu only requested
CPU_REQUEST = "50m"
MEMORY = "192Mi"
#: seconds one watch request stays open; bounds how long a cancelled wait holds a thread
WATCH_CHUNK_S = 10
#: seconds past activeDeadlineSeconds before the bot gives up on the Job itself
DEADLINE_GRACE_S = 15
#: the collector's JSON can be large (hundreds of processes); cap what the bot reads
MAX_LOG_BYTES = 16 * 1024 * 1024

IMAGE_PULL_REASONS = frozenset(
    {"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"}
)
#: container waiting reasons that end a restartPolicy-Never pod's chances: the runtime could
#: not create or start the container (bad securityContext for the node, a missing runtime
#: handler, a seccomp/AppArmor profile the node lacks)
CONTAINER_ERROR_REASONS = frozenset(
    {"CreateContainerError", "CreateContainerConfigError", "RunContainerError"}
)
#: seconds between checks for the Job controller's FailedCreate events while no pod exists
NO_POD_CHUNK_S = 2
#: the kubelet admits pods at or above this priority under any node condition, and evicts
#: others to make room for them (kubelettypes.IsCriticalPod: system-cluster-critical and up)
CRITICAL_PRIORITY = 2_000_000_000
FALLBACK_HINT = (
    "to run the collector there anyway, set kube.diagnostic_priority_class=system-node-critical "
    "and apply deploy/overlays/critical-collector (a ResourceQuota that allows that class in "
    "the bot's namespace); the kubelet then admits it, evicting lower-priority pods if requests "
    "are full"
)
#: pod.status.reason values the kubelet sets when it refuses or evicts a pod
NOT_ADMITTED_REASONS = frozenset(
    {
        "Evicted",
        "UnexpectedAdmissionError",
        "NodeAffinity",
        "NodeShutdown",
        "Preempting",
        "Terminated",
        "OutOfpods",
    }
)

#: told each phase of the diagnostic Job as it changes (``creating``, ``scheduling``,
#: ``pulling``, ``running``, ``reading``), from the wait's thread; the CLI sets it to show
#: progress on stderr. A context variable: the gateway copies the context into its threads.
PROGRESS: ContextVar[Callable[[str], None] | None] = ContextVar(
    "gpunode_job_progress", default=None
)


def report_progress(phase: str) -> None:
    """Tell the ``PROGRESS`` hook (if any) the Job's ``phase``."""
    hook = PROGRESS.get()
    if hook is not None:
        hook(phase)


def pod_progress(pod: Obj | None) -> str:
    """The phase a diagnostic pod is in, as a person waits for it: no pod yet (``creating``),
    not bound to the node (``scheduling``), bound but its container not started (``pulling``:
    the image pull and container creation), started (``running``)."""
    if pod is None:
        return "creating"
    status = pod.get("status") or {}
    scheduled = next(
        (c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), None
    )
    if not (pod.get("spec") or {}).get("nodeName") and (
        scheduled is None or scheduled.get("status") != "True"
    ):
        return "scheduling"
    if status.get("phase") in ("Running", "Succeeded", "Failed"):
        return "running"
    return "pulling"


def label_value(node: str) -> str:
    """A label value for the node name (<= 63 chars; long names keep a hash suffix)."""
    if len(node) <= 63:
        return node
    digest = hashlib.sha256(node.encode()).hexdigest()[:10]
    return f"{node[:52].rstrip('-.')}-{digest}"


def job_name(node: str, run_id: str) -> str:
    stem = node[:40].rstrip("-.").lower()
    return f"gpunode-diag-{stem}-{run_id}"


def new_run_id() -> str:
    return uuid.uuid4().hex[:6]


def build_job(
    settings: KubeSettings,
    node: str,
    run_id: str,
    *,
    runtime_class: bool = True,
    visible_devices: bool | None = None,
) -> Obj:
    """The Job for ``node``; ``runtime_class=False`` leaves the NVIDIA runtime class out (the
    node has no NVIDIA GPUs, or the class is missing). ``visible_devices``: set
    NVIDIA_VISIBLE_DEVICES (None: only with the runtime class); kept without the class, it
    asks a node whose default runtime is NVIDIA's for NVML (``gpuevidence``)."""
    if visible_devices is None:
        visible_devices = runtime_class
    return render_manifest(
        TEMPLATE,
        name=job_name(node, run_id),
        namespace=settings.namespace,
        node=node,
        node_label=label_value(node),
        run_id=run_id,
        deadline_s=settings.job_timeout_s,
        ttl_s=settings.job_ttl_s,
        service_account=settings.service_account,
        runtime_class=settings.nvidia_runtime_class if runtime_class else None,
        nvidia_visible_devices_all=settings.nvidia_visible_devices_all and visible_devices,
        priority_class=settings.diagnostic_priority_class,
        image=settings.image,
        cpu_request=CPU_REQUEST,
        memory=MEMORY,
        kernel_log_window_s=settings.kernel_log_window_s,
        toleration_keys=TOLERATION_KEYS,
    )


@dataclass(frozen=True)
class PodOutcome:
    """How the wait ended: ``succeeded``, ``failed``, ``image_pull``, ``container_error``,
    ``create_failed`` (the Job controller could not create the pod: ``detail`` holds its
    FailedCreate message), ``deleted``, ``timeout`` or ``cancelled``; ``pod`` is the last pod
    seen (None if none ever was)."""

    state: str
    pod: Obj | None
    detail: str = ""


def _waiting(pod: Obj) -> tuple[str, str] | None:
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        waiting = (cs.get("state") or {}).get("waiting") or {}
        if waiting.get("reason"):
            return str(waiting["reason"]), str(waiting.get("message") or "")
    return None


def _waiting_reason(pod: Obj) -> str | None:
    waiting = _waiting(pod)
    return waiting[0] if waiting else None


def classify_pod(pod: Obj) -> str | None:
    """``succeeded``/``failed``/``image_pull`` when the pod's fate is known, else None."""
    phase = (pod.get("status") or {}).get("phase")
    if phase == "Succeeded":
        return "succeeded"
    if phase == "Failed":
        return "failed"
    reason = _waiting_reason(pod)
    if reason in IMAGE_PULL_REASONS:
        return "image_pull"
    if reason in CONTAINER_ERROR_REASONS:
        return "container_error"
    return None


def _watch_events(
    t: Transport, path: str, *, selector: str, version: str | None, chunk: int
) -> Generator[Obj, None, None]:
    """The watch's events (``{"type", "object"}``, the object as the API's JSON) through the
    bot's own transport (``Transport.watch_lines``), as the informers watch: not through the
    client's ``CoreV1Api`` and ``watch.Watch``, which load ~250 models (20 MiB of the bot's
    memory, issue #25's budget; 0.4 s of CPU on first use) and build a model per event
    that nothing reads. An ERROR event raises ``ApiException`` with its code, as
    ``watch.Watch`` raises it."""
    query = [
        ("watch", "true"),
        ("labelSelector", selector),
        ("resourceVersion", version),
        ("timeoutSeconds", chunk),
    ]
    for line in t.watch_lines(path, query=query, timeout_s=chunk + 5):
        event: Obj = json.loads(line)
        if event.get("type") == "ERROR":
            status = event.get("object") or {}
            raise ApiException(status=status.get("code"), reason=status.get("message"))
        yield event


def wait_for_pod(
    t: Transport,
    namespace: str,
    run_id: str,
    *,
    deadline: float,
    cancel: threading.Event,
    job: str | None = None,
) -> PodOutcome:
    """List-then-watch the run's pod until its fate is known, the deadline (monotonic
    seconds) passes, or ``cancel`` is set. While no pod exists, the ``job``'s FailedCreate
    events are read between short watches, so a refused pod fails the wait at once."""
    from bot.kube.preflight import create_failures

    selector = f"gpunode.io/run={run_id}"
    last: Obj | None = None
    while True:
        if cancel.is_set():
            return PodOutcome("cancelled", last)
        listing = t.get(f"/api/v1/namespaces/{namespace}/pods", label_selector=selector)
        for pod in listing.get("items") or []:
            last = pod
            report_progress(pod_progress(pod))
            if state := classify_pod(pod):
                return PodOutcome(state, pod)
        if last is None and job is not None and (failed := create_failures(t, namespace, job)):
            return PodOutcome("create_failed", None, detail=failed[-1])
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return PodOutcome("timeout", last)
        step = WATCH_CHUNK_S if last is not None or job is None else NO_POD_CHUNK_S
        chunk = max(1, min(step, int(remaining) + 1))
        events = _watch_events(
            t,
            f"/api/v1/namespaces/{namespace}/pods",
            selector=selector,
            version=(listing.get("metadata") or {}).get("resourceVersion"),
            chunk=chunk,
        )
        with closing(events):  # a return inside ends the watch (its connection closed)
            for event in events:
                pod = event.get("object") or {}
                if event.get("type") == "DELETED":
                    return PodOutcome("cancelled" if cancel.is_set() else "deleted", pod)
                last = pod
                report_progress(pod_progress(pod))
                if state := classify_pod(pod):
                    return PodOutcome(state, pod)
                if cancel.is_set():
                    return PodOutcome("cancelled", last)


def create_job(t: Transport, job: Obj) -> Obj:
    ns = job["metadata"]["namespace"]
    return t.request("POST", f"/apis/batch/v1/namespaces/{ns}/jobs", body=job)  # type: ignore[no-any-return]


def read_job(t: Transport, namespace: str, name: str) -> Obj:
    return t.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/{name}")  # type: ignore[no-any-return]


def delete_job(t: Transport, namespace: str, name: str) -> None:
    """Delete the Job and (Background propagation) its pods."""
    t.request(
        "DELETE",
        f"/apis/batch/v1/namespaces/{namespace}/jobs/{name}",
        body={"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"},
    )


def read_log(t: Transport, namespace: str, pod: str) -> str:
    return t.request(  # type: ignore[no-any-return]
        "GET",
        f"/api/v1/namespaces/{namespace}/pods/{pod}/log",
        query=[("container", CONTAINER), ("limitBytes", MAX_LOG_BYTES)],
        text=True,
    )


def _job_condition(job: Obj | None, kind: str) -> Obj | None:
    for cond in ((job or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind and cond.get("status") == "True":
            return cond  # type: ignore[no-any-return]
    return None


def _started(pod: Obj | None) -> bool:
    status = (pod or {}).get("status") or {}
    for cs in status.get("containerStatuses") or []:
        state = cs.get("state") or {}
        if "running" in state or "terminated" in state:
            return True
    return False


def failure(
    outcome: PodOutcome,
    job: Obj | None,
    *,
    node: str,
    timeout_s: int,
    priority_class: str | None = None,
) -> DiagnosticJobError:
    """Turn a non-successful outcome into the DiagnosticJobError the user sees."""
    pod = outcome.pod or {}
    status = pod.get("status") or {}
    reason, message = status.get("reason") or "", status.get("message") or ""
    if outcome.state == "image_pull":
        why = _waiting_reason(pod)
        return DiagnosticJobError(
            f"the collector image could not be pulled on {node} ({why}); "
            "check kube.image and the node's registry access or pull secrets",
            code="image_pull",
            key="image_pull",
            params={"node": node, "why": why},
        )
    if outcome.state == "container_error":
        why, detail = _waiting(pod) or ("", "")
        return DiagnosticJobError(
            f"the container runtime on {node} could not create or start the collector "
            f"({why}: {detail or 'no message'}); check the node's runtime and the Job's "
            "securityContext and runtimeClassName (kube.nvidia_runtime_class)",
            code="container_error",
            key="container_error",
            params={"node": node, "why": why, "detail": detail},
        )
    if outcome.state == "create_failed":
        namespace = (job or {}).get("metadata", {}).get("namespace", "gpunode")
        return DiagnosticJobError(
            f"the diagnostic pod for {node} could not be created ({outcome.detail}); a "
            f"ResourceQuota, LimitRange, admission policy or webhook in namespace {namespace} "
            "refused it - allow the collector Job there, then retry",
            code="create_failed",
            key="create_failed",
            params={"node": node, "detail": outcome.detail, "namespace": namespace},
        )
    if outcome.state == "failed":
        if reason == "DeadlineExceeded":
            return _deadline(node, timeout_s)
        if reason in NOT_ADMITTED_REASONS or reason.startswith("OutOf"):
            return _not_admitted(node, reason, message, pod, priority_class)
        ended = _terminated_reason(pod)
        return DiagnosticJobError(
            f"the collector failed on {node} ({ended}); "
            "see the Job's pod log and the collector image version",
            code="job_failed",
            key="collector_failed",
            params={"node": node, "ended": ended},
        )
    deadline_cond = _job_condition(job, "Failed")
    if (
        deadline_cond is not None
        and deadline_cond.get("reason") == "DeadlineExceeded"
        and _started(outcome.pod)
    ):
        return _deadline(node, timeout_s)
    if not _started(outcome.pod) and outcome.state in ("timeout", "deleted"):
        why = "never created" if outcome.pod is None else "never started"
        detail = (deadline_cond or {}).get("message") or message
        return DiagnosticJobError(
            f"the diagnostic pod was {why} on {node} within {timeout_s}s"
            f"{' (' + detail + ')' if detail else ''}; check the Job's events "
            "(quota, admission policy, node capacity) and retry",
            code="not_admitted",
            key="pod_never_created" if outcome.pod is None else "pod_never_started",
            params={"node": node, "timeout_s": timeout_s, "detail": detail},
        )
    if outcome.state == "timeout":
        return _deadline(node, timeout_s)
    return DiagnosticJobError(
        f"the diagnostic pod on {node} disappeared before finishing; retry the diagnosis",
        code="job_failed",
        key="pod_disappeared",
        params={"node": node},
    )


def _not_admitted(
    node: str, reason: str, message: str, pod: Obj, priority_class: str | None
) -> DiagnosticJobError:
    """The kubelet refused the pod: say whether a node condition or full requests did, and
    offer the critical priority class fallback unless the pod already had it."""
    message = message.removeprefix("Pod was rejected: ")  # the kubelet's status prefix
    # the kubelet's words (reason, message) are quoted as it said them
    if reason.startswith("OutOf"):
        cause = "requests_full"
        why = f"the node's requests are full ({reason}: {message or 'no message'})"
    elif reason == "Evicted":
        cause = "node_condition"
        why = f"a node condition refuses new pods ({message.strip() or reason})"
    else:
        cause = "other"
        why = f"{reason}: {message or 'no message'}"
    priority = int((pod.get("spec") or {}).get("priority") or 0)
    if priority >= CRITICAL_PRIORITY:
        fix = "already_critical"
        advice = (
            f"the pod already ran at critical priority ({priority_class or priority}); act "
            "on the node's conditions and events, then retry"
        )
    elif priority_class:
        fix = "class_below_critical"
        advice = (
            f"kube.diagnostic_priority_class={priority_class} is below the kubelet's critical "
            "priority (2000000000): use system-node-critical or system-cluster-critical"
        )
    else:
        fix = "fallback"
        advice = f"act on the node's conditions and events, then retry; or, {FALLBACK_HINT}"
    return DiagnosticJobError(
        f"the kubelet on {node} refused the diagnostic pod: {why}; {advice}",
        code="not_admitted",
        key="not_admitted",
        params={
            "node": node,
            "cause": cause,
            "reason": reason,
            "message": message.strip(),
            "fix": fix,
            "priority": str(priority_class or priority),
            "priority_class": priority_class or "",
        },
    )


def _deadline(node: str, timeout_s: int) -> DiagnosticJobError:
    return DiagnosticJobError(
        f"the collector on {node} did not finish within {timeout_s}s; the node may be too "
        "loaded to run it - raise kube.job_timeout_s or retry later",
        code="deadline_exceeded",
        key="deadline_exceeded",
        params={"node": node, "timeout_s": timeout_s},
    )


def _terminated_reason(pod: Obj) -> str:
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        term = (cs.get("state") or {}).get("terminated")
        if term:
            return f"exit code {term.get('exitCode')}, {term.get('reason') or 'Error'}"
    return "no exit status"


def parse_evidence(text: str) -> EvidenceBundle:
    """The EvidenceBundle in the collector's log (whole log, else its last JSON line)."""
    candidates = [text.strip()] + [
        line for line in reversed(text.splitlines()) if line.lstrip().startswith("{")
    ]
    data: Any = None
    chosen = ""
    for candidate in candidates:
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(data, dict):
            chosen = candidate
            break
    else:
        raise DiagnosticJobError(
            "the collector's log holds no evidence JSON; check the collector image "
            "(kube.image) and the pod log",
            code="evidence_unreadable",
            key="no_evidence_json",
        )
    version = foreign_schema(data)
    if version is not None:
        raise DiagnosticJobError(
            f"the collector wrote evidence schema {version or '(none)'} but this bot reads "
            f"{SCHEMA_MAJOR}.x; run the same gpunode version in kube.image",
            code="evidence_unreadable",
            key="foreign_schema",
            params={"version": version or "(none)", "reads": f"{SCHEMA_MAJOR}.x"},
        )
    try:
        return EvidenceBundle.model_validate_json(chosen)
    except ValidationError as exc:
        raise DiagnosticJobError(
            f"the collector's evidence does not match schema {SCHEMA_VERSION} "
            f"({exc.error_count()} errors); run the same gpunode version in kube.image",
            code="evidence_unreadable",
            key="schema_mismatch",
            params={"schema": SCHEMA_VERSION, "errors": exc.error_count()},
        ) from exc
