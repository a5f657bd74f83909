"""The collector's statm loop in C (``bot/collectors/_statm.c``) gives the Python loop's answer
on any /proc tree: the same processes, the same resident bytes, the same refusals, the same
gaps. It is built wherever a compiler and Python's headers are, and is never required."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.collect import AS_JOB
from bot.collectors import native, procfs
from bot.collectors.gaps import GapLog

REPO = Path(__file__).resolve().parents[2]
NATIVE = procfs.NATIVE_RANK
needs_native = pytest.mark.skipif(
    NATIVE is None, reason=f"bot.collectors._statm is not built here: {native.missing()}"
)

#: names /proc may hold, and names a hand-made tree may: digits (leading zeros, past 64 bits),
#: other ASCII, decimal text in other scripts, other non-ASCII
NAMES = st.one_of(
    st.from_regex(r"[0-9]{1,6}", fullmatch=True),
    st.from_regex(r"0[0-9]{1,3}|[0-9]{19,24}", fullmatch=True),
    st.sampled_from(["self", "thread-self", "1x", "x1", "sys", "12 ", "+5", "-3", "_7"]),
    st.sampled_from(["\u0663\u0664", "\u0967", "\uff11\uff12", "\xe91", "1\u00b2", "\u2163"]),
)
#: what a statm file may hold: the kernel's line, odd spacing, huge fields, any bytes
CONTENTS = st.one_of(
    st.builds(
        lambda a, b, rest: f"{a} {b} {rest}\n".encode(),
        st.integers(0, 10**7),
        st.integers(0, 10**7),
        st.just("0 0 0 0 0"),
    ),
    st.builds(
        lambda sep, b: f"{sep}9{sep}{b}{sep}".encode(),
        st.sampled_from([" ", "\t", "\n", " \x0b\x0c\r ", "  "]),
        st.from_regex(r"[0-9]{1,30}", fullmatch=True),
    ),
    st.binary(max_size=300),
    st.just(b"1 " + b"7" * 400),  # past the single 256-byte read
)
#: a name's entry: a folder with statm, a folder without, a plain file, statm a folder
KINDS = st.sampled_from(["statm", "statm", "statm", "no_statm", "file", "statm_folder"])
TREES = st.dictionaries(NAMES, st.tuples(KINDS, CONTENTS), max_size=25)
PAGES = st.sampled_from([4096, 16384, 65536, 1, 1 << 21, 3])


def plant(root: Path, tree: dict[str, tuple[str, bytes]]) -> None:
    for name, (kind, content) in tree.items():
        entry = root / name
        if kind == "file":
            entry.write_bytes(content)
            continue
        entry.mkdir()
        if kind == "statm":
            (entry / "statm").write_bytes(content)
        elif kind == "statm_folder":
            (entry / "statm").mkdir()


def both(root: Path, page_size: int) -> tuple[tuple[object, ...], tuple[object, ...]]:
    """(C loop, Python loop): each one's ranked pairs (sorted), count and gaps."""
    answers = []
    for loop in (NATIVE, None):
        gaps = GapLog()
        ranked, seen = procfs.rank_by_statm(str(root), page_size=page_size, gaps=gaps, native=loop)
        answers.append((sorted(ranked), seen, gaps.items))
    return answers[0], answers[1]


