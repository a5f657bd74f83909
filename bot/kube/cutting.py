"""What the page decoder's process runs: list pages cut to the slim records the fleet
informers keep, and pod metrics reduced to working-set bytes. Pure (no I/O).

The decoder (``python -m bot.kube.decoding``) imports the module of each function it is sent,
and so everything that module imports. This one imports no model (pydantic and the core's
models, ~20 MiB of the decoder's resident memory, measured, counted in the bot's process tree:
issue #25's 300 MiB) and no ``kubernetes`` client: the requests arithmetic
(``bot.core.diagnosis.requests``), quantities, the annotation keys kept, the walker. The
fleet read without informers (``bot.kube.tallying.reduce_pod_page``, a one-shot command's)
builds models there, and imports them where it runs.
"""

from __future__ import annotations

import json
import sys
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple, TypeVar, cast

import msgspec

from bot.core.diagnosis.requests import TERMINAL_PHASES, ResourceList, pod_requests_and_limits
from bot.core.model.annotations import ANNOTATION_KEYS, NODE_PROTECTION
from bot.core.model.quantity import parse_quantity
from bot.kube.pages import SlimPage
from bot.kube.podpages import RawPod, RawSpec, decode_metrics_run, decode_pod_page
from bot.kube.walking import ListWalker

Obj = dict[str, Any]
R = TypeVar("R")
#: node annotations kept (on the node record, and on NodeInfo): the autoscalers' scale-down
#: protection
KEPT_NODE_ANNOTATIONS = frozenset(NODE_PROTECTION)
#: ``json.dumps(x, separators=(",", ":"))`` (and with ``sort_keys``), the encoder built once:
#: ``json.dumps`` with arguments builds one a call, a third of cutting a pod (measured)
_compact = json.JSONEncoder(separators=(",", ":")).encode
_compact_sorted = json.JSONEncoder(separators=(",", ":"), sort_keys=True).encode


def controller_ref(obj: Mapping[str, Any]) -> Obj | None:
    """The ownerReference with ``controller: true`` (the one that manages the object)."""
    return _controller_among((obj.get("metadata") or {}).get("ownerReferences"))


def _controller_among(refs: Any) -> Obj | None:
    """The ownerReference of ``refs`` with ``controller: true``, or None."""
    for ref in refs or []:
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


def slot_key(pod: Mapping[str, Any]) -> tuple[str, int]:
    """A ``PodSlot``'s key and priority, without building the model."""
    meta = pod.get("metadata") or {}
    return (
        f"{meta.get('namespace')}/{meta.get('name')}",
        int((pod.get("spec") or {}).get("priority") or 0),
    )


def pod_working_set(item: Obj) -> tuple[str, str, int]:
    """``parse_pod_metrics``'s (namespace, name, working-set bytes), the same figures (an item
    it refuses is refused here too), without building the model: a pod metrics list holds one
    item per running pod (150,000 on a 5,000-node fleet), and the model was most of the cost
    of each."""
    meta = item.get("metadata") or {}
    namespace, name = meta.get("namespace", ""), meta.get("name", "")
    if type(namespace) is not str or type(name) is not str:  # the model's own error
        from bot.kube.objects import parse_pod_metrics  # its models, only for such an item

        m = parse_pod_metrics(item)
        return m.namespace, m.name, m.memory_working_set_bytes
    total = 0
    for c in item.get("containers") or []:
        total += parse_quantity((c.get("usage") or {}).get("memory", "0")).value()
    return namespace, name, total


class MetricsPage(NamedTuple):
    """A metrics list reduced: ``keys`` ("namespace/name" joined by newlines) and ``values``
    (working-set bytes, int64 in ``array`` order), two objects instead of one tuple per pod,
    so handing 150,000 pods back from the decoder is two copies, not 150,000 objects."""

    token: str | None
    keys: str
    values: bytes

    def usage(self) -> Iterator[tuple[str, int]]:
        if not self.keys:
            return iter(())
        return zip(self.keys.split("\n"), array("q", self.values), strict=True)


