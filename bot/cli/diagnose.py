"""``gpunode analyze`` (offline, from saved JSON) and ``gpunode diagnose`` (live) in a
terminal.

``gpunode diagnose NODE`` parses its words with ``bot.core.governance.commands.parse`` and
goes through the command table (``bot.services.commands.handle``) as Slack's ``/gpunode
diagnose`` does; the terminal's surface runs the same use case (``bot.services.diagnosing``)
without an incident or a thread, and its presenter (``bot.cli.presenter``) prints the
outcome. Both end in the same place: ``analyze(bundle, view)`` then one renderer chosen by
``--format`` (``bot.cli.presenter.render_output``): ``text`` (terminal), ``markdown`` (the
incident report), ``json`` (the Diagnosis: findings with stable codes, verdict, ledger,
plans) or ``blocks`` (the brief Block Kit message as Slack would receive it).

Offline analysis judges the evidence as of its own ``collected_at`` (so a saved bundle gives
the same answer tomorrow); a live diagnose uses the wall clock.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from bot.cli.presenter import FORMATS as FORMATS  # the formats --format offers
from bot.cli.presenter import Wanted, present
from bot.cli.presenter import render_output as render_output  # tools render with it too
from bot.cli.presenter import write_chart as write_chart
from bot.core.model.clusters import DEFAULT_CLUSTER, NodeRef
from bot.core.reporting.outcomes import NodeDiagnosed, Outcome

if TYPE_CHECKING:
    from bot.prom.history import HistoryService
    from bot.services.ports import KubePort
from bot.core.model.cluster import ClusterView
from bot.core.model.evidence import SCHEMA_VERSION, EvidenceBundle, foreign_schema
from bot.core.model.thresholds import DEFAULT, Thresholds
from bot.core.model.validation import problems, validation_message
from bot.errors import CollectorError, UsageError

M = TypeVar("M", bound=BaseModel)


#: the files ``gpunode analyze`` reads -> (how the English names one, what to pass instead);
#: the keys are the ``kind`` param of the ``input_file_*`` errors, worded in ``errors.j2``
_INPUTS = {
    "evidence": (
        "evidence",
        "Pass the JSON printed by `gpunode collect` (or saved from a diagnostic Job's log).",
    ),
    "cluster_view": (
        "cluster view",
        "Pass a ClusterView JSON (e.g. from `gpunode diagnose NODE --format json` inputs).",
    ),
}


def _bad_input(kind: str, path: str, key: str, said: str, **params: object) -> UsageError:
    """The input file ``path`` (a ``_INPUTS`` kind) cannot be used: ``said`` (English, with
    ``{what}`` for the file's name) then what to pass instead; keyed for the reader's words."""
    what, hint = _INPUTS[kind]
    return UsageError(
        f"{said.format(what=what)} {hint}", key=key, params={"kind": kind, "path": path, **params}
    )


def _read_json(path: str, kind: str) -> Any:
    try:
        raw = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        error = str(exc.strerror or exc)
        said = f"cannot read {{what}} file {path}: {error}."
        raise _bad_input(kind, path, "input_file_unreadable", said, error=error) from exc
    except UnicodeDecodeError as exc:
        said = f"{{what}} file {path} is not UTF-8 text."
        raise _bad_input(kind, path, "input_file_not_utf8", said) from exc
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        said = (
            f"{{what}} file {path} is not valid JSON (line {exc.lineno}, column {exc.colno}: "
            f"{exc.msg})."
        )
        raise _bad_input(
            kind,
            path,
            "input_file_not_json",
            said,
            line=exc.lineno,
            column=exc.colno,
            error=exc.msg,
        ) from exc


#: the schema problems an input file's error names; the rest are counted
SHOWN_PROBLEMS = 5


def _validate(model: type[M], data: Any, path: str, kind: str) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        message = validation_message(exc, limit=SHOWN_PROBLEMS, count_rest=True, top="(top level)")
        said = f"{{what}} file {path} does not match the schema: {message}."
        found = problems(exc)
        raise _bad_input(
            kind,
            path,
            "input_file_not_schema",
            said,
            problems=found[:SHOWN_PROBLEMS],
            more=max(len(found) - SHOWN_PROBLEMS, 0),
        ) from exc


def read_bundle(path: str) -> EvidenceBundle:
    """An EvidenceBundle from a file; refuses another schema major version."""
    data = _read_json(path, "evidence")
    if not isinstance(data, dict):
        said = f"{{what}} file {path} must hold a JSON object."
        raise _bad_input("evidence", path, "input_file_not_object", said)
    version = foreign_schema(data)
    if version is not None:
        raise CollectorError(
            f"evidence file {path} has schema version {version or 'none'}, this gpunode reads "
            f"{SCHEMA_VERSION}: collect again with a matching gpunode version.",
            key="evidence_file_schema",
            params={"path": path, "version": version, "reads": SCHEMA_VERSION},
        )
    return _validate(EvidenceBundle, data, path, "evidence")


def read_view(path: str) -> ClusterView:
    return _validate(ClusterView, _read_json(path, "cluster_view"), path, "cluster_view")


def read_thresholds(config: str | None) -> Thresholds:
    """Thresholds from the settings (``--config`` file and ``GPUNODE_*`` environment)."""
    from bot.config import load_settings
    from bot.config.thresholds import read_thresholds as read

    return read(load_settings(config_file=config))


def analyze_files(
    evidence: str,
    cluster: str | None,
    fmt: str,
    *,
    thresholds: Thresholds = DEFAULT,
    now: datetime | None = None,
    locale: str,
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
    locale: str,
) -> str:
    """The diagnose use case Slack runs (``bot.services.diagnosing``: the node, the
    diagnostic Job with the Prometheus ``history`` alongside, one cluster view, the analysis)
    against one ``kube``, presented as the terminal prints it in ``fmt`` (``chart``: a path
    to write the diagnosis chart to). ``gpunode diagnose`` goes through the command table;
    this is the same use case and presenter for tools and tests given a port."""
    from bot.services.diagnosing import check_node, run_diagnosis

    known = await check_node(kube, node)
    done = await run_diagnosis(
        kube, known, thresholds=thresholds, clock=lambda: now, history=history
    )
    outcome = NodeDiagnosed(
        at=NodeRef(cluster=DEFAULT_CLUSTER, node=known.name),
        diagnosis=done.diagnosis,
        bundle=done.bundle,
    )
    return present(outcome, locale=locale, wanted=Wanted(fmt=fmt, chart=chart)).out


def diagnose_main(args: argparse.Namespace) -> int:
    """``gpunode diagnose [CLUSTER/]NODE``: the words go through the slash command's grammar
    and its command table (``bot.cli.ops.answer``), so both surfaces accept the same node
    names and print the same usage on a mistake; the terminal's presenter prints the
    diagnosis in ``--format`` (and writes ``--chart``). The diagnostic Job's progress is
    drawn on stderr (not with ``--quiet``, nor when stderr is not a terminal)."""
    from bot.cli.common import node_command
    from bot.cli.ops import answer
    from bot.cli.progress import Progress
    from bot.config import load_settings
    from bot.kube.jobs import PROGRESS

    cmd, clusters = node_command(args, "diagnose")
    settings = load_settings(config_file=args.config)
    locale = getattr(args, "lang", None) or "en"
    progress = Progress.for_terminal(sys.stderr, quiet=args.quiet, locale=locale)

    async def run() -> Outcome:
        PROGRESS.set(progress.phase)  # this task's context: the gateway's threads copy it
        return await answer(cmd, args, settings, store_cmd=False, clusters=clusters)

    with progress:
        outcome = asyncio.run(run())
    printed = present(outcome, locale=locale, wanted=Wanted(fmt=args.format, chart=args.chart))
    sys.stdout.write(printed.out)
    sys.stderr.write(printed.err + "\n" if printed.err else "")
    return printed.status
