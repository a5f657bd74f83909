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
from dataclasses import dataclass
from typing import Any

from kubernetes import client, watch
from pydantic import ValidationError

from bot.config import KubeSettings
from bot.core.evidence import SCHEMA_VERSION, EvidenceBundle
from bot.errors import DiagnosticJobError
from bot.kube.transport import Transport
from bot.render.manifests import render_manifest

Obj = dict[str, Any]

TEMPLATE = "diagnostic-job.yaml.j2"
CONTAINER = "collector"
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


def build_job(settings: KubeSettings, node: str, run_id: str) -> Obj:
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
        runtime_class=settings.nvidia_runtime_class,
        nvidia_visible_devices_all=settings.nvidia_visible_devices_all,
        image=settings.image,
        cpu_request=CPU_REQUEST,
        memory=MEMORY,
        kernel_log_window_s=settings.kernel_log_window_s,
    )


@dataclass(frozen=True)
class PodOutcome:
    """How the wait ended: ``succeeded``, ``failed``, ``image_pull``, ``deleted``,
    ``timeout`` or ``cancelled``; ``pod`` is the last pod seen (None if none ever was)."""

    state: str
    pod: Obj | None


def _waiting_reason(pod: Obj) -> str | None:
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        reason = ((cs.get("state") or {}).get("waiting") or {}).get("reason")
        if reason:
            return str(reason)
    return None


def classify_pod(pod: Obj) -> str | None:
    """``succeeded``/``failed``/``image_pull`` when the pod's fate is known, else None."""
    phase = (pod.get("status") or {}).get("phase")
    if phase == "Succeeded":
        return "succeeded"
    if phase == "Failed":
        return "failed"
    if _waiting_reason(pod) in IMAGE_PULL_REASONS:
        return "image_pull"
    return None


def wait_for_pod(
    t: Transport, namespace: str, run_id: str, *, deadline: float, cancel: threading.Event
) -> PodOutcome:
    """List-then-watch the run's pod until its fate is known, the deadline (monotonic
    seconds) passes, or ``cancel`` is set."""
    core = client.CoreV1Api(t.api_client)
    selector = f"gpunode.io/run={run_id}"
    last: Obj | None = None
    while True:
        if cancel.is_set():
            return PodOutcome("cancelled", last)
        listing = t.get(f"/api/v1/namespaces/{namespace}/pods", label_selector=selector)
        for pod in listing.get("items") or []:
            last = pod
            if state := classify_pod(pod):
                return PodOutcome(state, pod)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return PodOutcome("timeout", last)
        chunk = max(1, min(WATCH_CHUNK_S, int(remaining) + 1))
        w = watch.Watch()  # type: ignore[no-untyped-call]
        for event in w.stream(  # type: ignore[no-untyped-call]
            core.list_namespaced_pod,
            namespace,
            label_selector=selector,
            resource_version=(listing.get("metadata") or {}).get("resourceVersion"),
            timeout_seconds=chunk,
            _request_timeout=chunk + 5,
        ):
            pod = event.get("raw_object") or {}
            if event.get("type") == "DELETED":
                w.stop()  # type: ignore[no-untyped-call]
                return PodOutcome("cancelled" if cancel.is_set() else "deleted", pod)
            last = pod
            if state := classify_pod(pod):
                w.stop()  # type: ignore[no-untyped-call]
                return PodOutcome(state, pod)
            if cancel.is_set():
                w.stop()  # type: ignore[no-untyped-call]
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
    outcome: PodOutcome, job: Obj | None, *, node: str, timeout_s: int
) -> DiagnosticJobError:
    """Turn a non-successful outcome into the DiagnosticJobError the user sees."""
    pod = outcome.pod or {}
    status = pod.get("status") or {}
    reason, message = status.get("reason") or "", status.get("message") or ""
    if outcome.state == "image_pull":
        return DiagnosticJobError(
            f"the collector image could not be pulled on {node} ({_waiting_reason(pod)}); "
            "check kube.image and the node's registry access or pull secrets",
            code="image_pull",
        )
    if outcome.state == "failed":
        if reason == "DeadlineExceeded":
            return _deadline(node, timeout_s)
        if reason in NOT_ADMITTED_REASONS or reason.startswith("OutOf"):
            return DiagnosticJobError(
                f"the kubelet on {node} did not admit or keep the diagnostic pod "
                f"({reason}: {message or 'no message'}); the node is likely under pressure - "
                "act on the node's conditions and events, then retry",
                code="not_admitted",
            )
        return DiagnosticJobError(
            f"the collector failed on {node} ({_terminated_reason(pod)}); "
            "see the Job's pod log and the collector image version",
            code="job_failed",
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
        )
    if outcome.state == "timeout":
        return _deadline(node, timeout_s)
    return DiagnosticJobError(
        f"the diagnostic pod on {node} disappeared before finishing; retry the diagnosis",
        code="job_failed",
    )


def _deadline(node: str, timeout_s: int) -> DiagnosticJobError:
    return DiagnosticJobError(
        f"the collector on {node} did not finish within {timeout_s}s; the node may be too "
        "loaded to run it - raise kube.job_timeout_s or retry later",
        code="deadline_exceeded",
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
        )
    version = str(data.get("schema_version", ""))
    if version.split(".")[0] != SCHEMA_VERSION.split(".")[0]:
        raise DiagnosticJobError(
            f"the collector wrote evidence schema {version or '(none)'} but this bot reads "
            f"{SCHEMA_VERSION.split('.')[0]}.x; run the same gpunode version in kube.image",
            code="evidence_unreadable",
        )
    try:
        return EvidenceBundle.model_validate_json(chosen)
    except ValidationError as exc:
        raise DiagnosticJobError(
            f"the collector's evidence does not match schema {SCHEMA_VERSION} "
            f"({exc.error_count()} errors); run the same gpunode version in kube.image",
            code="evidence_unreadable",
        ) from exc