# -- the fleet as an informer holds it -----------------------------------------------------
#: a pod's requests and limits as a fleet record keeps them: JSON text of [requests, limits],
#: each [[name, nanos, format], ...] in the list's order (``expanded`` reads it back). Text, not
#: nested tuples: a tuple is untracked only once everything in it is, a level per collection
Shape = str
#: a pod as the fleet informer keeps it: (node, priority, shape, anti, labels, owner,
#: deleting, marks), what ``reduce_pod_page`` reads of it, already reduced, what the plans'
#: pod selections read (``bot.kube.selections``) and what tells a gang's members
#: (``bot.kube.members``). ``node`` is "" for a pod kubectl does not count: of a Succeeded or
#: Failed pod nothing else is held (``_UNCOUNTED``); of an unbound one, only what names its
#: gang (labels, owner, deleting, marks: a gang's Pending member is still its member).
#: ``anti`` is its required podAntiAffinity, slim (``slim_anti``), or None; ``labels``
#: its labels as JSON text, keys sorted (``Labels``); ``owner`` its controller reference as
#: JSON text ``[apiVersion, kind, name]``, "" when none; ``deleting``: it has a
#: deletionTimestamp; ``marks``: the annotations a gang is told by
#: (``bot.core.model.gangs.ANNOTATION_KEYS``, Volcano's PodGroup) as JSON text, "" when none.
#: A plain tuple of atoms, not a NamedTuple or dicts of
#: ``Quantity``: the collector untracks such a tuple the first time it sees it (and a dict
#: holding only such tuples at its next full collection), so a full collection never walks
#: 150,000 pods. Such a walk held the interpreter lock for 115-300 ms on a loaded 2-core
#: machine, on an informer's or a gateway's thread, and the event loop waited that long
#: (issue #25). Equal shapes, label sets, owners and marks are one string each
#: (``FleetShare``): a ReplicaSet's pods share all of them.
PodRecord = tuple[str, int, Shape, Obj | None, str, str, bool, str]
#: a pod's labels as a record keeps them (``labels_text``; ``labels_of`` reads them back)
Labels = str


def _shape(requests: ResourceList, limits: ResourceList) -> Shape:
    return _compact(
        [[[name, q.nanos, q.format] for name, q in part.items()] for part in (requests, limits)]
    )


#: shapes already worked out in this process, by ``_spec_key``: a list page's pods come from a
#: few templates (a ReplicaSet's pods have one spec), and summing a pod's requests and limits
#: was half of cutting it (13 of 27 us a pod, measured); bounded, emptied when full
_SHAPES: dict[str, Shape] = {}
_SHAPES_MAX = 4096


def _spec_key(spec: Obj) -> str:
    """Everything ``pod_requests_and_limits`` reads of a pod when it reads no status (the
    fleet's Allocated totals), as text: each container's ``resources``, each init
    container's ``resources`` and ``restartPolicy`` (a sidecar is summed, not maxed), the
    ``overhead`` and the pod-level ``resources``. ``repr`` of what the JSON decoder built
    tells apart any two that differ (its strings are quoted, numbers are not); two equal
    ones written in another key order only miss the cache."""
    return repr(
        (
            [c.get("resources") for c in spec.get("containers") or []],
            [
                (c.get("resources"), c.get("restartPolicy"))
                for c in spec.get("initContainers") or []
            ],
            spec.get("overhead"),
            spec.get("resources"),
        )
    )


def pod_shape(pod: Obj) -> Shape:
    """``pod_requests_and_limits(pod)`` (spec only) as a ``Shape``, worked out once a spec."""
    key = _spec_key(pod.get("spec") or {})
    shape = _SHAPES.get(key)
    if shape is None:
        shape = _shape(*pod_requests_and_limits(pod))
        if len(_SHAPES) >= _SHAPES_MAX:
            _SHAPES.clear()
        _SHAPES[key] = shape
    return shape


def _owner_text(refs: Any) -> str:
    """A record's ``owner``: the controller among ``refs`` (a pod's ownerReferences) as JSON
    text ``[apiVersion, kind, name]``, "" when none."""
    ref = _controller_among(refs)
    if ref is None:
        return ""
    return _compact([ref.get("apiVersion", ""), ref.get("kind", ""), ref.get("name", "")])


