"""Every verb of the grammar has exactly one handler in the command table, with the
permission it needs declared beside it; ``handle`` checks that permission in the cluster in
question before the handler runs, and a refusal is an outcome, not an exception."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, get_args

import pytest

from bot.core.governance import commands
from bot.core.governance.policy import Permission
from bot.core.model.clusters import NodeRef
from bot.core.model.incidents import Incident
from bot.core.reporting.outcomes import HelpAsked, Outcome, Posted, Refused, Resolved, StatusList
from bot.services.clusters import ClusterRegistry
from bot.services.commands import BY_VERB, TABLE, Asker, Entry, _by_verb, handle
from bot.services.operations import IncidentOps
from bot.store.storing import Store

NOW = datetime(2026, 12, 2, 14, 0, tzinfo=UTC)


def test_every_verb_of_the_grammar_has_exactly_one_handler() -> None:
    verbs = [e.verb for e in TABLE]
    assert sorted(verbs) == sorted(commands.VERBS)
    assert len(verbs) == len(set(verbs))


@pytest.mark.parametrize("entry", TABLE, ids=lambda e: e.verb)
def test_each_verb_declares_the_permission_it_needs(entry: Entry) -> None:
    if entry.verb == "help":
        assert entry.permission is None  # the help is for anyone
    else:
        assert entry.permission in get_args(Permission)


def test_the_verbs_that_change_or_collect_need_more_than_view() -> None:
    assert BY_VERB["diagnose"].permission == "diagnose"
    assert BY_VERB["resolve"].permission == "resolve"


def test_a_second_handler_for_a_verb_is_refused_when_the_table_is_built() -> None:
    with pytest.raises(ValueError, match="two handlers for 'status'"):
        _by_verb((*TABLE, BY_VERB["status"]))


@dataclass
class Surface:
    """A surface over a real store, recording what the table asked of it."""

    ops: IncidentOps
    clusters: ClusterRegistry
    refuse: set[str] = field(default_factory=set)
    asked: list[tuple[str, Any]] = field(default_factory=list)

    async def refusal(
        self, permission: Permission, asker: Asker, cluster: str | None
    ) -> Refused | None:
        self.asked.append(("permission", (permission, cluster)))
        return Refused(code="no_role") if permission in self.refuse else None

    async def diagnose(self, at: NodeRef, asker: Asker) -> Outcome:
        self.asked.append(("diagnose", at))
        return Posted(verb="diagnose")

    async def prevent(self, at: NodeRef, asker: Asker) -> Outcome:
        self.asked.append(("prevent", at))
        return Posted(verb="prevent")

    async def timeline(self, incident: Incident, asker: Asker) -> Outcome:
        self.asked.append(("timeline", incident.id))
        return Posted(verb="timeline")

    async def resolved(self, incident: Incident, asker: Asker, note: str) -> Outcome:
        return Resolved(incident_id=incident.id, by=asker.user, note=note)


class _NoKube:
    """Never asked: these tests use no cluster's API."""


def _clusters() -> ClusterRegistry:
    return ClusterRegistry(
        {"prod-eu": _NoKube, "prod-us": _NoKube},  # type: ignore[dict-item]
        default="prod-eu",
        channel_defaults={"C0US": "prod-us"},
    )


@pytest.fixture
async def store(tmp_path: Any) -> Any:
    async with await Store.open(str(tmp_path / "store.db")) as opened:
        yield opened


@pytest.fixture
def surface(store: Store) -> Surface:
    clusters = _clusters()
    return Surface(ops=IncidentOps(store, clock=lambda: NOW, clusters=clusters), clusters=clusters)


async def _open(surface: Surface, node: str, cluster: str) -> Incident:
    store: Store = surface.ops._store  # type: ignore[assignment]
    incident, _ = await store.open_or_join_incident(
        node, "C0", opened_by="U0A", at=NOW, cluster=cluster, locale="en"
    )
    return incident


async def test_diagnose_without_a_cluster_acts_in_the_channels_cluster(surface: Surface) -> None:
    outcome = await handle(commands.parse("diagnose gpu-1"), Asker("U0A", "C0US"), surface)

    assert outcome == Posted(verb="diagnose")
    assert surface.asked == [
        ("permission", ("diagnose", "prod-us")),
        ("diagnose", NodeRef(cluster="prod-us", node="gpu-1")),
    ]


async def test_a_refused_verb_never_reaches_its_handler(surface: Surface) -> None:
    surface.refuse = {"diagnose"}

    outcome = await handle(commands.parse("diagnose prod-eu/gpu-1"), Asker("U0A", "C0"), surface)

    assert outcome == Refused(code="no_role")
    assert surface.asked == [("permission", ("diagnose", "prod-eu"))]


async def test_help_needs_no_permission(surface: Surface) -> None:
    surface.refuse = {"diagnose", "view", "resolve", "undo"}

    outcome = await handle(commands.parse("help top"), Asker("U0A", "C0"), surface)

    assert outcome == HelpAsked(topic="top")
    assert surface.asked == []


async def test_resolve_checks_its_permission_in_the_incidents_cluster(surface: Surface) -> None:
    incident = await _open(surface, "gpu-1", "prod-us")

    outcome = await handle(
        commands.parse(f"resolve {incident.id} fixed"), Asker("U0A", "C0"), surface
    )

    assert outcome == Resolved(incident_id=incident.id, by="U0A", note="fixed")
    assert surface.asked == [("permission", ("resolve", "prod-us"))]


async def test_status_lists_each_incident_with_its_node_in_its_cluster(surface: Surface) -> None:
    await _open(surface, "gpu-1", "prod-us")

    outcome = await handle(commands.parse("status"), Asker("U0A", "C0"), surface)

    assert isinstance(outcome, StatusList)
    assert [i.at for i in outcome.incidents] == [NodeRef(cluster="prod-us", node="gpu-1")]
    assert outcome.show_cluster


ROOT = Path(__file__).resolve().parents[2]
#: the surfaces that take a command: each parses, calls ``handle`` and presents
SURFACES = [
    "bot/slack/app.py",
    "bot/services/threads.py",
    "bot/cli/ops.py",
    "bot/cli/presenter.py",
    "bot/cli/diagnose.py",
    "bot/cli/prevent.py",
]
VERB_TYPES = {e.command.__name__ for e in TABLE}


def _type_checks(path: Path) -> list[str]:
    """The command types ``path`` tests a value against (``isinstance(x, commands.Top)``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance":
            for name in ast.walk(node.args[1]):
                if isinstance(name, ast.Attribute | ast.Name):
                    word = name.attr if isinstance(name, ast.Attribute) else name.id
                    if word in VERB_TYPES:
                        found.append(f"{path.name}:{node.lineno} {word}")
    return found


@pytest.mark.parametrize("surface", SURFACES)
def test_no_surface_dispatches_on_the_commands_type(surface: str) -> None:
    assert _type_checks(ROOT / surface) == []


def test_the_check_finds_a_dispatch_when_there_is_one(tmp_path: Path) -> None:
    planted = tmp_path / "surface.py"
    planted.write_text("if isinstance(cmd, commands.Top | commands.Help):\n    pass\n")
    assert _type_checks(planted) == ["surface.py:1 Top", "surface.py:1 Help"]
