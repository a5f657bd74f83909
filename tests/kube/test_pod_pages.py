"""A pod list page decoded to only the fields the fleet's records read (``bot.kube.podpages``)
cuts to the same records as the page decoded whole: for any pod the API could write, with
every field ``pod_record`` reads varied and the rest of a real pod around it; a page that
does not fit the narrow shapes is decoded the general way, and a broken page fails as
before."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.kube import cutting
from bot.kube.pages import SlimPage
from bot.kube.podpages import decode_pod_page

Obj = dict[str, Any]

names = st.text("abcdefghij-", min_size=1, max_size=8)
quantities = st.sampled_from(["100m", "1", "2Gi", "512Mi", "1500M", "3", "0", "1e3", "2.5Gi"])
#: memory and cpu most often, so that containers and sidecars ask for the same resource
#: (their sum then differs from their maximum) in most pods
resource_lists = st.dictionaries(
    st.sampled_from(["cpu", "memory", "memory", "cpu", "nvidia.com/gpu", "hugepages-2Mi"]),
    quantities,
    min_size=1,
    max_size=3,
)
#: what a real pod carries beside the fields the records read, and must be skipped
NOISE: Obj = {
    "image": "registry.example/train:1.2",
    "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"fieldRef": {"x": 1}}}],
    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
    "livenessProbe": {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 10.5},
}


@st.composite
def containers(draw: st.DrawFn, *, init: bool) -> Obj:
    c: Obj = {"name": draw(names), **NOISE}
    resources: Obj = {}
    for part in ("requests", "limits"):
        if draw(st.booleans()):
            resources[part] = draw(resource_lists)
    if draw(st.integers(0, 3)):
        empty_kept = draw(st.booleans())  # else written null
        c["resources"] = resources if resources or empty_kept else None
    if init and draw(st.integers(0, 3)):
        c["restartPolicy"] = draw(st.sampled_from(["Always", "Always", "OnFailure", None]))
    return c


@st.composite
def pods(draw: st.DrawFn) -> Obj:
    meta: Obj = {
        "name": draw(names),
        "namespace": draw(names),
        "uid": "0000-1111",
        "resourceVersion": "42",
        "managedFields": [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}],
    }
    if draw(st.booleans()):
        meta["labels"] = draw(st.dictionaries(names, names, max_size=3))
    if draw(st.booleans()):
        keys = st.sampled_from(["scheduling.k8s.io/group-name", "other.example/x"])
        meta["annotations"] = draw(st.dictionaries(keys, names, max_size=2))
    if draw(st.booleans()):
        meta["ownerReferences"] = [
            {
                "apiVersion": draw(st.sampled_from(["apps/v1", "batch/v1"])),
                "kind": draw(st.sampled_from(["ReplicaSet", "Job", "StatefulSet"])),
                "name": draw(names),
                "uid": "u",
                "controller": draw(st.sampled_from([True, False, None])),
                "blockOwnerDeletion": True,
            }
            for _ in range(draw(st.integers(0, 2)))
        ]
    if draw(st.booleans()):
        meta["deletionTimestamp"] = draw(st.sampled_from(["2026-01-05T08:00:00Z", None, ""]))
    spec: Obj = {
        "containers": draw(st.lists(containers(init=False), min_size=1, max_size=3)),
        "volumes": [{"name": "data", "emptyDir": {"sizeLimit": "1Gi"}}],
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
    }
    if draw(st.integers(0, 3)):
        spec["nodeName"] = draw(st.sampled_from(["gpu-node-01", "cpu-node-02", ""]))
    if draw(st.booleans()):
        spec["priority"] = draw(st.integers(-10, 2_000_000_000))
    if draw(st.booleans()):
        spec["initContainers"] = draw(st.lists(containers(init=True), max_size=2))
    if draw(st.booleans()):
        spec["overhead"] = draw(resource_lists)
    if draw(st.booleans()):
        spec["resources"] = {"requests": draw(resource_lists), "limits": draw(resource_lists)}
    if draw(st.booleans()):
        term = {"labelSelector": {"matchLabels": {"app": draw(names)}}, "topologyKey": "h"}
        spec["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [term],
                "preferredDuringSchedulingIgnoredDuringExecution": [],
            },
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}},
        }
    status: Obj = {
        "containerStatuses": [{"name": "main", "ready": True, "restartCount": 3}],
        "qosClass": "Burstable",
    }
    if draw(st.booleans()):
        status["phase"] = draw(st.sampled_from(["Running", "Pending", "Succeeded", "Failed"]))
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def page_of(items: list[Any], *, token: str | None = "abc", rv: str = "1234") -> bytes:
    meta: Obj = {"resourceVersion": rv}
    if token is not None:
        meta["continue"] = token
    head = {"kind": "PodList", "apiVersion": "v1", "metadata": meta, "items": items}
    return json.dumps(head, separators=(",", ":")).encode()


def cut_whole(body: bytes) -> SlimPage[cutting.PodRecord]:
    """The page decoded whole, by the general walker, and cut: what ``pod_records_page``
    answered before the narrow decode."""
    page = cutting.slim_page(body, cutting.pod_record)
    share = cutting.FleetShare()
    return page._replace(items=[(ns, n, share.pod(r)) for ns, n, r in page.items])


@settings(max_examples=300, deadline=None)
@given(st.lists(pods(), max_size=6), st.sampled_from([None, "abc"]))
def test_any_page_of_pods_cuts_to_the_records_of_the_whole_decode(
    items: list[Obj], token: str | None
) -> None:
    body = page_of(items, token=token)
    assert decode_pod_page(body) is not None  # the narrow decode was taken
    assert cutting.pod_records_page(body) == cut_whole(body)


def test_the_narrow_decode_keeps_only_what_the_records_read() -> None:
    pod = {
        "metadata": {"name": "p", "namespace": "ml", "uid": "u", "managedFields": [{}]},
        "spec": {"nodeName": "n", "containers": [{"name": "c", **NOISE}], "volumes": []},
        "status": {"phase": "Running", "containerStatuses": []},
    }
    decoded = decode_pod_page(page_of([pod]))
    assert decoded is not None
    assert decoded["items"] == [
        {
            "metadata": {"name": "p", "namespace": "ml"},
            "spec": {"nodeName": "n", "containers": [{}]},
            "status": {"phase": "Running"},
        }
    ]


@pytest.mark.parametrize(
    ("what", "item"),
    [
        ("an item that is not an object", "pod"),
        ("a spec that is a number", {"metadata": {"name": "p"}, "spec": 5}),
        ("metadata that is a list", {"metadata": [], "spec": {"nodeName": "n"}}),
        ("containers that are a string", {"spec": {"containers": "c", "nodeName": "n"}}),
    ],
)
def test_a_page_the_narrow_shapes_refuse_is_cut_the_general_way(what: str, item: Any) -> None:
    fine = {"metadata": {"name": "ok", "namespace": "ml"}, "spec": {"nodeName": "n"}}
    body = page_of([fine, item])
    assert decode_pod_page(body) is None, what
    try:
        expected: Any = cut_whole(body)
    except Exception as exc:  # the general way's own refusal, unchanged
        with pytest.raises(type(exc)):
            cutting.pod_records_page(body)
    else:
        assert cutting.pod_records_page(body) == expected


@pytest.mark.parametrize(
    ("what", "item"),
    [
        ("owner references that are an empty object", {"metadata": {"ownerReferences": {}}}),
        ("labels written null", {"metadata": {"labels": None}}),
        ("annotations written null", {"metadata": {"annotations": None, "name": "a"}}),
        ("a container's resources written null", {"spec": {"containers": [{"resources": None}]}}),
        ("a sidecar's policy a number", {"spec": {"initContainers": [{"restartPolicy": 5}]}}),
        ("an affinity written null", {"spec": {"affinity": None, "nodeName": "n"}}),
        ("an empty affinity", {"spec": {"affinity": {}, "nodeName": "n"}}),
        ("overhead written null", {"spec": {"overhead": None, "nodeName": "n"}}),
    ],
)
def test_a_part_kept_raw_and_oddly_written_is_judged_as_the_whole_decode_judges_it(
    what: str, item: Obj
) -> None:
    item["spec"] = {"nodeName": "gpu-node-01", **(item.get("spec") or {})}
    body = page_of([item])
    assert decode_pod_page(body) is not None, what
    assert cutting.pod_records_page(body) == cut_whole(body), what


@pytest.mark.parametrize("body", [b'{"items":[{"metadata":', b"not json", b'{"items":[1,]}'])
def test_a_broken_page_fails_as_the_general_decode_does(body: bytes) -> None:
    with pytest.raises(ValueError):
        cut_whole(body)
    with pytest.raises(ValueError):
        cutting.pod_records_page(body)


def test_an_empty_answer_cuts_to_an_empty_page() -> None:
    assert cutting.pod_records_page(b"") == cut_whole(b"")
    assert cutting.pod_records_page(page_of([], token=None)) == SlimPage(None, "1234", [])


@st.composite
def metrics_items(draw: st.DrawFn) -> Any:
    """A pod metrics item as metrics-server writes it, or now and then one that is not."""
    if draw(st.integers(0, 30)) == 0:  # not an object: the general way refuses or reads it
        return draw(st.sampled_from(["x", 3, None]))
    containers = [
        {
            "name": draw(names),
            "usage": {"cpu": "120m", "memory": draw(quantities)},
            "window": "15s",
        }
        for _ in range(draw(st.integers(0, 3)))
    ]
    item: Obj = {
        "metadata": {
            "name": draw(names),
            "namespace": draw(names),
            "labels": {"app": "x"},
            "creationTimestamp": "2026-01-05T08:00:00Z",
        },
        "timestamp": "2026-01-05T08:00:00Z",
        "window": "15s",
        "containers": containers,
    }
    if draw(st.integers(0, 10)) == 0:
        item["containers"] = draw(st.sampled_from([None, [{"usage": None}], [{}]]))
    return item


def reduce_whole(body: bytes) -> Any:
    """The metrics answer walked by the general decoder: what was reduced before."""
    from bot.kube.walking import ListWalker

    return cutting._reduce_metrics(cutting.stepped(ListWalker(), body, final=True))


@settings(max_examples=200, deadline=None)
@given(st.lists(metrics_items(), max_size=40), st.integers(1, 4000))
def test_a_metrics_answer_in_any_pieces_reduces_as_the_general_walk_does(
    items: list[Any], piece: int
) -> None:
    body = json.dumps({"kind": "PodMetricsList", "metadata": {}, "items": items}).encode()
    try:
        expected = reduce_whole(body)
    except Exception as exc:  # the general walk's own refusal, unchanged
        with pytest.raises(type(exc)):
            cutting.reduce_metrics_page(body)
        return
    assert cutting.reduce_metrics_page(body) == expected
    stream = 7
    got = [
        cutting.reduce_metrics_piece(stream, body[at : at + piece], final=at + piece >= len(body))
        for at in range(0, len(body), piece)
    ]
    assert [u for p in got for u in p.usage()] == list(expected.usage())


def test_a_run_of_metrics_items_keeps_only_what_the_working_set_reads() -> None:
    from bot.kube.podpages import decode_metrics_run

    run = json.dumps(
        [
            {
                "metadata": {"name": "p", "namespace": "ml", "labels": {"a": "b"}},
                "timestamp": "t",
                "containers": [{"name": "c", "usage": {"memory": "1Gi", "cpu": "1"}}],
            }
        ]
    )
    assert decode_metrics_run(run) == [
        {
            "metadata": {"name": "p", "namespace": "ml"},
            "containers": [{"usage": {"memory": "1Gi", "cpu": "1"}}],
        }
    ]
    assert decode_metrics_run('[{"metadata": 5}]') is None
    assert decode_metrics_run("[{") is None
