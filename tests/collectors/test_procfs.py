"""procfs parsers are total (any input, no exception) and right on real formats."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from bot.collectors import procfs
from bot.collectors.gaps import GapLog
from bot.core.model.evidence import MemInfo, MemoryPressure

MEMINFO = (
    "MemTotal:  1000 kB\nMemFree:  100 kB\nMemAvailable: 600 kB\nHugePages_Total: 4\nZswap: 8 kB\n"
)


def test_meminfo_is_converted_to_bytes_and_unknown_keys_kept() -> None:
    fields, problems = procfs.parse_meminfo(MEMINFO)
    assert problems == [] and fields is not None
    info = MemInfo(**fields)
    assert (info.mem_total_bytes, info.mem_available_bytes) == (1024000, 614400)
    assert info.hugepages_total == 4 and info.other == {"Zswap": 8192}


@pytest.mark.parametrize(
    ("text", "usable", "problem"),
    [
        ("MemTotal:  1000 kB\nMemFree:  100 kB\nMemAvail", True, "truncated"),
        ("MemTotal:  1000 kB\nMemFr", False, "missing"),
        ("MemTotal: lots kB\nMemFree: 1 kB\n", False, "unparsable"),
        ("", False, "missing"),
        ("\x00\xff garbage\n", False, "unparsable"),
    ],
)
def test_bad_meminfo_is_reported_not_raised(text: str, usable: bool, problem: str) -> None:
    fields, problems = procfs.parse_meminfo(text)
    assert (fields is not None) is usable
    assert any(problem in p[1] for p in problems)


@given(st.text())
def test_meminfo_parser_accepts_any_text(text: str) -> None:
    fields, _ = procfs.parse_meminfo(text)
    if fields is not None:
        MemInfo(**fields)


@given(
    st.dictionaries(
        st.sampled_from(sorted(procfs.MEMINFO_FIELDS)), st.integers(0, 2**40), min_size=1
    )
)
def test_meminfo_round_trips_any_kernel_values(values: dict[str, int]) -> None:
    text = "".join(f"{k}: {v} kB\n" for k, v in values.items())
    text = "MemTotal: 9 kB\nMemFree: 1 kB\n" + text
    fields, problems = procfs.parse_meminfo(text)
    assert problems == [] and fields is not None
    for key, value in values.items():
        assert fields[procfs.MEMINFO_FIELDS[key]] == value * 1024


def test_pressure_reads_some_and_full() -> None:
    text = (
        "some avg10=1.50 avg60=0.25 avg300=0.00 total=42\nfull avg10=0.1 avg60=0 avg300=0 total=7\n"
    )
    parsed = procfs.parse_pressure(text)
    assert parsed is not None
    pressure = MemoryPressure(**parsed)
    assert pressure.some.total_us == 42 and pressure.full is not None


def test_pressure_without_full_line_is_fine_and_garbage_is_none() -> None:
    parsed = procfs.parse_pressure("some avg10=0 avg60=0 avg300=0 total=1\n")
    assert parsed is not None and parsed["full"] is None
    assert procfs.parse_pressure("some avg10=x\n") is None


@given(st.text())
def test_pressure_parser_accepts_any_text(text: str) -> None:
    parsed = procfs.parse_pressure(text)
    if parsed is not None:
        MemoryPressure(**parsed)


def test_sockstat_memory_is_tcp_plus_udp_pages() -> None:
    text = (
        "TCP: inuse 1 orphan 0 tw 0 alloc 1 mem 214\nUDP: inuse 0 mem 2\nFRAG: inuse 0 memory 9\n"
    )
    assert procfs.parse_sockstat(text, page_size=4096) == 216 * 4096
    assert procfs.parse_sockstat("sockets: used 3\n", page_size=4096) is None


@given(st.text())
def test_sockstat_parser_accepts_any_text(text: str) -> None:
    value = procfs.parse_sockstat(text, page_size=4096)
    assert value is None or value >= 0


@given(st.binary())
def test_statm_and_cmdline_parsers_accept_any_bytes(data: bytes) -> None:
    rss = procfs.parse_statm_rss(data, page_size=4096)
    assert rss is None or rss >= 0
    assert len(procfs.parse_cmdline(data)) <= 512


def test_non_utf8_cmdline_is_replaced_not_fatal() -> None:
    assert procfs.parse_cmdline(b"vllm\0serve\0\xff\xfe\0") == "vllm serve \ufffd\ufffd"


@given(st.text())
def test_status_and_smaps_parsers_accept_any_text(text: str) -> None:
    status = procfs.parse_status(text)
    assert all(v >= 0 for k, v in status.items() if k != "name")
    rss = procfs.parse_smaps_rollup_rss(text)
    assert rss is None or rss >= 0


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("0::/kubepods.slice/x.scope\n", "/kubepods.slice/x.scope"),
        ("12:pids:/a\n4:memory:/process_api/abc\n0::/\n", "/process_api/abc"),
        ("3:cpu,memory:/k/pod1\n", "/k/pod1"),
        ("0::/../../kubepods/burstable/podX/abc\n", "/../../kubepods/burstable/podX/abc"),
        ("garbage", None),
    ],
)
def test_memory_cgroup_path_is_taken_from_proc_pid_cgroup(text: str, path: str | None) -> None:
    assert procfs.parse_proc_cgroup(text) == path


@given(st.text())
def test_proc_cgroup_parser_accepts_any_text(text: str) -> None:
    procfs.parse_proc_cgroup(text)


def test_a_process_that_exits_mid_scan_is_dropped_without_a_gap(tmp_path: Path) -> None:
    (tmp_path / "77").mkdir()
    (tmp_path / "77" / "statm").write_text("10 5 0 0 0 0 0\n")  # status already gone
    gaps = GapLog()
    kept, seen = procfs.scan_processes(
        str(tmp_path), top=5, always=frozenset(), page_size=4096, gaps=gaps
    )
    assert (kept, seen, gaps.items) == ([], 1, [])


# real layout (mm/slab_common.c), columns squeezed to fit the line length
SLABINFO = """slabinfo - version: 2.1
# name <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables <limit> ...
kmalloc-64 1000 1024 64 64 1 : tunables 0 0 0 : slabdata 16 16 0
dentry 900000 900060 192 21 1 : tunables 0 0 0 : slabdata 42860 42860 0
garbled line
ext4_inode_cache 5000 5010 1080 30 8 : tunables 0 0 0 : slabdata 167 167 0
"""


def test_slabinfo_keeps_the_biggest_caches_in_bytes() -> None:
    caches = procfs.parse_slabinfo(SLABINFO, page_size=4096, top=2)
    assert [c["name"] for c in caches] == ["dentry", "ext4_inode_cache"]
    assert caches[0]["bytes"] == 42860 * 1 * 4096
    assert caches[1]["bytes"] == 167 * 8 * 4096 and caches[1]["objsize_bytes"] == 1080


@given(st.text())
def test_slabinfo_parser_accepts_any_text(text: str) -> None:
    assert isinstance(procfs.parse_slabinfo(text, page_size=4096), list)


@given(
    st.one_of(
        st.text(),
        st.lists(
            st.sampled_from(
                [
                    "MemTotal",
                    "Active(anon)",
                    "Hugepagesize",
                    ":",
                    " ",
                    "\t",
                    "12",
                    "0",
                    "kB",
                    "KB",
                    "٣",
                    "²",
                    "-",
                    "x",
                    "\r",
                    "Key_1",
                ]
            ),
            max_size=10,
        ).map("".join),
    )
)
def test_a_meminfo_line_is_read_by_hand_exactly_as_its_regular_expression_reads_it(
    line: str,
) -> None:
    import re

    match = re.fullmatch(procfs.MEMINFO_LINE, line)
    expected = (match.group(1), int(match.group(2)), match.group(3) is not None) if match else None
    assert procfs.meminfo_line(line) == expected


def test_every_decimal_name_is_a_process_and_nothing_else_is(tmp_path: Path) -> None:
    """Names are listed as bytes (no path encoding per process); a hand-made tree's name
    whose text is decimal in another script still counts, as ``str.isdecimal`` says."""
    for name, resident in (("12", 3), ("\u0663\u0664", 9), ("self", 99), ("1x", 99), ("7", 0)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "statm").write_text(f"100 {resident} 0 0 0 0 0\n")
    ranked, seen = procfs.rank_by_statm(str(tmp_path), page_size=4096, gaps=GapLog())
    assert sorted(ranked, reverse=True) == [(9 * 4096, 34), (3 * 4096, 12), (0, 7)]
    assert seen == 3


def _slabinfo_as_it_was_parsed(text: str, *, page_size: int, top: int) -> list[dict[str, object]]:
    """The parser before it kept only the top caches as dicts: the reference it must match."""
    caches: list[dict[str, object]] = []
    for line in text.splitlines():
        if not line or line.startswith(("slabinfo", "#")):
            continue
        head, _, rest = line.partition(":")
        words = head.split()
        slabdata = rest.rpartition("slabdata")[2].split()
        if len(words) < 6 or not all(w.isdecimal() for w in words[1:6]) or len(slabdata) < 2:
            continue
        if not slabdata[1].isdecimal():
            continue
        caches.append(
            {
                "name": words[0],
                "active_objs": int(words[1]),
                "num_objs": int(words[2]),
                "objsize_bytes": int(words[3]),
                "bytes": int(slabdata[1]) * int(words[5]) * page_size,
            }
        )
    caches.sort(key=lambda c: (-c["bytes"], c["name"]))  # type: ignore[operator]
    return caches[: max(0, top)]


_SLAB_WORD = st.sampled_from(["0", "1", "7", "16", "x", "\u0663", "dentry", "kmalloc-64", ""])
_SLAB_NUMBERS = st.lists(st.sampled_from(["1", "2", "16"]), min_size=5, max_size=6)
_SLAB_LINE = st.builds(
    lambda name, numbers, slabdata, sep: (
        f"{name} {' '.join(numbers)} {sep} tunables 0 0 0 {sep} slabdata {' '.join(slabdata)}"
    ),
    st.sampled_from(["dentry", "kmalloc-64", "a"]),  # few names: ties in size and name
    _SLAB_NUMBERS | st.lists(_SLAB_WORD, max_size=7),  # mostly five or six numbers
    st.lists(st.sampled_from(["1", "2"]), min_size=2, max_size=3) | st.lists(_SLAB_WORD),
    st.sampled_from([":", ":", ";", ": :"]),
)


@given(
    st.lists(_SLAB_LINE | st.sampled_from(["slabinfo - version: 2.1", "# name", ""]), max_size=12),
    st.integers(min_value=-1, max_value=4),
    st.sampled_from([0, 4096]),
)
@example(["bad 1 1 1 1 x : tunables 0 0 0 : slabdata 1 1", "ok 1 1 1 1 1 : slabdata 1 1"], 5, 4096)
def test_slabinfo_keeps_what_the_dict_per_cache_parser_kept(
    lines: list[str], top: int, page_size: int
) -> None:
    text = "\n".join(lines)
    expected = _slabinfo_as_it_was_parsed(text, page_size=page_size, top=top)
    assert procfs.parse_slabinfo(text, page_size=page_size, top=top) == expected


@given(
    st.integers(min_value=-2, max_value=40),
    st.lists(st.tuples(st.integers(0, 4), st.integers(0, 6)), max_size=30),
)
@example(28, [(4096, 1), (4096, 1), (0, 2)])
def test_largest_is_heapqs_nlargest(n: int, pairs: list[tuple[int, int]]) -> None:
    """The ranking's pick of the top pairs, done in heapq's C half, is heapq.nlargest's."""
    import heapq

    assert procfs.largest(n, list(pairs)) == heapq.nlargest(n, pairs)
