"""``gpunode collect``'s options, and its command line parsed without argparse.

Here, with the collectors, so that the diagnostic Job (``bot/__main__.py collect``) parses its
command line without importing ``bot.cli.main`` (the whole ``gpunode`` command's parser
builders, ~1M instructions of its run; issue #25). ``bot.cli.main`` builds collect's argparse
parser from the same table and falls back to it wherever ``parse_fast`` declines.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing and argparse cost ~5 ms of `gpunode collect`'s start-up
if TYPE_CHECKING:
    import argparse

#: ``gpunode collect``'s options, the one table both of its parsers read: (flag, type, choices,
#: default, metavar, help). ``type`` is ``str`` or ``int`` (argparse's ``type=int`` calls it).
COLLECT_OPTIONS: tuple[tuple[str, type, tuple[str, ...], object, str | None, str | None], ...] = (
    ("--root", str, (), "/", None, "host root to read (default /)"),
    ("--top", int, (), 20, None, "top N processes by RSS (default 20)"),
    ("--format", str, ("json", "text"), "json", None, None),
    ("--fake-nvml", str, (), None, "FILE", "read GPUs from a fake-NVML JSON spec"),
    ("--node-name", str, (), None, None, "node name to record (default $NODE_NAME)"),
    (
        "--kernel-log-window",
        int,
        (),
        86400,
        "SECONDS",
        "keep kernel log (OOM kill, XID) records this recent (default 86400; 0: skip)",
    ),
)
COLLECT_DEFAULTS = {"command": "collect", "handler": "bot.collectors.cli:main"}


def parse_fast(words: list[str]) -> argparse.Namespace | None:
    """``gpunode collect``'s arguments parsed without argparse, or None when argparse must
    decide (help, an abbreviation, an unknown option, a bad or missing value, a value that
    starts with ``-``). Where it answers, the answer is argparse's (tests compare the two);
    it exists because the Job runs ``collect`` on every diagnosed node and importing and
    building argparse is a few ms of a run that reads a small node in tens of ms."""
    spec = {flag: (kind, choices) for flag, kind, choices, _d, _m, _h in COLLECT_OPTIONS}
    values: dict[str, object] = {
        flag[2:].replace("-", "_"): default for flag, _k, _c, default, _m, _h in COLLECT_OPTIONS
    }
    i = 0
    while i < len(words):
        flag, eq, value = words[i].partition("=")
        if flag not in spec:
            return None
        if not eq:
            i += 1
            if i == len(words) or words[i].startswith("-"):
                return None
            value = words[i]
        kind, choices = spec[flag]
        if choices and value not in choices:
            return None
        try:
            values[flag[2:].replace("-", "_")] = kind(value)
        except ValueError:
            return None
        i += 1
    return _Args(**values, **COLLECT_DEFAULTS)  # type: ignore[return-value]


class _Args:
    """A plain attribute bag, as argparse's Namespace is (the handlers only read attributes;
    ``types.SimpleNamespace`` would import ``types``)."""

    def __init__(self, **values: object) -> None:
        self.__dict__.update(values)
