"""``/dev/kmsg`` reading and parsing: OOM-killer reports (global, cgroup, legacy) and XIDs.

Record texts follow the kernel's mm/oom_kill.c and memcontrol.c formats and the lines in
cAdvisor's oomparser tests; XID lines the NVIDIA driver's ``NVRM: Xid (PCI:...)`` format.
"""

from __future__ import annotations

import errno
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bot.collectors import kmsg
from bot.collectors.gaps import GapLog

BTIME = 1_796_000_000
NOW = datetime.fromtimestamp(BTIME, UTC) + timedelta(days=3)
UID = "fbdfe8e3-1c87-4ff2-907c-b2ec8e25d012"
CID = "ef807430361e6e82b45db92e2e9b6fbec98f419b12c591e655c1a725565e73a8"

GLOBAL = [
    "4,100,259000000000,-;python invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|"
    "__GFP_COMP), order=0, oom_score_adj=0",
    "4,101,259000000010,-;CPU: 3 PID: 4242 Comm: python Not tainted 6.8.0-45-generic #45-Ubuntu",
    " SUBSYSTEM=cpu",
    "6,102,259000000020,-;oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,"
    "mems_allowed=0-1,global_oom,task_memcg=/kubepods.slice/kubepods-burstable.slice/"
    f"kubepods-burstable-pod{UID.replace('-', '_')}.slice/cri-containerd-{CID}.scope,"
    "task=python,pid=4242,uid=1000",
    "3,103,259000000030,-;Out of memory: Killed process 4242 (python) total-vm:70231040kB, "
    "anon-rss:66060288kB, file-rss:1024kB, shmem-rss:0kB, UID:1000 pgtables:131240kB "
    "oom_score_adj:0",
]
CGROUP = [
    "4,200,259100000000,-;manager invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, "
    "oom_score_adj=999",
    f"6,201,259100000010,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset={CID},"
    f"mems_allowed=0,oom_memcg=/kubepods/burstable/pod{UID}/{CID},"
    f"task_memcg=/kubepods/burstable/pod{UID}/{CID},task=manager,pid=966,uid=0",
    "3,202,259100000020,-;Memory cgroup out of memory: Killed process 966 (manager) "
    "total-vm:1460016kB, anon-rss:1414008kB, file-rss:4kB, shmem-rss:0kB, UID:0 "
    "pgtables:2900kB oom_score_adj:999",
]
LEGACY = [
    "4,300,259200000000,-;memorymonster invoked oom-killer: gfp_mask=0xd0, order=0, "
    "oom_score_adj=0",
    "6,301,259200000010,-;Task in /mem2 killed as a result of limit of /mem2",
    "3,302,259200000020,-;Memory cgroup out of memory: Kill process 13536 (memorymonster) "
    "score 996 or sacrifice child",
    "3,303,259200000030,-;Killed process 13536 (memorymonster) total-vm:33558652kB, "
    "anon-rss:920kB, file-rss:452kB",
]
XIDS = [
    "4,400,259300000000,-;NVRM: Xid (PCI:0000:3a:00): 79, pid='<unknown>', name=<unknown>, "
    "GPU has fallen off the bus.",
    " SUBSYSTEM=pci",
    " DEVICE=+pci:0000:3a:00.0",
    "4,401,259300500000,-;NVRM: Xid (PCI:0000:18:00): 13, pid=1896, name=python, Graphics SM "
    "Warp Exception on (GPC 7, TPC 0, SM 1): Out Of Range Address",
    "4,402,259301000000,-;NVRM: Xid (PCI:0000:5d:00): 63, Row Remapper: New row marked for "
    "remapping, reset gpu to activate.",
]
GPUS = [
    {"index": 0, "uuid": "GPU-zero", "pci_bus_id": "00000000:18:00.0"},
    {"index": 2, "uuid": "GPU-two", "pci_bus_id": "00000000:3A:00.0"},
]