def _marks_text(annotations: Any) -> str:
    """A record's ``marks``: the annotations a gang is told by, as JSON text ("" when none)."""
    annotations = annotations or {}
    kept = {k: str(annotations[k]) for k in ANNOTATION_KEYS if k in annotations}
    return _compact_sorted(kept) if kept else ""


def pod_record(pod: Obj) -> PodRecord:
    meta = pod.get("metadata") or {}
    if (pod.get("status") or {}).get("phase") in TERMINAL_PHASES:
        return _UNCOUNTED
    owner = _owner_text(meta.get("ownerReferences"))
    marks = _marks_text(meta.get("annotations"))
    labels = labels_text(meta.get("labels") or {})
    deleting = bool(meta.get("deletionTimestamp"))
    node = (pod.get("spec") or {}).get("nodeName")
    if not node:  # not counted anywhere: only what tells its gang
        return ("", 0, _UNCOUNTED[2], None, labels, owner, deleting, marks)
    _, priority = slot_key(pod)
    return (
        node,
        priority,
        pod_shape(pod),
        slim_anti(pod),
        labels,
        owner,
        deleting,
        marks,
    )


#: texts made from a raw part (``bot.kube.podpages``), by its bytes: labels, owners, marks;
#: and shapes by the bytes of what the sum reads. A ReplicaSet's pods have equal parts, so
#: each is worked out once: bounded, emptied when full, as ``_SHAPES``
_LABELS: dict[bytes, str] = {}
_OWNERS: dict[bytes, str] = {}
_MARKS: dict[bytes, str] = {}
_RAW_SHAPES: dict[tuple[Any, ...], Shape] = {}


RawPart = msgspec.Raw | None


def _loads(raw: RawPart) -> Any:
    """A raw part decoded as ``json.loads`` decodes it; None when absent."""
    return None if raw is None else json.loads(bytes(raw))


def _text_of(cache: dict[bytes, str], raw: RawPart, make: Callable[[Any], str]) -> str:
    """``make(raw decoded)``, kept in ``cache`` by the raw bytes (bounded as ``_SHAPES``)."""
    key = _raw(raw) or b""
    text = cache.get(key)
    if text is None:
        text = make(json.loads(key) if key else None)
        if len(cache) >= _SHAPES_MAX:
            cache.clear()
        cache[key] = text
    return text


def _labels_of_raw(labels: Any) -> str:
    return labels_text(labels or {})


def _raw(part: RawPart) -> bytes | None:
    return None if part is None else bytes(part)


def _raw_shape(spec: RawSpec) -> Shape:
    """``pod_shape`` of a pod whose spec came raw: by the bytes of each part the sum reads."""
    containers, inits = spec.get("containers"), spec.get("initContainers")
    key = (
        tuple(_raw(c.get("resources")) for c in containers or ()),
        tuple((_raw(c.get("resources")), _raw(c.get("restartPolicy"))) for c in inits or ()),
        _raw(spec.get("overhead")),
        _raw(spec.get("resources")),
    )
    shape = _RAW_SHAPES.get(key)
    if shape is None:
        summed: Obj = {}
        for k, part in (("overhead", spec.get("overhead")), ("resources", spec.get("resources"))):
            if part is not None:
                summed[k] = _loads(part)
        for k, listed in (("containers", containers), ("initContainers", inits)):
            if listed is not None:
                # a raw container holds raw parts only (``RawContainer``)
                summed[k] = [{f: _loads(cast(RawPart, v)) for f, v in c.items()} for c in listed]
        shape = _shape(*pod_requests_and_limits({"spec": summed}))
        if len(_RAW_SHAPES) >= _SHAPES_MAX:
            _RAW_SHAPES.clear()
        _RAW_SHAPES[key] = shape
    return shape


