"""The third GPU-evidence rung: dcgm-exporter's per-pod framebuffer figures.

When NVML gives no per-process GPU memory (no RuntimeClass and a default runtime that is not
NVIDIA's, Bottlerocket, GKE-managed drivers, MIG without the monitor capability, MPS), the
bot reads what dcgm-exporter already publishes: ``DCGM_FI_DEV_FB_USED`` / ``DCGM_FI_DEV_FB_FREE``
(MiB) per GPU or MIG instance (``GPU_I_PROFILE``, ``GPU_I_ID``), labelled with the ``pod``,
``namespace`` and ``container`` the kubelet assigned that device to when the exporter's
Kubernetes mapping is on (``DCGM_EXPORTER_KUBERNETES=true``). Scraped by a Prometheus that
does not honour the target's labels, those become ``exported_pod``, ``exported_namespace``,
``exported_container``; both spellings are read.

The figure is the device's, not the pod's processes': on a time-sliced or MPS GPU every pod
sharing the device carries the same total, and ``PodGpuMemory.shared_by`` says so.

Pure: exposition text or Prometheus samples in, ``PodGpuMemory`` rows and the gap's words out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from bot.core.model.evidence import EvidenceBundle, Gap, PodGpuMemory

#: the gap every GPU-evidence rung reports under (``bot.kube.gpuevidence``)
GAP_SOURCE = "gpu:evidence"
FB_USED = "DCGM_FI_DEV_FB_USED"
FB_FREE = "DCGM_FI_DEV_FB_FREE"
MIB = 1024 * 1024
#: pods the gap sentence names (the evidence keeps every row)
SHOWN = 5
#: (pod, namespace, container) label names: as a Prometheus without ``honorLabels`` renames
#: them (first: then ``pod``/``namespace`` are the scrape target's, the exporter's own pod),
#: and as the exporter writes them
POD_LABELS = (
    ("exported_pod", "exported_namespace", "exported_container"),
    ("pod", "namespace", "container"),
)

Series = tuple[str, dict[str, str], float]


@dataclass(frozen=True)
class DcgmAttempt:
    """One way dcgm-exporter was asked (``way``: "the exporter's endpoint 10.0.3.7:9400",
    "Prometheus"), and what came back: rows, or why none.

    The same as data, for the reader's words (``templates/sentences/gaps.j2``): ``via``
    (``endpoint``, ``prometheus``), the failure's ``code`` and raw ``params`` (the endpoint's
    ``at_address``, ``at_node``, ``at_service`` when one was found). An attempt without a
    code is worded by its English ``failure``, quoted."""

    way: str
    memory: tuple[PodGpuMemory, ...] = ()
    failure: str | None = None
    via: str = ""
    code: str = ""
    params: Mapping[str, str | int] = field(default_factory=dict)


class ExpositionError(ValueError):
    """Text that is not the Prometheus exposition format."""


def _labels(text: str, line_no: int) -> dict[str, str]:
    out: dict[str, str] = {}
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " ,":
            i += 1
        if i >= n:
            break
        eq = text.find("=", i)
        if eq < 0 or eq + 1 >= n or text[eq + 1] != '"':
            raise ExpositionError(f"line {line_no}: a label without a quoted value")
        name = text[i:eq].strip()
        i, value = eq + 2, []
        while True:
            if i >= n:
                raise ExpositionError(f"line {line_no}: an unterminated label value")
            c = text[i]
            if c == "\\" and i + 1 < n:
                value.append({"n": "\n", "\\": "\\", '"': '"'}.get(text[i + 1], text[i + 1]))
                i += 2
            elif c == '"':
                i += 1
                break
            else:
                value.append(c)
                i += 1
        out[name] = "".join(value)
    return out


def parse_exposition(text: str) -> list[Series]:
    """Every sample of Prometheus text exposition (version 0.0.4) as (name, labels, value)."""
    out: list[Series] = []
    for line_no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if "{" in line:
            name, rest = line.split("{", 1)
            close = _closing_brace(rest)
            if close < 0:
                raise ExpositionError(f"line {line_no}: no closing brace")
            labels, tail = _labels(rest[:close], line_no), rest[close + 1 :]
        else:
            name, _, tail = line.partition(" ")
            labels = {}
        fields = tail.split()
        if not name.strip() or not fields:
            raise ExpositionError(f"line {line_no}: no metric name or value")
        try:
            value = float(fields[0])
        except ValueError as exc:
            raise ExpositionError(f"line {line_no}: value {fields[0]!r} is not a number") from exc
        out.append((name.strip(), labels, value))
    return out


def _closing_brace(rest: str) -> int:
    quoted, i = False, 0
    while i < len(rest):
        c = rest[i]
        if c == "\\" and quoted:
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        elif c == "}" and not quoted:
            return i
        i += 1
    return -1


def samples_as_series(samples: Iterable[tuple[Mapping[str, str], float]]) -> list[Series]:
    """Prometheus query results (labels with ``__name__``, value) as exposition series."""
    return [
        (str(labels.get("__name__", "")), {k: v for k, v in labels.items() if k != "__name__"}, v)
        for labels, v in samples
    ]


def _who(labels: Mapping[str, str]) -> tuple[str, str, str] | None:
    """(pod, namespace, container) when a spelling of the pod labels is present, else None;
    ('', '', '') when present but empty (a device no pod holds)."""
    for names in POD_LABELS:
        if names[0] in labels:
            pod, ns, container = (labels.get(k, "") for k in names)
            return pod, ns, container
    return None


def _device(labels: Mapping[str, str]) -> tuple[str, str]:
    return labels.get("UUID") or labels.get("gpu", "?"), labels.get("GPU_I_ID", "")


def _source(via: str, at: Mapping[str, str | int]) -> str:
    """Where the rows were read, as an identifier like every evidence source (no words):
    ``dcgm-exporter:SERVICE@ADDRESS:PORT`` (the endpoint), ``dcgm-exporter:prometheus``;
    ``dcgm-exporter`` when the caller did not say."""
    if via == "endpoint" and at.get("at_address"):
        service = at.get("at_service")
        return f"dcgm-exporter:{f'{service}@' if service else ''}{at['at_address']}"
    return f"dcgm-exporter:{via}" if via else "dcgm-exporter"


def pod_memory(
    series: Iterable[Series],
    *,
    way: str,
    via: str = "",
    at: Mapping[str, str | int] | None = None,
) -> DcgmAttempt:
    """Per-pod GPU memory from dcgm-exporter series, or why there is none (``via`` and the
    endpoint's ``at`` params: how ``way`` is worded)."""
    said = dict(at or {})

    def failed(failure: str, code: str, **params: str | int) -> DcgmAttempt:
        return DcgmAttempt(way, failure=failure, via=via, code=code, params={**said, **params})

    used = [(labels, v) for name, labels, v in series if name == FB_USED and math.isfinite(v)]
    free = {
        (*_device(labels), *(_who(labels) or ("", "", ""))): v
        for name, labels, v in series
        if name == FB_FREE and math.isfinite(v)
    }
    if not used:
        return failed(
            f"no {FB_USED} series (the exporter's metric list lacks it, or it is not scraped)",
            "no_fb_used",
            metric=FB_USED,
        )
    mapped = [(labels, v, who) for labels, v in used if (who := _who(labels)) is not None]
    if not mapped:
        return failed(
            "its series carry no pod labels: the exporter's Kubernetes mapping is off (set "
            "DCGM_EXPORTER_KUBERNETES=true and mount the kubelet's pod-resources socket, as the "
            "GPU Operator does)",
            "no_pod_labels",
        )
    held = [(labels, v, who) for labels, v, who in mapped if who[0] and who[1]]
    if not held:
        return failed(
            f"none of its {len(used)} {FB_USED} series names a pod: no pod holds these GPUs, "
            "or the exporter cannot map them (the kubelet's pod-resources socket; "
            "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE must match the device plugin's IDs)",
            "no_pod_named",
            count=len(used),
            metric=FB_USED,
        )
    sharing: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for labels, _, who in held:
        sharing.setdefault(_device(labels), set()).add((who[1], who[0]))
    rows: dict[tuple[str, ...], PodGpuMemory] = {}
    source = _source(via, said)
    for labels, v, (pod, ns, container) in held:
        device = _device(labels)
        key = (ns, pod, container, *device)
        f = free.get((*device, pod, ns, container))
        rows[key] = PodGpuMemory(
            namespace=ns,
            pod=pod,
            container=container or None,
            gpu=labels.get("gpu", "?"),
            gpu_uuid=labels.get("UUID") or None,
            mig_profile=labels.get("GPU_I_PROFILE") or None,
            mig_instance=labels.get("GPU_I_ID") or None,
            used_bytes=int(v * MIB),
            free_bytes=int(f * MIB) if f is not None else None,
            shared_by=len(sharing[device]),
            source=source,
        )
    ordered = sorted(rows.values(), key=lambda r: (r.namespace, r.pod, r.gpu, r.mig_instance or ""))
    return DcgmAttempt(way, memory=tuple(ordered), via=via, params=said)


def needs_dcgm(bundle: EvidenceBundle, *, nvidia: bool) -> bool:
    """True on a node with NVIDIA GPUs (``nvidia``: dcgm-exporter is NVIDIA's) when NVML left
    a GPU-evidence gap and no rung has given per-pod memory yet."""
    return nvidia and not bundle.pod_gpu_memory and any(g.source == GAP_SOURCE for g in bundle.gaps)


def _held(attempt: DcgmAttempt) -> list[tuple[str, int]]:
    """namespace/pod -> GPU memory used, the largest first."""
    held: dict[str, int] = {}
    for r in attempt.memory:
        held[f"{r.namespace}/{r.pod}"] = held.get(f"{r.namespace}/{r.pod}", 0) + r.used_bytes
    return sorted(held.items(), key=lambda kv: (-kv[1], kv[0]))


def _named(top: list[tuple[str, int]]) -> str:
    return ", ".join(f"{who} {used / 1024**3:.1f} GiB" for who, used in top[:SHOWN])


def attempt_sentence(attempt: DcgmAttempt) -> str:
    if attempt.memory:
        top = _held(attempt)
        more = f" and {len(top) - SHOWN} more" if len(top) > SHOWN else ""
        shared = any(r.shared_by > 1 for r in attempt.memory)
        return (
            f"Per-pod GPU memory comes from dcgm-exporter via {attempt.way} ({len(top)} pod"
            f"{'s' if len(top) != 1 else ''}: {_named(top)}{more}): the framebuffer used on "
            "each pod's GPU or MIG instance, not per process"
            + ("; pods that share a GPU each show the device's total." if shared else ".")
        )
    return f"dcgm-exporter via {attempt.way}: {attempt.failure}."


def attempt_params(attempt: DcgmAttempt) -> dict[str, str | int]:
    """The attempt as a gap's raw params (``via``, ``code``: ``memory`` or the failure's,
    its params, and ``text``: the English sentence, for an attempt without a code)."""
    out: dict[str, str | int] = {
        "via": attempt.via,
        "way": attempt.way,
        "text": attempt_sentence(attempt),
        **attempt.params,
    }
    if attempt.memory:
        top = _held(attempt)
        shared = any(r.shared_by > 1 for r in attempt.memory)
        more = max(0, len(top) - SHOWN)
        return out | {
            "code": "memory",
            "pods": len(top),
            "named": _named(top),
            "more": more,
            "shared": int(shared),
        }
    return out | {"code": attempt.code, "failure": attempt.failure or ""}


def join(bundle: EvidenceBundle, attempt: DcgmAttempt) -> EvidenceBundle:
    """``bundle`` with ``attempt``'s rows (when it has none yet) and the GPU-evidence gap
    extended by what the attempt gave or why it failed: its sentence on the English reason,
    its params (``d1_...``, ``d2_...``; ``dcgm``: how many) beside the gap's own code."""
    sentence = attempt_sentence(attempt)

    def extended(g: Gap) -> Gap:
        before = g.params.get("dcgm", 0)
        n = (before if isinstance(before, int) else 0) + 1
        said = {f"d{n}_{k}": v for k, v in attempt_params(attempt).items()}
        params = {**g.params, **said, "dcgm": n}
        return g.model_copy(update={"reason": f"{g.reason} {sentence}", "params": params})

    gaps = [extended(g) if g.source == GAP_SOURCE else g for g in bundle.gaps]
    update: dict[str, object] = {"gaps": gaps}
    if attempt.memory and not bundle.pod_gpu_memory:
        update["pod_gpu_memory"] = list(attempt.memory)
    return bundle.model_copy(update=update)