def _host(tmp_path: Path, lines: list[str], *, btime: int | None = BTIME) -> str:
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "kmsg").write_text("\n".join(lines) + "\n")
    (tmp_path / "proc").mkdir()
    if btime is not None:
        (tmp_path / "proc" / "stat").write_text(f"cpu  1 2 3\nbtime {btime}\n")
    return str(tmp_path)


def test_the_global_oom_killer_is_told_from_the_summary_and_the_killed_line(
    tmp_path: Path,
) -> None:
    doc = kmsg.read_kernel_log(_host(tmp_path, GLOBAL), now=NOW, gpus=[], gaps=GapLog())
    assert doc is not None
    (kill,) = doc["oom_kills"]
    assert kill["scope"] == "node" and kill["constraint"] == "CONSTRAINT_NONE"
    assert (kill["comm"], kill["pid"], kill["uid"]) == ("python", 4242, 1000)
    assert kill["anon_rss_bytes"] == 66060288 * 1024 and kill["file_rss_bytes"] == 1024 * 1024
    assert (kill["pod_uid"], kill["container_id"]) == (UID, CID)
    assert kill["oom_memcg"] is None and kill["invoked_by"] == "python"
    expected = datetime.fromtimestamp(BTIME, UTC) + timedelta(microseconds=259000000030)
    assert datetime.fromisoformat(kill["at"]) == expected


def test_a_cgroup_kill_keeps_the_cgroup_whose_limit_was_hit(tmp_path: Path) -> None:
    doc = kmsg.read_kernel_log(_host(tmp_path, CGROUP), now=NOW, gpus=[], gaps=GapLog())
    assert doc is not None
    (kill,) = doc["oom_kills"]
    assert kill["scope"] == "cgroup" and kill["comm"] == "manager" and kill["pid"] == 966
    assert kill["oom_memcg"] == f"/kubepods/burstable/pod{UID}/{CID}"
    assert (kill["pod_uid"], kill["container_id"]) == (UID, CID)


def test_pre_5_0_kernels_report_without_a_summary_line(tmp_path: Path) -> None:
    doc = kmsg.read_kernel_log(_host(tmp_path, LEGACY), now=NOW, gpus=[], gaps=GapLog())
    assert doc is not None
    (kill,) = doc["oom_kills"]
    assert (kill["scope"], kill["pid"], kill["comm"]) == ("cgroup", 13536, "memorymonster")
    assert kill["oom_memcg"] == "/mem2" and kill["anon_rss_bytes"] == 920 * 1024


@pytest.mark.parametrize(
    "comm", ["foo", "python3.4", "foo-bar", "Plex Media Server", "[", "()", '"with quotes"']
)
def test_process_names_with_odd_characters_survive(comm: str) -> None:
    line = (
        f"3,1,5,-;Out of memory: Killed process 1234 ({comm}) total-vm:1460016kB, "
        "anon-rss:1414008kB, file-rss:4kB, shmem-rss:0kB"
    )
    kills, _ = kmsg.parse_events(kmsg.parse_records(line))
    assert [(k["pid"], k["comm"]) for k in kills] == [(1234, comm)]


def test_xids_are_mapped_to_their_gpu_by_pci_address(tmp_path: Path) -> None:
    gaps = GapLog()
    doc = kmsg.read_kernel_log(_host(tmp_path, XIDS), now=NOW, gpus=GPUS, gaps=gaps)
    assert doc is not None
    got = [(x["code"], x["gpu_index"], x["gpu_uuid"], x["pid"], x["process"]) for x in doc["xids"]]
    assert got == [
        (79, 2, "GPU-two", None, None),
        (13, 0, "GPU-zero", 1896, "python"),
        (63, None, None, None, None),
    ]
    assert doc["xids"][0]["message"] == "GPU has fallen off the bus."
    assert doc["xids"][2]["pci_bus_id"] == "0000:5d:00"
    assert [g["source"] for g in gaps.items] == ["kmsg:xid:0000:5d:00"]