def raw_pod_record(pod: RawPod) -> PodRecord:
    """``pod_record`` of a pod decoded with its parts raw (``bot.kube.podpages``): the same
    record, each part's text made once per distinct bytes."""
    meta = pod.get("metadata") or {}
    if (pod.get("status") or {}).get("phase") in TERMINAL_PHASES:
        return _UNCOUNTED
    owner = _text_of(_OWNERS, meta.get("ownerReferences"), _owner_text)
    marks = _text_of(_MARKS, meta.get("annotations"), _marks_text)
    labels = _text_of(_LABELS, meta.get("labels"), _labels_of_raw)
    deleting = bool(meta.get("deletionTimestamp"))
    spec = pod.get("spec") or {}
    node = spec.get("nodeName")
    if not node:  # not counted anywhere: only what tells its gang
        return ("", 0, _UNCOUNTED[2], None, labels, owner, deleting, marks)
    affinity = spec.get("affinity")
    anti = None
    if affinity is not None:  # rare: the affinity and labels decoded, and cut as a pod's
        kept = {"namespace": meta.get("namespace"), "name": meta.get("name")}
        named = {**kept, "labels": _loads(meta.get("labels"))}
        anti = slim_anti({"metadata": named, "spec": {"affinity": _loads(affinity)}})
    return (
        node,
        int(spec.get("priority") or 0),
        _raw_shape(spec),
        anti,
        labels,
        owner,
        deleting,
        marks,
    )


def labels_text(labels: dict[str, Any]) -> Labels:
    return _compact_sorted({str(k): str(v) for k, v in labels.items()})


def node_record(node: Obj) -> Obj:
    """A node as the fleet informer keeps it: ``slim_node``'s fields and what
    ``objects.parse_node`` and ``objects.is_gpu_node`` read (no images, no managedFields, only
    the annotations a report shows)."""
    meta, spec, status = (
        node.get("metadata") or {},
        node.get("spec") or {},
        node.get("status") or {},
    )
    info = status.get("nodeInfo") or {}
    kept = ("type", "status", "reason", "message", "lastTransitionTime")
    return {
        "metadata": {
            "name": meta.get("name", ""),
            "uid": meta.get("uid", ""),
            "resourceVersion": meta.get("resourceVersion"),
            "labels": meta.get("labels") or {},
            "annotations": {
                k: v
                for k, v in (meta.get("annotations") or {}).items()
                if k in KEPT_NODE_ANNOTATIONS
            },
        },
        "spec": {"unschedulable": spec.get("unschedulable"), "taints": spec.get("taints") or []},
        "status": {
            "allocatable": status.get("allocatable") or {},
            "capacity": status.get("capacity") or {},
            "conditions": [
                {k: c[k] for k in kept if k in c} for c in status.get("conditions") or []
            ],
            "nodeInfo": {
                k: info[k] for k in ("kubeletVersion", "kernelVersion", "osImage") if k in info
            },
        },
    }


#: bytes of a list page (or a metrics answer's piece) walked at a time: a page (1 MB, 500
#: pods) decoded whole held ~6 MiB of objects in the decoder at once; walked so, each run of
#: items is cut and dropped before the next is decoded (0.7 MiB at most, as fast, measured)
STEP = 64 * 1024


def stepped(walker: ListWalker, body: bytes, *, final: bool) -> Iterator[tuple[str, Any]]:
    """``walker`` fed ``body`` a ``STEP`` at a time, each step's fields handed on before the
    next step is decoded (``final``: ``body`` ends the answer)."""
    if not body:
        yield from walker.feed(body, final=final)
    for at in range(0, len(body), STEP):
        yield from walker.feed(body[at : at + STEP], final=final and at + STEP >= len(body))


def slim_page(body: bytes, cut: Callable[[Obj], R]) -> SlimPage[R]:
    """A list page ``body`` with each item cut by ``cut``, its ``continue`` token and
    resourceVersion; decoded an item at a time (``ListWalker``), never the whole page."""
    token: str | None = None
    version = ""
    items: list[tuple[str, str, R]] = []
    for field, value in stepped(ListWalker(), body, final=True) if body else ():
        if field == "items" and isinstance(value, dict):  # ("items", None): none
            m = value.get("metadata") or {}
            items.append((m.get("namespace") or "", m.get("name") or "", cut(value)))
        elif field == "metadata" and isinstance(value, dict):
            token = value.get("continue") or None
            version = str(value.get("resourceVersion") or "")
    return SlimPage(token, version, items)


