"""Why a source was not verified reads in the reader's language: the collector records each
gap with a code and raw parameters beside its English reason, and the catalog words the code.
A code the catalog has no words for would fall back to English, so every code the collectors
and the bot can record is checked here, found by reading their source."""

from __future__ import annotations

import ast
import errno
from pathlib import Path

import pytest

from bot.collectors import kmsg
from bot.collectors.gaps import GapLog
from bot.collectors.procfs import SMAPS_DENIED, SMAPS_SOURCE, parse_meminfo, read_text
from bot.core.model.evidence import Gap
from bot.render.errors import gap_text
from tests.render.test_catalogs import english_words

ROOT = Path(__file__).resolve().parents[2]
#: where gaps are recorded: the node collector, the history reader and the GPU evidence plan
SOURCES = [*sorted((ROOT / "bot/collectors").glob("*.py")), ROOT / "bot/prom/history.py"]
SOURCES.append(ROOT / "bot/kube/gpuevidence.py")
FALLBACK = "«no words»"


def _recorded_codes() -> set[str]:
    """Every gap code written in the source: ``gaps.add(source, reason, "code", ...)``,
    ``gaps.add_each(source, reason, pid, "code")``, ``Gap(..., code="code")`` and the tuples
    a helper returns for ``gaps.add(source, *helper())`` ("code" after the reason)."""
    codes: set[str] = set()
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "attr", getattr(node.func, "id", ""))
                at = {"add": 2, "add_each": 3}.get(name)
                if at is not None and len(node.args) > at:
                    arg = node.args[at]
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        codes.add(arg.value)
                codes |= {
                    str(k.value.value)
                    for k in node.keywords
                    if name == "Gap" and k.arg == "code" and isinstance(k.value, ast.Constant)
                }
            if isinstance(node, ast.Tuple) and len(node.elts) == 3:
                second = node.elts[1]
                code = second.value if isinstance(second, ast.Constant) else None
                if isinstance(code, str) and code.replace("_", "").isalpha() and code.islower():
                    codes.add(code)
            if isinstance(node, ast.Dict):  # a code table (NVML's init failures)
                for value in node.values:
                    if isinstance(value, ast.Constant) and str(value.value).startswith("nvml_"):
                        codes.add(str(value.value))
    return codes - {""}


#: parameters as the recording code gives them, per code (any code not named has none)
PARAMS: dict[str, dict[str, object]] = {
    "unreadable": {"error": "Input/output error"},
    "cannot_list": {"error": "Too many open files"},
    "unparsable_limit": {"value": "lots"},
    "truncated_line": {"line": "MemAvail"},
    "unparsable_line": {"line": "MemTotal: lots kB"},
    "statm_denied": {"count": 3, "pids": [12, 40, 41]},
    "smaps_denied": {"count": 31, "pids": [1, 2, 3, 4, 5]},
    "no_nvidiactl": {"path": "/dev/nvidiactl"},
    "nvml_init_failed": {"error": "Unknown Error"},
    "nvml_query_failed": {"error": "GPU is lost"},
    "kmsg_refused": {"errno": "EPERM", "dmesg_restrict": "1"},
    "kmsg_unreadable": {"error": "Input/output error"},
    "xid_gpu_unknown": {"pci_bus_id": "0000:3b:00.0"},
    "prometheus_timeout": {"timeout_s": "5"},
    "prometheus_no_series": {"metric": "DCGM_FI_DEV_FB_USED", "node": "n1", "exporter": "dcgm"},
    "gpu_not_nvidia": {"vendors": "amd.com"},
    # each tried way, hint and attempt: tests/render/test_gpu_gap_words.py
    "gpu_evidence_unread": {
        "tried": "missing_runtime_class",
        "runtime_class": "nvidia-rc",
        "hints": "default_runtime_without_nvml",
        "failures": 1,
        "f1_source": "nvml",
        "f1_code": "nvml_library_missing",
        "f1_reason": "NVML library not found",
    },
}


def test_the_source_records_gaps_with_codes() -> None:
    codes = _recorded_codes()
    assert {"permission_denied", "smaps_denied", "kmsg_refused", "prometheus_timeout"} <= codes


def _words_only(text: str, params: dict[str, object]) -> str:
    """``text`` less the quoted values (an OS or driver message stays as it was said)."""
    for value in params.values():
        text = text.replace(str(value), " ")
    return text


@pytest.mark.parametrize("code", sorted(_recorded_codes()))
def test_every_recorded_gap_code_is_worded_in_chinese_without_english(code: str) -> None:
    params = PARAMS.get(code, {})
    zh = gap_text(code, params, FALLBACK, "zh-CN")
    assert zh != FALLBACK, f"no words for gap code {code!r} in templates/sentences/gaps.j2"
    assert english_words(_words_only(zh, params)) == [], zh
    xa = gap_text(code, params, FALLBACK, "en-XA")
    assert english_words(_words_only(xa, params)) == [], xa
    assert gap_text(code, params, FALLBACK, "en") != FALLBACK


def test_a_gap_the_collector_records_reads_as_its_own_english_reason_in_english(
    tmp_path: Path,
) -> None:
    gaps = GapLog()
    read_text(str(tmp_path / "meminfo"), source="procfs:/proc/meminfo", gaps=gaps)
    _, problems = parse_meminfo("MemTotal:  1000 kB\nMemFr")
    for code, reason, params in problems:
        gaps.add("procfs:/proc/meminfo", reason, code, params)
    reason, code, params = kmsg._open_reason(  # the kernel refusing a non-privileged open
        PermissionError(errno.EPERM, "Operation not permitted"), str(tmp_path), cap_syslog=None
    )
    gaps.add(kmsg.SOURCE, reason, code, params)
    recorded = [Gap.model_validate(g) for g in gaps.items]
    assert [g.code for g in recorded] == [
        "not_present",
        "truncated_line",
        "meminfo_totals_missing",
        "kmsg_refused",
    ]
    for g in recorded:
        assert gap_text(g.code, g.params, FALLBACK, "en") == g.reason
        assert english_words(gap_text(g.code, g.params, FALLBACK, "zh-CN")) == []


def test_a_repeated_denial_is_one_gap_with_the_count_and_a_few_pids_in_each_language() -> None:
    gaps = GapLog()
    for pid in (300, 12, 45, 7, 99, 1000):
        gaps.add_each(SMAPS_SOURCE, SMAPS_DENIED, pid, "smaps_denied")
    (gap,) = [Gap.model_validate(g) for g in gaps.items]
    assert gap.code == "smaps_denied" and gap.params == {"count": 6, "pids": [7, 12, 45, 99, 300]}
    zh = gap_text(gap.code, gap.params, gap.reason, "zh-CN")
    assert "6 个进程" in zh and "7, 12, 45, 99, 300" in zh and english_words(zh) == []
    assert "6 processes" in gap_text(gap.code, gap.params, gap.reason, "en")


def test_a_gap_without_a_code_reads_as_its_reason() -> None:
    assert gap_text("", {}, "something new", "zh-CN") == "something new"
    assert gap_text("not_a_code", {}, "something new", "zh-CN") == "something new"