def test_records_older_than_the_window_are_dropped(tmp_path: Path) -> None:
    lines = GLOBAL + XIDS
    newest = datetime.fromtimestamp(BTIME, UTC) + timedelta(microseconds=259301000000)
    doc = kmsg.read_kernel_log(
        _host(tmp_path, lines),
        now=newest + timedelta(seconds=10),
        gpus=GPUS,
        gaps=GapLog(),
        window_s=200,
    )
    assert doc is not None
    assert doc["oom_kills"] == [] and [x["code"] for x in doc["xids"]] == [79, 13, 63]
    assert doc["records_read"] == 7


def test_escaped_bytes_in_a_message_are_decoded() -> None:
    records = kmsg.parse_records("6,1,2,-;caf\\xc3\\xa9 \\x5c done\n")
    assert records == [(1, 2, "café \\ done")]


def test_without_btime_the_records_are_kept_with_no_time_and_a_gap(tmp_path: Path) -> None:
    gaps = GapLog()
    doc = kmsg.read_kernel_log(_host(tmp_path, GLOBAL, btime=None), now=NOW, gpus=[], gaps=gaps)
    assert doc is not None and doc["oom_kills"][0]["at"] is None
    assert [g["source"] for g in gaps.items] == ["procfs:/proc/stat"]


def _refusing(code: int):  # type: ignore[no-untyped-def]
    def opener(path: str, flags: int) -> int:
        raise OSError(code, os.strerror(code), path)

    return opener


@pytest.mark.parametrize(
    ("restrict", "cap_eff", "blames_cap_syslog"),
    [
        ("1", "0000000000000000", True),  # uid 65534: SYSLOG in the bounding set only
        ("1", "0000000400000000", False),  # CAP_SYSLOG effective: only the device cgroup
        ("0", "0000000000000000", False),  # no restriction: only the device cgroup
    ],
)
def test_a_refused_kmsg_is_a_gap_naming_only_the_causes_that_hold(
    tmp_path: Path, restrict: str, cap_eff: str, blames_cap_syslog: bool
) -> None:
    root = _host(tmp_path, GLOBAL)
    (tmp_path / "proc" / "sys" / "kernel").mkdir(parents=True)
    (tmp_path / "proc" / "sys" / "kernel" / "dmesg_restrict").write_text(f"{restrict}\n")
    status = tmp_path / "self-status"
    status.write_text(f"Name:\tgpunode\nCapInh:\t0000000000000000\nCapEff:\t{cap_eff}\n")
    gaps = GapLog()
    doc = kmsg.read_kernel_log(
        root,
        now=NOW,
        gpus=[],
        gaps=gaps,
        opener=_refusing(errno.EPERM),
        status_path=str(status),
    )
    assert doc is None
    (gap,) = gaps.items
    assert gap["source"] == "kmsg:/dev/kmsg"
    assert "(EPERM)" in gap["reason"] and "only to privileged containers" in gap["reason"]
    assert ("CAP_SYSLOG" in gap["reason"]) is blames_cap_syslog
    assert "grant CAP_SYSLOG" not in gap["reason"]  # the Job already asks for it
    assert "node-problem-detector" in gap["reason"]


def test_a_missing_kmsg_is_a_gap_that_says_to_mount_it(tmp_path: Path) -> None:
    gaps = GapLog()
    assert kmsg.read_kernel_log(str(tmp_path), now=NOW, gpus=[], gaps=gaps) is None
    assert "mount the host's /dev/kmsg" in gaps.items[0]["reason"]


@pytest.mark.skipif(not os.access("/dev/kmsg", os.R_OK), reason="no readable /dev/kmsg here")
def test_the_live_kernel_log_reads_to_the_end_without_blocking() -> None:
    gaps = GapLog()
    doc = kmsg.read_kernel_log("", now=datetime.now(UTC), gpus=[], gaps=gaps)
    if doc is None:  # e.g. dmesg_restrict=1 without CAP_SYSLOG: then the gap says why
        assert "kmsg:/dev/kmsg" in {g["source"] for g in gaps.items}
        return
    assert doc["records_read"] > 0 and doc["boot_time"] is not None


