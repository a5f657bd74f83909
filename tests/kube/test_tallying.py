"""The fleet read's page machinery: the ``continue`` token is read from a page's metadata
without decoding its items (so the next page is fetched while this one decodes), a page
shaped otherwise falls back to the full decode, and the decoder gives the same tally in its
own process as on the calling thread."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from bot.kube import decoding
from bot.kube.decoding import PageDecoder
from bot.kube.gateway import Gateway
from bot.kube.pages import list_token
from bot.kube.tallying import read_fleet
from gpunode_sandbox.kubesim import KubeSim
from tests.traced import peak_of


def test_the_token_is_read_from_metadata_written_before_the_items() -> None:
    body = json.dumps({"kind": "PodList", "metadata": {"continue": "abc"}, "items": [{}]})
    assert list_token(body.encode()) == (True, "abc")
    last = json.dumps({"kind": "PodList", "metadata": {"resourceVersion": "9"}, "items": []})
    assert list_token(last.encode()) == (True, None)


def test_a_page_with_its_items_first_is_not_guessed_at() -> None:
    body = json.dumps({"items": [{"metadata": {"continue": "no"}}], "metadata": {}})
    assert list_token(body.encode()) == (False, None)


async def test_the_decoder_process_and_the_calling_thread_tally_the_same_fleet(
    gateway: tuple[Gateway, KubeSim], monkeypatch: pytest.MonkeyPatch
) -> None:
    gw, _ = gateway
    here, there = PageDecoder(use_process=False), PageDecoder()
    monkeypatch.setattr(decoding, "INLINE_BYTES", 0)  # the seed's pages are small
    try:
        a = await asyncio.to_thread(read_fleet, gw.transport, here)
        b = await asyncio.to_thread(read_fleet, gw.transport, there)
        used_process = there.pid is not None
    finally:
        there.close()
    assert used_process
    assert a.pods == b.pods > 0
    assert a.room() == b.room() and a.loads(None) == b.loads(None)


def _walked(body: bytes) -> dict[str, object]:
    from bot.kube.walking import walk_list

    out: dict[str, object] = {}
    items: list[object] = []
    for key, value in walk_list(body):
        if key == "items":
            items.append(value)
        else:
            out[key] = value
    return {**out, "items": items} if items else out


def test_a_list_answer_walked_item_by_item_is_the_answer_decoded_whole() -> None:
    import json

    answer = {
        "kind": "PodMetricsList",
        "apiVersion": "metrics.k8s.io/v1beta1",
        "metadata": {"resourceVersion": "", "continue": "eyJ2IjoibWV0YSJ9"},
        "items": [
            {"metadata": {"name": f"p{i}", "namespace": "a"}, "items": [1, {"x": "]}"}]}
            for i in range(3)
        ],
    }
    for body in (
        json.dumps(answer).encode(),
        json.dumps(answer, indent=2).encode(),
        json.dumps(answer, separators=(",", ":")).encode(),
        json.dumps({**answer, "items": []}, indent=1).encode(),
        json.dumps({"items": answer["items"], "kind": "X"}).encode(),  # items first
    ):
        expected = json.loads(body)
        if not expected["items"]:
            expected.pop("items")  # an empty list yields no item
        assert _walked(body) == expected


def test_a_body_that_is_not_a_json_object_is_refused_clearly() -> None:
    import pytest

    from bot.kube.walking import walk_list

    for body in (b"[]", b'{"items": [1, 2', b'{"a" 1}'):
        with pytest.raises(ValueError):
            list(walk_list(body))


def test_a_metrics_answer_reduces_to_each_pods_working_set() -> None:
    import json

    from bot.kube.cutting import reduce_metrics_page

    items = [
        {
            "metadata": {"name": f"p{i}", "namespace": f"ns{i % 3}"},
            "containers": [
                {"name": "a", "usage": {"memory": f"{i + 1}Mi", "cpu": "1m"}},
                {"name": "b", "usage": {"memory": "1Ki"}},
            ],
        }
        for i in range(5)
    ]
    body = json.dumps({"metadata": {"continue": "t"}, "items": items}).encode()
    page = reduce_metrics_page(body)
    assert page.token == "t"
    assert dict(page.usage()) == {f"ns{i % 3}/p{i}": (i + 1) * 1024 * 1024 + 1024 for i in range(5)}
    assert list(reduce_metrics_page(b'{"items": []}').usage()) == []


def test_a_list_answer_fed_in_pieces_cut_anywhere_walks_as_the_whole_answer() -> None:
    from bot.kube.walking import ListWalker, walk_list

    answer = {
        "kind": "PodMetricsList",
        "metadata": {"continue": "t0k"},
        "items": [
            {"metadata": {"name": f"p{i}", "namespace": "ä-ns"}, "n": 12345, "x": "]},{"}
            for i in range(3)
        ],
        "count": 678,
    }
    for body in (json.dumps(answer).encode(), json.dumps(answer, indent=2).encode()):
        whole = list(walk_list(body))
        for cut in range(1, len(body)):
            walker = ListWalker()
            fed = walker.feed(body[:cut]) + walker.feed(body[cut:], final=True)
            assert fed == whole, cut
        byte_by_byte = ListWalker()
        fields = [f for i in range(len(body)) for f in byte_by_byte.feed(body[i : i + 1])]
        assert fields + byte_by_byte.feed(b"", final=True) == whole


def test_items_holding_what_looks_like_an_item_boundary_walk_as_the_whole_answer() -> None:
    """Whole runs of items are decoded at once up to the last ``}, {"metadata"``: text that
    only looks like such a boundary (in a string, or a nested value beginning so) still
    gives each item as it is, wherever the answer is cut."""
    from bot.kube.walking import ListWalker, walk_list

    tricky = [
        {"metadata": {"name": "a", "namespace": 'x}, {"metadata": "y'}},
        {"metadata": {"name": "b"}, "spec": [{"k": 1}, {"metadata": {"name": "nested"}}]},
        {"metadata": {"name": "c"}, "note": '}, {"metadata": {}}, {"metadata"'},
        {"metadata": {"name": "d"}},
    ]
    answer = {"kind": "PodMetricsList", "metadata": {}, "items": tricky}
    for body in (
        json.dumps(answer).encode(),
        json.dumps(answer, separators=(",", ":")).encode(),
        json.dumps(answer, indent=1).encode(),
    ):
        whole = list(walk_list(body))
        assert [v for k, v in whole if k == "items"] == tricky
        for cut in range(1, len(body)):
            walker = ListWalker()
            assert walker.feed(body[:cut]) + walker.feed(body[cut:], final=True) == whole, cut


def test_a_broken_item_among_whole_ones_is_refused_clearly() -> None:
    from bot.kube.walking import ListWalker, walk_list

    body = b'{"items": [{"metadata": 1}, {"metadata": tru}, {"metadata": 3}, {"metadata": 4}]}'
    with pytest.raises(ValueError, match="not JSON"):
        list(walk_list(body))
    walker = ListWalker()
    assert walker.feed(body[:40]) == [("items", {"metadata": 1})]
    with pytest.raises(ValueError, match="not JSON"):
        walker.feed(body[40:], final=True)


def test_an_answer_that_ends_early_is_refused_clearly() -> None:
    from bot.kube.walking import ListWalker

    walker = ListWalker()
    walker.feed(b'{"items": [{"a": 1}, {"b"')
    with pytest.raises(ValueError, match="ended early"):
        walker.feed(b"", final=True)
    with pytest.raises(ValueError, match="ended early"):
        ListWalker().feed(b'{"items": [{"a": 1}', final=True)


async def test_a_metrics_answer_streamed_in_small_pieces_gives_the_same_working_sets(
    gateway: tuple[Gateway, KubeSim], monkeypatch: pytest.MonkeyPatch
) -> None:
    from bot.kube import cutting, tallying

    gw, _ = gateway
    whole = await gw.gpu_node_loads()
    monkeypatch.setattr(tallying, "PIECE", 97)  # the seed's answer in dozens of pieces
    own = gw._decoder
    for decoder in (PageDecoder(use_process=False), PageDecoder()):
        gw._decoder = decoder
        try:
            streamed = await gw.gpu_node_loads()
            assert cutting._WALKERS == {}  # nothing left behind here
            assert (decoder.pid is not None) == decoder._slot.usable  # where it ran
        finally:
            gw._decoder = own
            decoder.close()
        assert [n.working_set_bytes for n in streamed] == [n.working_set_bytes for n in whole]
    assert all(n.working_set_bytes for n in whole)


def test_a_pods_working_set_is_read_as_its_metrics_model_reads_it() -> None:
    from bot.kube.objects import parse_pod_metrics, pod_working_set

    good: list[dict[str, Any]] = [
        {"metadata": {"name": "p", "namespace": "n"}, "containers": []},
        {"metadata": {"name": "p"}, "containers": [{"usage": {"memory": "1.5Gi"}}, {}]},
        {"containers": [{"usage": {"memory": "100M"}}, {"usage": {"memory": "1Ki"}}]},
    ]
    for item in good:
        m = parse_pod_metrics(item)
        assert pod_working_set(item) == (m.namespace, m.name, m.memory_working_set_bytes)
    bad: list[dict[str, Any]] = [
        {"metadata": {"name": None, "namespace": "n"}},
        {"metadata": {"name": "p", "namespace": 3}},
        {"metadata": {"name": "p"}, "containers": [{"usage": {"memory": "lots"}}]},
    ]
    for item in bad:
        with pytest.raises(ValueError) as model:
            parse_pod_metrics(item)
        with pytest.raises(ValueError) as lean:
            pod_working_set(item)
        assert type(lean.value) is type(model.value)


def _metrics_answer(pods: int) -> bytes:
    """A pod metrics list as metrics-server writes it (metadata first, one container each)."""
    items = [
        {
            "metadata": {"name": f"svc-{i // 200:04d}-abcde-{i:05d}", "namespace": "team-01"},
            "timestamp": "2026-01-05T12:00:00Z",
            "window": "30s",
            "containers": [{"name": "app", "usage": {"cpu": "250m", "memory": "600Mi"}}],
        }
        for i in range(pods)
    ]
    return json.dumps({"kind": "PodMetricsList", "metadata": {}, "items": items}).encode()


def test_a_metrics_answer_is_reduced_a_step_at_a_time_in_the_decoder() -> None:
    """A 1 MiB piece of metrics (about 3,000 pods) was decoded whole in the decoder, its
    objects all held at once (counted in the bot's process tree, issue #25's 300 MiB)."""
    from bot.kube.cutting import reduce_metrics_page

    body = _metrics_answer(6000)
    assert len(body) > 2**20
    page, peak = peak_of(lambda: reduce_metrics_page(body))
    assert len(page.keys.split("\n")) == 6000
    assert set(dict(page.usage()).values()) == {600 * 2**20}
    print(f"reducing {len(body) / 2**20:.1f} MiB of metrics peaked at {peak / 2**20:.2f} MiB")
    assert peak < 2 * 2**20 + len(body), peak  # the body's own text, and a step's objects
