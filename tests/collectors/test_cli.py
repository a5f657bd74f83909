"""``gpunode collect`` prints a valid bundle, stays light, and survives hostile hosts."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.collectors.bundle import SCHEMA_VERSION, collect_document
from bot.core.model import evidence
from bot.core.model.evidence import EvidenceBundle

REPO = Path(__file__).resolve().parents[2]
HOSTS = REPO / "tests" / "fixtures" / "hosts"
FORBIDDEN = ["slack_bolt", "slack_sdk", "kubernetes", "jinja2", "aiohttp", "yaml", "pydantic"]


def _run(*args: str, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, sys.executable, "-m", "bot", "collect", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )


# root without the capabilities that bypass file permissions, so EACCES is real
NO_DAC = ("setpriv", "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-all")


def test_schema_versions_agree() -> None:
    assert SCHEMA_VERSION == evidence.SCHEMA_VERSION


def test_json_output_is_a_valid_bundle() -> None:
    spec = HOSTS / "v2-systemd-containerd" / "nvml.json"
    run = _run(
        "--root",
        str(HOSTS / "v2-systemd-containerd"),
        "--fake-nvml",
        str(spec),
        "--node-name",
        "gpu-node-01",
    )
    assert run.returncode == 0, run.stderr
    bundle = EvidenceBundle.model_validate_json(run.stdout)
    assert bundle.node_name == "gpu-node-01" and len(bundle.gpus) == 1
    assert bundle.gpu_processes[0].pod_uid == "1b4e28ba-2fa1-11d2-883f-0016d3cca427"


def test_the_document_and_the_model_agree_field_for_field() -> None:
    doc = collect_document(HOSTS / "v1-cgroupfs-docker", nvml_module=None)
    bundle = EvidenceBundle.model_validate(doc)
    dumped = json.loads(bundle.model_dump_json())
    doc = json.loads(json.dumps(doc))
    doc.pop("collected_at"), dumped.pop("collected_at")
    assert dumped == doc


def test_collect_imports_no_bot_side_sdk_and_not_even_pydantic() -> None:
    code = (
        "import sys, io, contextlib\n"
        "from bot.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main(['collect', '--root', {str(HOSTS / 'v2-cgroupfs-crio')!r}])\n"
        f"print([m for m in {FORBIDDEN!r} if m in sys.modules])\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


FAST_COMMAND_LINES = [
    ["collect"],
    ["collect", "--root", "/host", "--top", "5", "--format", "text", "--node-name", "n1"],
    ["collect", "--kernel-log-window", "60", "--fake-nvml", "spec.json"],
    ["collect", "--root=/host", "--top=0", "--format=json", "--kernel-log-window=0"],
    ["collect", "--top", "3", "--top", "7", "--root", ""],  # the last one wins, as in argparse
    ["collect", "--node-name", "a=b", "--root=--odd", "--top=-1"],
]


@pytest.mark.parametrize("words", FAST_COMMAND_LINES, ids=lambda w: " ".join(w))
def test_collect_is_parsed_without_argparse_exactly_as_the_full_parser_parses_it(
    words: list[str],
) -> None:
    from bot.cli.main import _parse, build_parser

    parser, fast = _parse(words)
    assert parser is None
    assert vars(fast) == vars(build_parser().parse_args(words))


def _imported_by_a_collection(
    args: list[str], modules: tuple[str, ...], root: Path = HOSTS / "v2-cgroupfs-crio"
) -> list[str]:
    """Which of ``modules`` a fresh interpreter has imported once ``collect ARGS`` ran."""
    code = (  # no contextlib here: it imports collections and functools itself
        "import sys, os\n"
        "from bot.cli import main\n"
        "sys.stdout = open(os.devnull, 'w')\n"
        f"main(['collect', '--root', {str(root)!r}, *{args!r}])\n"
        f"print(sorted(m for m in {modules!r} if m in sys.modules), file=sys.__stdout__)\n"
    )
    run = subprocess.run(
        [sys.executable, "-S", "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        env={"PYTHONPATH": str(REPO), "PATH": os.environ.get("PATH", "")},
    )
    assert run.returncode == 0, run.stderr
    imported: list[str] = ast.literal_eval(run.stdout.strip())
    return imported


def test_collect_starts_without_importing_argparse() -> None:
    """The Job's command line is parsed without argparse (and gettext, which it imports)."""
    assert _imported_by_a_collection(["--top", "5"], ("argparse", "gettext", "typing")) == []


@pytest.mark.parametrize(
    "words",
    [
        ["collect", "--form", "text"],  # an abbreviation argparse accepts
        ["collect", "--top", "-1"],  # a negative number argparse takes as the value
    ],
    ids=lambda w: " ".join(w),
)
def test_collect_leaves_what_it_cannot_parse_alone_to_its_own_argparse_parser(
    words: list[str],
) -> None:
    from bot.cli.main import _parse, build_parser

    parser, parsed = _parse(words)
    assert parser is not None
    assert parser.prog == "gpunode collect" and not parser._subparsers
    assert vars(parsed) == vars(build_parser().parse_args(words))