@pytest.mark.parametrize(
    ("bus_id", "normal"),
    [("00000000:3B:00.0", "0000:3b:00"), ("0000:3b:00", "0000:3b:00"), ("garbage", None)],
)
def test_pci_addresses_are_normalised_to_domain_bus_device(bus_id: str, normal: str | None) -> None:
    assert kmsg.normalize_pci(bus_id) == normal


def test_collect_maps_an_xid_to_the_gpu_the_fake_nvml_lists_at_that_pci_address(
    tmp_path: Path,
) -> None:
    from bot.collectors.bundle import collect
    from gpunode_sandbox.fake_nvml import FakeNvml

    root = _host(tmp_path, XIDS)
    nvml = FakeNvml.from_spec(
        {
            "devices": [
                {
                    "index": i,
                    "uuid": f"GPU-{i}",
                    "name": "H100",
                    "memory_total_bytes": 1,
                    "memory_used_bytes": 0,
                }
                for i in range(4)
            ]
        }
    )
    bundle = collect(Path(root), nvml=nvml, now=lambda: NOW)
    assert [g.pci_bus_id for g in bundle.gpus][:3] == [
        "00000000:18:00.0",
        "00000000:2A:00.0",
        "00000000:3A:00.0",
    ]
    assert bundle.kernel_log is not None
    assert [(x.code, x.gpu_index) for x in bundle.kernel_log.xids] == [(79, 2), (13, 0), (63, 3)]


# The log is parsed by hand where a regular expression used to decide, so that a log without
# OOM or XID reports (the usual one) is read without ``import re`` (~5 ms of the Job's
# start-up) and placed on the clock without ``import datetime``. Each hand reading is held to
# the expression it replaces.

_FIELD = st.text(alphabet=st.sampled_from("09x-; \u0663\u00b2"), max_size=3)
_RECORD_TEXT = st.builds(
    lambda fields, tail: ",".join(fields) + tail,
    st.lists(_FIELD, max_size=6),
    st.text(alphabet=st.sampled_from(",;x \r\u00e9"), max_size=4),
)
_ESCAPED_TEXT = st.lists(
    st.sampled_from(["\\x", "\\", "x", "X", "0", "9", "a", "F", "g", " ", "\u00e9", "\u4e2d"]),
    max_size=10,
).map("".join)


@given(_RECORD_TEXT)
@example("6,1,2,-;a message")
@example("6,1,2;no flags field")
@example("6,1,2,-,c=1;with more")
def test_a_record_header_is_read_as_its_expression_reads_it(line: str) -> None:
    match = re.match(kmsg.RECORD_HEADER, line)
    expected = (int(match.group(2)), int(match.group(3)), match.group(5)) if match else None
    assert kmsg.record_header(line) == expected


@given(_ESCAPED_TEXT)
def test_escaped_bytes_are_replaced_as_the_expression_replaces_them(text: str) -> None:
    raw = re.sub(kmsg.ESCAPE, lambda m: chr(int(m.group(1), 16)), text)
    expected = raw.encode("latin-1", "replace").decode("utf-8", "replace")
    assert kmsg._unescape(text) == (expected if "\\x" in text else text)


_PCI_PART = st.text(alphabet=st.sampled_from("0aF"), max_size=9) | st.sampled_from(["g", " ", "."])


@given(st.lists(_PCI_PART, max_size=4).map(":".join))
@example("00000000:3B:00.0")
@example(" 0000:3b:00 ")
@example("000000000:3b:00")
@example("000:3b:00")
def test_a_pci_address_is_read_as_its_expression_reads_it(bus_id: str) -> None:
    match = re.match(kmsg.PCI_ADDRESS, bus_id.strip())
    expected = f"{match[1][-4:]}:{match[2]}:{match[3]}".lower() if match else None
    assert kmsg.normalize_pci(bus_id) == expected


