"""Every implementation of a port, real or fake, is checked against it.

Statically: the typed assignments below are checked by mypy (``tests/`` is in its files), so a
fake or a real adapter whose signatures drift from its Protocol fails ``make check``. At run
time: each implementation has every method its port names, with the same parameter names.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from bot.kube.gateway import Gateway
from bot.prom.history import HistoryService
from bot.services.locales import LocaleChooser
from bot.services.ports import (
    ChatPort,
    FilesPort,
    HistoryPort,
    KubePort,
    MetricsPort,
    NoHistory,
    NoMetrics,
    StorePort,
    ThreadPort,
)
from bot.slack.chatting import SlackChat
from bot.slack.presenter import SlackPresenter
from bot.store import Store
from bot.telemetry.metrics import Metrics
from tests.services.fakes import FakeChat, FakeKube
from tests.services.presenting import RecordingPresenter


def _kube(port: KubePort) -> KubePort:
    return port


def _chat(port: ChatPort) -> ChatPort:
    return port


def _store(port: StorePort) -> StorePort:
    return port


def _thread(port: ThreadPort) -> ThreadPort:
    return port


def _charts(port: FilesPort) -> FilesPort:
    return port


def _history(port: HistoryPort) -> HistoryPort:
    return port


def _metrics(port: MetricsPort) -> MetricsPort:
    return port


def _methods(port: type) -> list[str]:
    return sorted(m for m in vars(port) if not m.startswith("_") and callable(vars(port)[m]))


def _params(fn: object) -> list[tuple[str, str]]:
    sig = inspect.signature(fn)  # type: ignore[arg-type]
    return [(p.name, p.kind.name) for p in sig.parameters.values() if p.name != "self"]


IMPLEMENTATIONS: list[tuple[type, type]] = [
    (KubePort, Gateway),
    (KubePort, FakeKube),
    (ChatPort, SlackChat),
    (ChatPort, FakeChat),
    (StorePort, Store),
    (ThreadPort, SlackPresenter),
    (ThreadPort, RecordingPresenter),
    (FilesPort, SlackPresenter),
    (HistoryPort, HistoryService),
    (HistoryPort, NoHistory),
    (MetricsPort, Metrics),
    (MetricsPort, NoMetrics),
]


@pytest.mark.parametrize(
    ("port", "impl"),
    IMPLEMENTATIONS,
    ids=[f"{p.__name__}-{i.__name__}" for p, i in IMPLEMENTATIONS],
)
def test_each_implementation_has_every_method_of_its_port_with_its_parameters(
    port: type, impl: type
) -> None:
    drift = {
        m: (_params(getattr(port, m)), _params(getattr(impl, m, None) or (lambda: None)))
        for m in _methods(port)
        if _params(getattr(port, m)) != _params(getattr(impl, m, None) or (lambda: None))
    }
    assert drift == {}


async def test_the_real_store_and_the_fakes_type_check_against_their_ports(
    tmp_path: Path,
) -> None:
    """The assignments are what mypy checks; running them proves the objects are real."""
    from tests.services.fakes import load_scenario

    bundle, view = load_scenario("seed")
    _kube(FakeKube(bundle, view))
    _chat(FakeChat())
    _thread(SlackPresenter(FakeChat(), LocaleChooser()))
    _thread(RecordingPresenter(FakeChat()))
    _charts(SlackPresenter(FakeChat(), LocaleChooser()))
    _history(HistoryService(None))
    _history(NoHistory())
    _metrics(Metrics())
    _metrics(NoMetrics())
    async with await Store.open(str(tmp_path / "s.db")) as store:
        assert await _store(store).open_incidents() == []
