"""The terminal's presenter: a command's typed outcome (``bot.core.reporting.outcomes``) as
``gpunode diagnose|prevent|status|top|timeline|resolve|help`` print it, in the reader's
language, as ``bot.slack.presenter`` and ``bot.slack.app.as_told`` present the same outcomes
in Slack.

``present`` returns what goes to stdout, what goes to stderr, and the exit status: a
refusal, or a ``top`` that no cluster answered, is an error (exit 1) said on stderr. What the
command line asked of the presentation (``Wanted``: the diagnosis' ``--format`` and
``--chart``, the kit's ``--out`` and ``--force``) is the presenter's: a diagnosis is rendered
in that format (its chart written to that PNG), a kit printed as one Markdown document or
written file by file into that folder.
"""

from __future__ import annotations

import errno
import json
import os
from dataclasses import dataclass
from pathlib import Path

from bot.core.diagnosis.findings import Diagnosis
from bot.core.model.evidence import EvidenceBundle
from bot.core.reporting.outcomes import (
    Exported,
    HelpAsked,
    KitMade,
    NodeDiagnosed,
    Outcome,
    Posted,
    Refused,
    Resolved,
    StatusList,
    TopNodes,
)
from bot.errors import UsageError
from bot.render.cli_text import line
from bot.render.errors import error_text
from bot.render.help import help_text
from bot.render.messages import plain_fallback
from bot.render.notices import told_mrkdwn
from bot.render.prevention import render_kit_markdown, render_prevention_files

FORMATS = ("text", "markdown", "json", "blocks")


@dataclass(frozen=True)
class Wanted:
    """How the command line asked to see an outcome: a diagnosis in ``fmt`` (its chart also
    written to ``chart``, a PNG path); a kit's files written into ``out`` (a folder;
    ``force``: over an earlier kit's), else printed."""

    fmt: str = "text"
    chart: str | None = None
    out: str | None = None
    force: bool = False


@dataclass(frozen=True)
class Printed:
    """What the terminal shows for one outcome."""

    out: str = ""
    err: str = ""
    status: int = 0


def _percent(value: int | None) -> str:
    return "-" if value is None else str(value)


def _status(outcome: StatusList, locale: str) -> str:
    if not outcome.incidents:
        return line("no_open_incidents", outcome.asked, locale=locale)
    rows = [
        {
            "id": i.id,
            "node": i.at.label(show_cluster=outcome.show_cluster),
            "state": i.state,
            "opened_at": i.opened_at,
        }
        for i in outcome.incidents
    ]
    return "\n".join(line("status_line", row, locale=locale) for row in rows)


def _top(outcome: TopNodes, locale: str) -> Printed:
    said = [error_text(f.key, f.params, f.message, locale) for f in outcome.failures]
    if outcome.nothing_answered:
        # nothing answered: fail, naming why, as a one-cluster top always did
        return Printed(err=f"gpunode: {said[0]}", status=1)
    lines = [
        line("cluster_left_out", f.cluster, words, locale=locale)
        for f, words in zip(outcome.failures, said, strict=True)
    ]
    if not outcome.rows:
        return Printed(out="\n".join([*lines, line("no_gpu_nodes", locale=locale)]))
    many = outcome.show_cluster
    lines.append(line("top_header", many, locale=locale))
    for r in outcome.rows:
        row = {"cluster": r.at.cluster, "node": r.at.node, "memory_pressure": r.memory_pressure}
        used, lim, req = (
            _percent(r.working_set_percent),
            _percent(r.limits_percent),
            _percent(r.requests_percent),
        )
        lines.append(line("top_line", row, used, lim, req, many, locale=locale))
    lines.extend(["", line("top_legend", locale=locale)])
    return Printed(out="\n".join(lines))


def render_output(
    diagnosis: Diagnosis,
    fmt: str,
    *,
    bundle: EvidenceBundle | None = None,
    incident: str | None = None,
    locale: str,
) -> str:
    """The diagnosis in one of ``FORMATS``, worded in ``locale`` (``--lang``; JSON has none)."""
    if fmt == "json":
        return diagnosis.model_dump_json(indent=2) + "\n"
    if fmt == "blocks":
        from bot.render.blocks import diagnosis_messages

        messages = diagnosis_messages(diagnosis, bundle, incident=incident, locale=locale)
        payload = [{"text": text, "blocks": blocks} for text, blocks in messages]
        return json.dumps(payload, indent=2, ensure_ascii=False) + "\n"
    if fmt == "markdown":
        from bot.render.markdown import render_report_markdown

        return render_report_markdown(diagnosis, bundle, incident=incident, locale=locale)
    if fmt == "text":
        from bot.render.text import render_report_text

        return render_report_text(diagnosis, bundle, incident=incident, locale=locale)
    raise UsageError(
        f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}",
        key="unknown_format",
        params={"format": fmt, "formats": list(FORMATS)},
    )