def _pod_page(body: bytes) -> SlimPage[PodRecord]:
    """``slim_page(body, pod_record)``, the page decoded to only what ``pod_record`` reads,
    those parts raw (``bot.kube.podpages``, ``raw_pod_record``) where it fits, the general way
    where it does not."""
    page = decode_pod_page(body) if body else None
    if page is None:
        return slim_page(body, pod_record)
    meta = page.get("metadata") or {}
    items: list[tuple[str, str, PodRecord]] = []
    for pod in page.get("items") or ():
        m = pod.get("metadata") or {}
        items.append((m.get("namespace") or "", m.get("name") or "", raw_pod_record(pod)))
    return SlimPage(meta.get("continue") or None, str(meta.get("resourceVersion") or ""), items)


def pod_records_page(body: bytes) -> SlimPage[PodRecord]:
    """A page of pods cut to ``PodRecord``s (in the decoder), equal parts shared."""
    page = _pod_page(body)
    share = FleetShare()
    return page._replace(items=[(ns, name, share.pod(r)) for ns, name, r in page.items])


def node_records_page(body: bytes) -> SlimPage[Obj]:
    return slim_page(body, node_record)


class FleetShare:
    """Equal parts of records made one: node names and shapes interned (``sys.intern``). A
    record from another process (or another page) arrives with its own copies; sharing them
    is what keeps 150,000 pods in a few tens of MiB."""

    def pod(self, record: PodRecord) -> PodRecord:
        if record == _UNCOUNTED:
            return _UNCOUNTED
        node, priority, shape, anti, labels, owner, deleting, marks = record
        intern = sys.intern
        return (
            intern(node),
            priority,
            intern(shape),
            anti,
            intern(labels),
            intern(owner),
            deleting,
            intern(marks),
        )


_UNCOUNTED: PodRecord = ("", 0, "[[],[]]", None, "{}", "", False, "")


def slim_anti(pod: Obj) -> Obj | None:
    """A pod with a required pod anti-affinity, cut to what the filter reads (None: none)."""
    affinity = (pod.get("spec") or {}).get("affinity") or {}
    required = (affinity.get("podAntiAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if not required:
        return None
    meta = pod.get("metadata") or {}
    return {
        "metadata": {
            "namespace": meta.get("namespace"),
            "name": meta.get("name"),
            "labels": meta.get("labels") or {},
        },
        "spec": {
            "affinity": {
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}
            }
        },
    }


def _metrics_walker() -> ListWalker:
    """A walker of a pod metrics answer, its items decoded to what ``pod_working_set`` reads."""
    return ListWalker(decode_run=decode_metrics_run)


def reduce_metrics_page(body: bytes) -> MetricsPage:
    return _reduce_metrics(stepped(_metrics_walker(), body, final=True) if body else ())


def _reduce_metrics(fields: Iterable[tuple[str, Any]]) -> MetricsPage:
    token: str | None = None
    keys: list[str] = []
    values = array("q")
    for field_name, value in fields:
        if field_name == "items":
            namespace, name, working_set = pod_working_set(value)
            keys.append(f"{namespace}/{name}")
            values.append(working_set)
        elif field_name == "metadata" and isinstance(value, dict):
            token = value.get("continue") or None
    return MetricsPage(token, "\n".join(keys), values.tobytes())


#: the answers being walked piece by piece, by stream id (in the decoder's process)
_WALKERS: dict[int, ListWalker] = {}


def reduce_metrics_piece(stream: int, body: bytes, *, final: bool) -> MetricsPage:
    """The next piece of metrics answer ``stream`` reduced: the pods complete so far
    (``token`` set by the piece that holds the list's metadata)."""
    walker = _WALKERS.setdefault(stream, _metrics_walker())
    try:
        page = _reduce_metrics(stepped(walker, body, final=final))
    except BaseException:
        _WALKERS.pop(stream, None)
        raise
    if final:
        _WALKERS.pop(stream, None)
    return page


def forget_stream(stream: int, body: bytes) -> None:
    """Drop an answer left unfinished (the caller failed or was cancelled)."""
    del body
    _WALKERS.pop(stream, None)