@needs_native
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=TREES, page_size=PAGES)
def test_the_c_loop_reads_any_tree_as_the_python_loop_does(
    tree: dict[str, tuple[str, bytes]], page_size: int
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        plant(Path(folder), tree)
        c_loop, python_loop = both(Path(folder), page_size)
    assert c_loop == python_loop


@needs_native
def test_the_c_loop_reads_this_machines_own_proc_as_the_python_loop_does() -> None:
    """The live /proc changes between two reads: compare the processes both saw, and only
    those whose resident size is a few pages apart at most (a process's RSS moves)."""
    c_loop, python_loop = both(Path("/proc"), 4096)
    c_rss = {pid: rss for rss, pid in c_loop[0]}  # type: ignore[attr-defined]
    py_rss = {pid: rss for rss, pid in python_loop[0]}  # type: ignore[attr-defined]
    common = c_rss.keys() & py_rss.keys()
    assert len(common) >= 0.9 * max(len(c_rss), len(py_rss))
    assert os.getpid() in common
    moved = [p for p in common if abs(c_rss[p] - py_rss[p]) > 64 * 4096]
    assert len(moved) <= 2, moved


@needs_native
def test_a_folder_that_cannot_be_listed_is_the_same_gap_either_way(tmp_path: Path) -> None:
    c_loop, python_loop = both(tmp_path / "absent", 4096)
    assert c_loop == python_loop
    assert c_loop[:2] == ([], 0) and c_loop[2][0]["code"] == "cannot_list"  # type: ignore[index]


_REFUSED_PROBE = """
import json, sys
sys.path.insert(0, {repo!r})
from bot.collectors import procfs
from bot.collectors.gaps import GapLog
out = []
for loop in (procfs.NATIVE_RANK, None):
    gaps = GapLog()
    ranked, seen = procfs.rank_by_statm({proc!r}, page_size=4096, gaps=gaps, native=loop)
    out.append([sorted(ranked), seen, gaps.items])
print(json.dumps(out))
"""


@needs_native
@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv"
)
def test_statm_files_the_kernel_refuses_are_counted_and_named_the_same_either_way() -> None:
    """Run as the Job's user without capabilities: a process folder it may not enter is a
    refusal, counted in ``seen`` and named in the gap, by both loops."""
    top = Path(tempfile.mkdtemp(prefix="gpunode-refused-"))
    try:
        os.chmod(top, 0o755)
        for pid, resident in (("300", 5), ("301", 7), ("302", 1)):
            (top / pid).mkdir()
            (top / pid / "statm").write_text(f"10 {resident} 0 0 0 0 0\n")
        os.chmod(top / "300", 0o700)
        os.chmod(top / "302", 0o700)
        probe = _REFUSED_PROBE.format(repo=str(REPO), proc=str(top))
        run = subprocess.run(
            [*AS_JOB, sys.executable, "-I", "-S", "-c", probe],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        shutil.rmtree(top)
    assert run.returncode == 0, run.stderr
    c_loop, python_loop = json.loads(run.stdout)
    assert c_loop == python_loop
    assert c_loop[0] == [[7 * 4096, 301]] and c_loop[1] == 3
    assert c_loop[2][0]["params"] == {"count": 2, "pids": [300, 302]}


def test_where_a_compiler_and_pythons_headers_are_the_c_loop_is_built_and_used() -> None:
    if native.missing() is not None:
        pytest.skip(f"this machine cannot build it: {native.missing()}")
    assert NATIVE is not None, "make setup builds bot.collectors._statm: run it"
    assert native.target().stat().st_mtime >= native.SOURCE.stat().st_mtime, "stale: make setup"


def test_gpunode_native_0_turns_the_c_loop_off() -> None:
    probe = "from bot.collectors import procfs; print(procfs.NATIVE_RANK is None)"
    env = {**os.environ, "PYTHONPATH": str(REPO), "GPUNODE_NATIVE": "0"}
    run = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60
    )
    assert run.stdout.strip() == "True", run.stderr


def build_with(cc: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """``python -m bot.collectors.native OUT`` with ``CC=cc``."""
    return subprocess.run(
        [sys.executable, "-m", "bot.collectors.native", str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "CC": str(cc), "PYTHONPATH": str(REPO)},
        timeout=60,
    )


def test_a_machine_without_a_compiler_builds_nothing_and_says_why(tmp_path: Path) -> None:
    run = build_with(tmp_path / "no-such-cc", tmp_path / "out")
    assert run.returncode == 0 and "no C compiler" in run.stdout
    assert not (tmp_path / "out").exists()


def test_a_compiler_that_fails_is_an_error_and_leaves_no_module(tmp_path: Path) -> None:
    if native.missing() is not None:
        pytest.skip(f"this machine has no Python headers or compiler: {native.missing()}")
    failing = tmp_path / "cc"
    failing.write_text("#!/bin/sh\nexit 3\n")
    failing.chmod(0o755)
    run = build_with(failing, tmp_path / "out")
    assert run.returncode == 1 and "compiler failed (3)" in run.stderr
    assert list((tmp_path / "out").iterdir()) == []
