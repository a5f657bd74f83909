"""``gpunode analyze`` (offline, from saved JSON) and ``gpunode diagnose`` (live): the
terminal's presenter of the diagnose use case.

``gpunode diagnose NODE`` parses its words with ``bot.core.governance.commands.parse`` and runs the
same use case as Slack's ``/gpunode diagnose`` (``bot.services.diagnosing``), without an
incident or a thread. Both end in the same place: ``analyze(bundle, view)`` then one
renderer chosen by
``--format``: ``text`` (terminal), ``markdown`` (the incident report), ``json`` (the
Diagnosis: findings with stable codes, verdict, ledger, plans) or ``blocks`` (the three
Block Kit messages as Slack would receive them).

Offline analysis judges the evidence as of its own ``collected_at`` (so a saved bundle gives
the same answer tomorrow); a live diagnose uses the wall clock.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from bot.cli.common import node_target

if TYPE_CHECKING:
    from bot.prom.history import HistoryService
    from bot.services.ports import KubePort
from bot.core.diagnosis.findings import Diagnosis
from bot.core.model.cluster import ClusterView
from bot.core.model.evidence import SCHEMA_VERSION, EvidenceBundle, foreign_schema
from bot.core.model.thresholds import DEFAULT, Thresholds
from bot.core.model.validation import validation_message
from bot.errors import CollectorError, UsageError

M = TypeVar("M", bound=BaseModel)
FORMATS = ("text", "markdown", "json", "blocks")


def _read_json(path: str, what: str, hint: str) -> Any:
    try:
        raw = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {what} file {path}: {exc.strerror or exc}. {hint}") from exc
    except UnicodeDecodeError as exc:
        raise UsageError(f"{what} file {path} is not UTF-8 text. {hint}") from exc
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"{what} file {path} is not valid JSON (line {exc.lineno}, column {exc.colno}: "
            f"{exc.msg}). {hint}"
        ) from exc


def _validate(model: type[M], data: Any, path: str, what: str, hint: str) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = validation_message(exc, limit=5, count_rest=True, top="(top level)")
        raise UsageError(
            f"{what} file {path} does not match the schema: {problems}. {hint}"
        ) from exc


def read_bundle(path: str) -> EvidenceBundle:
    """An EvidenceBundle from a file; refuses another schema major version."""
    hint = "Pass the JSON printed by `gpunode collect` (or saved from a diagnostic Job's log)."
    data = _read_json(path, "evidence", hint)
    if not isinstance(data, dict):
        raise UsageError(f"evidence file {path} must hold a JSON object. {hint}")
    version = foreign_schema(data)
    if version is not None:
        raise CollectorError(
            f"evidence file {path} has schema version {version or 'none'}, this gpunode reads "
            f"{SCHEMA_VERSION}: collect again with a matching gpunode version."
        )
    return _validate(EvidenceBundle, data, path, "evidence", hint)


def read_view(path: str) -> ClusterView:
    hint = "Pass a ClusterView JSON (e.g. from `gpunode diagnose NODE --format json` inputs)."
    return _validate(
        ClusterView, _read_json(path, "cluster view", hint), path, "cluster view", hint
    )


def read_thresholds(config: str | None) -> Thresholds:
    """Thresholds from the settings (``--config`` file and ``GPUNODE_*`` environment)."""
    from bot.config import load_settings
    from bot.config.thresholds import read_thresholds as read

    return read(load_settings(config_file=config))


def render_output(
    diagnosis: Diagnosis,
    fmt: str,
    *,
    bundle: EvidenceBundle | None = None,
    incident: str | None = None,
    locale: str = "en",
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
    raise UsageError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")


def analyze_files(
    evidence: str,
    cluster: str | None,
    fmt: str,
    *,
    thresholds: Thresholds = DEFAULT,
    now: datetime | None = None,
    locale: str = "en",
) -> str:
    from bot.core.reporting.analysis import analyze

    bundle = read_bundle(evidence)
    view = read_view(cluster) if cluster else None
    diagnosis = analyze(bundle, view, thresholds=thresholds, now=now or bundle.collected_at)
    return render_output(diagnosis, fmt, bundle=bundle, locale=locale)


def analyze_main(args: argparse.Namespace) -> int:
    out = analyze_files(
        args.evidence,
        args.cluster,
        args.format,
        thresholds=read_thresholds(getattr(args, "config", None)),
        locale=getattr(args, "lang", None) or "en",
    )
    print(out, end="")
    return 0


async def diagnose_node(
    kube: KubePort,
    node: str,
    fmt: str,
    *,
    thresholds: Thresholds,
    now: datetime,
    history: HistoryService | None = None,
    chart: str | None = None,
    locale: str = "en",
) -> str:
    """Live: the diagnose use case Slack runs (``bot.services.diagnosing``: the node, the
    diagnostic Job with the Prometheus ``history`` alongside, one cluster view, the analysis),
    presented for a terminal in ``fmt``; ``chart``: a path to write the diagnosis chart (PNG) to."""
    from bot.services.diagnosing import check_node, run_diagnosis

    known = await check_node(kube, node)
    done = await run_diagnosis(
        kube, known, thresholds=thresholds, clock=lambda: now, history=history
    )
    if chart:
        write_chart(done.diagnosis, done.bundle, chart, locale=locale)
    return render_output(done.diagnosis, fmt, bundle=done.bundle, locale=locale)


def write_chart(
    diagnosis: Diagnosis, bundle: EvidenceBundle | None, path: str, *, locale: str = "en"
) -> None:
    """The diagnosis chart as a PNG file at ``path``, its words in ``locale``."""
    from bot.charts import render_png
    from bot.core.reporting.charts import chart_spec

    png = render_png(chart_spec(diagnosis, bundle), locale=locale)
    try:
        Path(path).write_bytes(png)
    except OSError as exc:
        raise UsageError(
            f"cannot write the chart to {path}: {exc.strerror or exc}. Pass a writable path."
        ) from exc


def diagnose_main(args: argparse.Namespace) -> int:
    """``gpunode diagnose NODE``: the words go through ``bot.core.governance.commands.parse`` as the
    slash command's text does, so both surfaces accept the same node names and print the
    same usage on a mistake."""
    from bot.config import load_settings
    from bot.core.governance import commands
    from bot.prom.history import HistoryService

    cmd = commands.parse(" ".join(["diagnose", args.node]), prog="gpunode")
    assert isinstance(cmd, commands.Diagnose)  # the verb is fixed above
    thresholds = read_thresholds(args.config)
    # [CLUSTER/]NODE: that cluster's gateway (UsageError naming the known clusters)
    gateway, at = node_target(args, args.node, verb="diagnose")
    prometheus = load_settings(config_file=args.config).prometheus

    from bot.cli.progress import Progress
    from bot.kube.jobs import PROGRESS

    locale = getattr(args, "lang", None) or "en"
    progress = Progress.for_terminal(sys.stderr, quiet=args.quiet, locale=locale)

    async def run() -> str:
        history = HistoryService.from_settings(prometheus)
        PROGRESS.set(progress.phase)  # this task's context: the gateway's threads copy it
        try:
            return await diagnose_node(
                gateway,
                at.node,
                args.format,
                thresholds=thresholds,
                now=datetime.now(UTC),
                history=history,
                chart=args.chart,
                locale=locale,
            )
        finally:
            await history.close()
            close = getattr(gateway, "close", None)
            if close is not None:
                result = close()
                if asyncio.iscoroutine(result):
                    await result

    with progress:
        out = asyncio.run(run())
    print(out, end="")
    return 0