def test_collect_help_and_errors_read_as_the_full_parsers_collect(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from bot.cli.main import _parse, build_parser

    outputs = []
    for parse in (lambda w: _parse(w), lambda w: build_parser().parse_args(w)):
        for argv in (["collect", "--help"], ["collect", "--top", "x"], ["collect", "--root"]):
            with pytest.raises(SystemExit):
                parse(argv)
            outputs.append(capsys.readouterr())
    assert outputs[:3] == outputs[3:]
    assert "usage: gpunode collect [-h] [--root ROOT]" in outputs[0].out
    assert "argument --top: invalid int value: 'x'" in outputs[1].err
    assert "argument --root: expected one argument" in outputs[2].err


def test_a_collection_that_cannot_read_the_kernel_log_imports_neither_json_re_nor_datetime() -> (
    None
):
    """Each costs milliseconds of the Job's start-up (``re`` ~7, through ``enum``), and the
    Job usually may not open /dev/kmsg: its JSON, timestamps and parsing do without them, and
    without collections, functools, importlib or types (~1 ms or more each)."""
    modules = ("collections", "datetime", "enum", "functools", "importlib", "json", "re", "types")
    assert _imported_by_a_collection(["--format", "json"], modules) == []


def test_a_kernel_log_without_oom_or_xid_reports_is_read_without_re_or_datetime(
    tmp_path: Path,
) -> None:
    """As root (or privileged) the Job reads /dev/kmsg: a boot log's records, escaped tabs
    included, are parsed and placed on the clock by hand (``re`` is for OOM and XID reports),
    and /proc/stat is read without ``open``'s ascii codec module."""
    root = tmp_path / "host"
    shutil.copytree(HOSTS / "v2-cgroupfs-crio", root, symlinks=True)
    (root / "dev").mkdir(exist_ok=True)
    (root / "dev" / "kmsg").write_text(
        "6,0,0,-;Linux version 6.8.0-45-generic\n"
        "6,90,252347,-;rcu: \\x09RCU restricting CPUs from NR_CPUS=256 to nr_cpu_ids=2.\n"
        " SUBSYSTEM=cpu\n"
        "4,91,252355,-;nvidia: loading out-of-tree module taints kernel.\n"
    )
    (root / "proc" / "stat").write_text("cpu  1 2 3\nbtime 1796000000\n")
    imported = _imported_by_a_collection([], ("datetime", "encodings.ascii", "re"), root=root)
    assert imported == []
    doc = collect_document(root, nvml_module=None)
    assert doc["kernel_log"]["records_read"] == 3
    assert doc["kernel_log"]["first_record_at"] == "2026-11-30T00:53:20+00:00"


def test_collect_starts_without_importing_shutil() -> None:
    """argparse's help formatter imports shutil (and its compression modules) for the
    terminal's width on every ``add_argument``: 4-10 ms of a collection's start-up."""
    assert _imported_by_a_collection([], ("shutil",)) == []


def test_text_summary_names_figures_containers_gpus_and_gaps() -> None:
    spec = HOSTS / "v2-systemd-containerd" / "nvml.json"
    run = _run(
        "--root", str(HOSTS / "v2-systemd-containerd"), "--fake-nvml", str(spec), "--format", "text"
    )
    assert run.returncode == 0, run.stderr
    for words in (
        "available 9.0Gi",
        "pressure: some avg10=12.50",
        "31.0Gi /   32.0Gi",
        "H100",
        "memory.max",
        "train.py",
    ):
        assert words in run.stdout


def test_an_unreadable_fake_nvml_spec_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{")
    run = _run("--root", str(HOSTS / "v2-cgroupfs-crio"), "--fake-nvml", str(tmp_path / "bad.json"))
    assert run.returncode == 1 and "fake-NVML spec" in run.stderr


@pytest.fixture
def hostile_host() -> Iterator[Path]:
    """A copy of a fixture host with hostile bits (a pid directory of another user)."""
    top = Path(tempfile.mkdtemp(prefix="gpunode-host-"))
    os.chmod(top, 0o755)
    root = top / "host"
    shutil.copytree(HOSTS / "v2-cgroupfs-crio", root)
    os.chown(root / "proc" / "300", 12345, 12345)  # permission denied on a pid directory
    os.chmod(root / "proc" / "300", 0o700)
    (root / "proc" / "meminfo").write_bytes(b"MemTotal: 10\xff kB\nMemFree: \n")  # garbled
    (root / "proc" / "301" / "cmdline").write_bytes(b"\xff\xfe\x00--\x80\x00")
    slabinfo = root / "proc" / "slabinfo"
    slabinfo.write_text("slabinfo - version: 2.1\n")
    os.chown(slabinfo, 12345, 12345)  # root-only on a real kernel; another owner here
    os.chmod(slabinfo, 0o400)
    yield root
    shutil.rmtree(top)


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv"
)
def test_a_hostile_host_gives_a_complete_bundle_that_names_its_gaps(hostile_host: Path) -> None:
    run = _run("--root", str(hostile_host), "--top", "5", prefix=NO_DAC)
    assert run.returncode == 0, run.stderr
    bundle = EvidenceBundle.model_validate_json(run.stdout)
    sources = {g.source: g.reason for g in bundle.gaps}
    assert bundle.meminfo is None and "procfs:/proc/meminfo" in sources
    assert "permission denied for 1 process(es) (e.g. 300)" in sources["procfs:/proc/<pid>/statm"]
    assert [p.pid for p in bundle.processes] == [301]
    assert "\ufffd" in bundle.processes[0].cmdline
    assert "nvml" in sources and len(bundle.containers) == 2
    assert sources["procfs:/proc/slabinfo"] == "permission denied" and bundle.slab_caches == []


def _job_and_module_runs(*args: str, **kw: object) -> list[subprocess.CompletedProcess[bytes]]:
    """``collect ARGS`` run as the Job runs it (this checkout's bot/__main__.py by its path,
    ``-I -S``) and as ``python -m bot``."""
    script = str(REPO / "bot" / "__main__.py")
    return [
        subprocess.run([*head, "collect", *args], cwd=REPO, timeout=60, check=False, **kw)  # type: ignore[call-overload]
        for head in ([sys.executable, "-I", "-S", script], [sys.executable, "-I", "-m", "bot"])
    ]


def _same_moment(stdout: bytes) -> dict[str, object]:
    doc: dict[str, object] = json.loads(stdout)
    doc.pop("collected_at"), doc.pop("duration_s")
    return doc


def test_the_jobs_run_writes_what_python_m_bot_writes_and_exits_as_it_does() -> None:
    """The Job's run skips the garbage collector and the interpreter's teardown: its output
    and exit status are still those of the ordinary run, for a collection and for a refusal."""
    host = str(HOSTS / "v2-systemd-containerd")
    job, module = _job_and_module_runs("--root", host, capture_output=True)
    assert job.returncode == module.returncode == 0, job.stderr
    assert job.stdout.endswith(b"}\n") and _same_moment(job.stdout) == _same_moment(module.stdout)
    job, module = _job_and_module_runs("--root", host, "--top=-1", capture_output=True)
    assert job.returncode == module.returncode == 1
    assert job.stderr == module.stderr == b"gpunode: --top must be 0 or more\n"


def test_the_jobs_run_reports_output_it_cannot_write_and_exits_120_as_python_does() -> None:
    """A summary small enough to sit in stdout's buffer is written at exit: when that fails
    (the reader is gone), both runs say so and exit 120."""
    host = str(HOSTS / "v2-cgroupfs-crio")
    read_end, write_end = os.pipe()
    os.close(read_end)  # no reader: a write fails with EPIPE
    try:
        runs = _job_and_module_runs(
            *("--root", host, "--top", "0", "--kernel-log-window", "0", "--format", "text"),
            stdout=write_end,
            stderr=subprocess.PIPE,
        )
    finally:
        os.close(write_end)
    assert [run.returncode for run in runs] == [120, 120]
    assert runs[0].stderr == runs[1].stderr and b"BrokenPipeError" in runs[0].stderr


def test_the_jobs_run_imports_neither_the_gpunode_command_nor_every_error_nor_heapq_py() -> None:
    """The Job's run parses ``collect``'s words and words its refusals itself: ``bot.cli``'s
    parser builders, ``bot.errors``' other nineteen classes and heapq.py (its C half does the
    ranking) are ~1 ms of its start-up (issue #25), and so is ``_json``'s shared library (its
    strings are quoted by hand). ``-X importtime`` lists what it imports."""
    host = str(HOSTS / "v2-cgroupfs-crio")
    script = str(REPO / "bot" / "__main__.py")
    run = subprocess.run(
        [sys.executable, "-X", "importtime", "-I", "-S", script, "collect", "--root", host],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines()}
    assert "bot.collectors.procfs" in imported  # the listing is read
    cut = {"argparse", "bot.cli", "bot.cli.main", "bot.errors", "heapq", "os", "posixpath", "_json"}
    assert imported & cut == set()


def test_the_jobs_run_leaves_help_and_usage_errors_to_argparse_as_python_m_bot_does() -> None:
    host = str(HOSTS / "v2-cgroupfs-crio")
    job, module = _job_and_module_runs("--root", host, "--top", "x", capture_output=True)
    assert job.returncode == module.returncode == 2
    assert job.stderr == module.stderr and b"argument --top: invalid int value" in job.stderr
    job, module = _job_and_module_runs("--help", capture_output=True)
    assert job.returncode == module.returncode == 0
    assert job.stdout == module.stdout and job.stdout.startswith(b"usage: gpunode collect")
