"""Cgroup paths are attributed by segment for every driver, runtime and namespace view."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.collectors import cgroups
from bot.collectors.gaps import GapLog

UID = "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
UND = UID.replace("-", "_")
HEX = "0123456789abcdef" * 4


@pytest.mark.parametrize(
    ("path", "pod", "qos", "cid", "prefix"),
    [
        (f"/kubepods/burstable/pod{UID}/{HEX}", UID, "burstable", HEX, None),
        (f"/kubepods/besteffort/pod{UID}/crio-{HEX}", UID, "besteffort", HEX, "crio"),
        (f"/kubepods/pod{UID}/{HEX}", UID, "guaranteed", HEX, None),
        (
            f"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UND}.slice/cri-containerd-{HEX}.scope",
            UID,
            "burstable",
            HEX,
            "cri-containerd",
        ),
        (
            f"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{UND}.slice/crio-{HEX}.scope",
            UID,
            "besteffort",
            HEX,
            "crio",
        ),
        (
            f"/kubepods.slice/kubepods-pod{UND}.slice/docker-{HEX}.scope",
            UID,
            "guaranteed",
            HEX,
            "docker",
        ),
        (
            f"/../../../kubepods.slice/kubepods-pod{UND}.slice/cri-containerd-{HEX}.scope",
            UID,
            "guaranteed",
            HEX,
            "cri-containerd",
        ),
        (
            f"/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod{UND}.slice",
            UID,
            None,
            None,
            None,
        ),
        (f"/kubepods/burstable/pod{UID}/crio-conmon-{HEX}", UID, "burstable", None, None),
        ("/system.slice/kubelet.service", None, None, None, None),
        ("/process_api/2bdfc6362f18346cf13865ac7f02fc4d", None, None, None, None),
        (f"/docker/{HEX}", None, None, HEX, None),
        ("/", None, None, None, None),
    ],
)
def test_pod_and_container_are_found_by_path_segment(
    path: str, pod: str | None, qos: str | None, cid: str | None, prefix: str | None
) -> None:
    kube = cgroups.parse_kube_path(path)
    assert (kube.pod_uid, kube.container_id, kube.runtime_prefix) == (pod, cid, prefix)
    if qos is not None:
        assert kube.qos == qos


def test_kind_nested_slices_give_qos_from_their_own_names() -> None:
    # kind prefixes every name with "kubelet-"; QoS is not recognised there, only the pod
    path = f"/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-pod{UND}.slice"
    assert cgroups.parse_kube_path(path).pod_uid == UID


@given(st.text())
def test_path_parser_accepts_any_text(path: str) -> None:
    kube = cgroups.parse_kube_path(path)
    assert kube.pod_uid is None or len(kube.pod_uid) in (32, 36)


@pytest.mark.parametrize(
    ("text", "limit", "valid"),
    [
        ("max\n", None, True),
        ("8589934592\n", 8589934592, True),
        ("9223372036854771712\n", None, True),  # v1 "unlimited"
        ("", None, False),
        ("-1\n", None, False),
        ("12 kB", None, False),
    ],
)
def test_limits_distinguish_no_limit_from_garbage(
    text: str, limit: int | None, valid: bool
) -> None:
    assert cgroups.parse_limit(text) == (limit, valid)


@given(st.text())
def test_limit_stat_and_int_parsers_accept_any_text(text: str) -> None:
    cgroups.parse_limit(text)
    assert all(v >= 0 for v in cgroups.parse_memory_stat(text).values())
    value = cgroups.parse_int(text)
    assert value is None or value >= 0


def test_memory_stat_is_keyed_not_ordered() -> None:
    assert cgroups.parse_memory_stat("file 2\nanon 1\nbroken\nx y\n") == {"file": 2, "anon": 1}


def test_unreadable_cgroup_files_become_gaps(tmp_path: Path) -> None:
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "memory.current").write_text("garbage")
    gaps = GapLog()
    figures = cgroups.read_cgroup_memory(str(tmp_path), "/c", version=2, gaps=gaps)
    assert figures["usage_bytes"] is None and figures["limit_bytes"] is None
    assert {g["source"] for g in gaps.items} == {
        "cgroup:/c/memory.current",
        "cgroup:/c/memory.max",
        "cgroup:/c/memory.stat",
    }


def test_version_detection_prefers_the_unified_mount(tmp_path: Path) -> None:
    assert cgroups.detect_version(str(tmp_path)) is None
    (tmp_path / "sys/fs/cgroup/memory").mkdir(parents=True)
    assert cgroups.detect_version(str(tmp_path)) == 1
    (tmp_path / "sys/fs/cgroup/cgroup.controllers").write_text("memory\n")
    assert cgroups.detect_version(str(tmp_path)) == 2


#: pieces a pod segment or a container leaf is built from, near misses included
_PIECES = st.sampled_from(
    [
        "pod",
        "-pod",
        "kubepods-",
        "burstable-",
        ".slice",
        ".scope",
        "\n",
        "-",
        "_",
        "crio-",
        "docker-",
        "cri-containerd-",
        "cri-",
        "0123",
        "abcd",
        "89ef",
        "0123456789abcdef" * 4,
        UID,
        UND,
        UID.upper(),
        "g",
        "x",
    ]
)
_SEGMENTS = st.one_of(
    st.lists(_PIECES, max_size=12).map("".join),
    st.text(alphabet="0123456789abcdefpod-_.slicescope\nxg", max_size=80),
)


@given(_SEGMENTS)
def test_a_pod_segment_is_read_by_hand_exactly_as_its_regular_expression_reads_it(
    segment: str,
) -> None:
    import re

    match = re.search(cgroups.POD_PATTERN, segment)
    assert cgroups.pod_uid_of(segment) == (match.group(1) if match else None)


@given(_SEGMENTS)
def test_a_container_leaf_is_read_by_hand_exactly_as_its_regular_expression_reads_it(
    leaf: str,
) -> None:
    import re

    match = re.match(cgroups.CONTAINER_PATTERN, leaf)
    assert cgroups.container_of(leaf) == (match.group(1, 2) if match else None)


@pytest.mark.parametrize(
    ("segment", "uid"),
    [
        (f"pod{UID}", UID),
        (f"kubepods-burstable-pod{UND}.slice", UND),
        (f"pod{UID.replace('-', '')}", UID.replace("-", "")),
        (f"pod{UID}\n", UID),  # ``$`` matches before a last newline
        (f"xpod{UID}", None),  # "pod" must start the segment or follow a dash
        (f"pod{UID}.slicex", None),
        (f"pod{UID[:-1]}", None),
        (f"pod{UID.upper()}", None),
        ("pod", None),
        ("", None),
    ],
)
def test_a_pod_segment_gives_its_uid_as_written(segment: str, uid: str | None) -> None:
    assert cgroups.pod_uid_of(segment) == uid


@given(st.binary() | st.sampled_from([b"a\r\nb\rc\n", b"\r", b"\xff\r\n\xfe", b"\xe2\x82"]))
def test_a_cgroup_file_is_read_as_text_mode_open_reads_it(data: bytes) -> None:
    """Read without io objects, a file's text is still what ``open(...).read()`` gives:
    undecodable bytes replaced, ``\\r\\n`` and a lone ``\\r`` made ``\\n``."""
    with tempfile.TemporaryDirectory() as folder:
        path = f"{folder}/memory.stat"
        with open(path, "wb") as fh:
            fh.write(data)
        with open(path, encoding="utf-8", errors="replace") as fh:
            assert cgroups._read(path) == fh.read()
        assert cgroups._read(f"{folder}/absent") is None
        assert cgroups._read(folder) is None  # a folder: open() refuses it, read() does here