_MESSAGE_WORDS = st.sampled_from(
    [
        "python",
        " invoked oom-killer: ",
        "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null)",
        ",global_oom",
        ",task=python,pid=4242,uid=1000",
        "Task in /a killed as a result of limit of /b",
        "Memory cgroup out of memory: ",
        "Killed process 4242 (python) total-vm:1kB, anon-rss:2kB, file-rss:3kB",
        "NVRM: Xid (PCI:0000:3a:00): 79, ",
        "pid=12, name=x, ",
        ":",
        " ",
    ]
)


@given(st.lists(_MESSAGE_WORDS, max_size=6).map("".join))
def test_no_message_an_expression_matches_is_skipped_before_the_expressions_run(
    message: str,
) -> None:
    p = kmsg._patterns()
    matched = any(
        [
            p.xid.search(message),
            p.invoked.match(message),
            p.summary.match(message),
            p.legacy_task.match(message),
            p.killed.match(message),
        ]
    )
    assert kmsg._candidate(message) or not matched


@given(st.integers(min_value=-62135596800_000_000, max_value=253402300799_999_999))
def test_a_moment_in_microseconds_is_written_as_datetime_isoformat_writes_it(us: int) -> None:
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    assert kmsg.iso_utc_us(us) == (epoch + timedelta(microseconds=us)).isoformat()


def test_the_collectors_clock_in_microseconds_places_records_as_a_datetime_does(
    tmp_path: Path,
) -> None:
    root = _host(tmp_path, GLOBAL + CGROUP + XIDS)
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    cgroup_kill = datetime.fromtimestamp(BTIME, UTC) + timedelta(microseconds=259100000020)
    counts = []
    for late_us in (0, 1):  # the cgroup kill exactly a window (1 s) old, then 1 us older
        moment = cgroup_kill + timedelta(seconds=1, microseconds=late_us)
        moment_us = (moment - epoch) // timedelta(microseconds=1)
        for window in (1, 86400):
            by_us, by_datetime = (
                kmsg.read_kernel_log(root, now=now, gpus=GPUS, gaps=GapLog(), window_s=window)
                for now in (moment_us, moment)
            )
            assert by_us == by_datetime and by_us is not None
            counts.append(len(by_us["oom_kills"]))
    assert counts == [1, 2, 0, 2]


def test_a_btime_datetime_cannot_place_is_a_gap_not_a_crash(tmp_path: Path) -> None:
    gaps = GapLog()
    doc = kmsg.read_kernel_log(_host(tmp_path, GLOBAL, btime=10**20), now=NOW, gpus=[], gaps=gaps)
    assert doc is not None and doc["boot_time"] is None and doc["oom_kills"][0]["at"] is None
    assert [g["source"] for g in gaps.items] == ["procfs:/proc/stat"]


@given(
    st.binary(max_size=40)
    | st.lists(st.sampled_from([b"\r", b"\n", b"a", b"\xff", b" "])).map(b"".join)
)
@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_small_file_is_read_as_ascii_text_as_open_reads_it(tmp_path: Path, raw: bytes) -> None:
    """/proc/stat, our own status and dmesg_restrict are read without ``open``'s io stack:
    same text, newlines translated, undecodable bytes replaced or refused alike."""
    path = tmp_path / "file"
    path.write_bytes(raw)
    with open(path, encoding="ascii", errors="replace") as fh:
        assert kmsg.ascii_text(str(path), errors="replace") == fh.read()
    try:
        with open(path, encoding="ascii") as fh:
            expected: str | type[Exception] = fh.read()
    except UnicodeDecodeError:
        expected = UnicodeDecodeError
    try:
        got: str | type[Exception] = kmsg.ascii_text(str(path))
    except UnicodeDecodeError:
        got = UnicodeDecodeError
    assert got == expected