def write_chart(
    diagnosis: Diagnosis, bundle: EvidenceBundle | None, path: str, *, locale: str
) -> None:
    """The diagnosis chart as a PNG file at ``path``, its words in ``locale``."""
    from bot.charts import render_png
    from bot.core.reporting.charts import chart_spec

    png = render_png(chart_spec(diagnosis, bundle), locale=locale)
    try:
        Path(path).write_bytes(png)
    except OSError as exc:
        error = str(exc.strerror or exc)
        raise UsageError(
            f"cannot write the chart to {path}: {error}. Pass a writable path.",
            key="chart_unwritable",
            params={"path": path, "error": error},
        ) from exc


def _write_new(path: Path, text: str, *, replace: bool) -> None:
    """Write ``path`` itself, never through a symlink (O_NOFOLLOW); without ``replace`` only
    a file that does not exist yet (O_EXCL, so one planted meanwhile is not written either)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_TRUNC if replace else os.O_EXCL)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UsageError(
                f"{path} is a symbolic link; gpunode writes no file through one. Remove it, "
                "or choose another --out directory.",
                key="kit_file_symlink",
                params={"path": str(path)},
            ) from exc
        raise _unwritable(path, exc) from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as exc:
        raise _unwritable(path, exc) from exc


def _unwritable(path: Path, exc: OSError) -> UsageError:
    error = str(exc.strerror or exc)
    return UsageError(
        f"cannot write {path}: {error}. Pass a writable --out directory.",
        key="kit_file_unwritable",
        params={"path": str(path), "error": error},
    )


def write_kit(files: dict[str, str], out: Path, *, force: bool = False) -> list[Path]:
    """Write every file of the kit into ``out``; the paths written, in kit order."""
    targets = [out / name for name in files]
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        error = str(exc.strerror or exc)
        raise UsageError(
            f"cannot create {out}: {error}. Pass a writable --out directory.",
            key="kit_dir_unwritable",
            params={"out": str(out), "error": error},
        ) from exc
    # lexists: a symlink counts, dangling or not (it is never followed, below)
    existing = [p.name for p in targets if os.path.lexists(p)]
    if existing and not force:
        raise UsageError(
            f"{out} already holds {', '.join(existing)} (an earlier kit?); nothing was written. "
            "Pass --force to overwrite them, or choose another --out directory.",
            key="kit_files_exist",
            params={"out": str(out), "names": existing},
        )
    for path in targets:
        _write_new(path, files[path.name], replace=force)
    return targets


def _diagnosed(outcome: NodeDiagnosed, locale: str, wanted: Wanted) -> Printed:
    if wanted.chart:
        write_chart(outcome.diagnosis, outcome.bundle, wanted.chart, locale=locale)
    return Printed(
        out=render_output(outcome.diagnosis, wanted.fmt, bundle=outcome.bundle, locale=locale)
    )


def _kit(outcome: KitMade, locale: str, wanted: Wanted) -> Printed:
    files = render_prevention_files(outcome.params, locale=locale, source=outcome.source)
    if wanted.out is None:
        return Printed(out=render_kit_markdown(files, locale=locale).rstrip("\n") + "\n")
    written = write_kit(files, Path(wanted.out), force=wanted.force)
    lines = [f"wrote {p}" for p in written]
    lines.append(f"review {Path(wanted.out) / 'README.md'} before applying anything")
    return Printed(out="\n".join(lines) + "\n")


def present(
    outcome: Outcome, *, locale: str, prog: str = "gpunode", wanted: Wanted | None = None
) -> Printed:
    """``outcome`` as the terminal prints it, in ``locale``, as ``wanted``."""
    wanted = wanted or Wanted()
    if isinstance(outcome, NodeDiagnosed):
        return _diagnosed(outcome, locale, wanted)
    if isinstance(outcome, KitMade):
        return _kit(outcome, locale, wanted)
    if isinstance(outcome, Refused):
        return Printed(err=f"gpunode: {plain_fallback(told_mrkdwn(outcome, locale))}", status=1)
    if isinstance(outcome, HelpAsked):
        return Printed(out=help_text(outcome.topic, prog=prog, locale=locale))
    if isinstance(outcome, StatusList):
        return Printed(out=_status(outcome, locale))
    if isinstance(outcome, TopNodes):
        return _top(outcome, locale)
    if isinstance(outcome, Resolved):
        return Printed(out=line("resolved", outcome.incident_id, locale=locale))
    if isinstance(outcome, Exported):
        return Printed(out=outcome.markdown)
    assert isinstance(outcome, Posted)
    return Printed()
