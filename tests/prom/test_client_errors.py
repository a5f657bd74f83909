"""Every Prometheus failure is a ``PrometheusError`` (no aiohttp exception leaks), and the
history service turns it into a gap within its deadline."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from aiohttp import web

from bot.errors import PrometheusError
from bot.prom.client import PrometheusClient
from bot.prom.history import HistoryService
from bot.render.errors import gap_text
from tests.render.test_catalogs import english_words

NOW = datetime(2026, 12, 1, 3, 0, tzinfo=UTC)


async def _bad_query(request: web.Request) -> web.Response:
    body = {"status": "error", "errorType": "bad_data", "error": "parse error at char 5"}
    return web.json_response(body, status=400)


async def _html(request: web.Request) -> web.Response:
    return web.Response(text="<html>502 Bad Gateway</html>", status=502)


#: how long the slow Prometheus takes to answer: far beyond the history's deadline
SLOW_S = 60


async def _slow(request: web.Request) -> web.Response:
    await asyncio.sleep(SLOW_S)
    return web.json_response({"status": "success", "data": {"resultType": "matrix", "result": []}})


async def _start(aiohttp_server: Callable[..., Awaitable[Any]], handler: Any) -> str:
    app = web.Application()
    app.router.add_get("/api/v1/query_range", handler)
    server = await aiohttp_server(app)
    return str(server.make_url("")).rstrip("/")


@pytest.mark.parametrize(
    ("handler", "code", "words"),
    [
        (_bad_query, "prometheus", "parse error at char 5"),
        (_html, "prometheus", "without JSON"),
        (_slow, "prometheus_timeout", "did not answer within 0.5 s"),
    ],
)
async def test_a_failing_prometheus_raises_only_prometheus_error(
    aiohttp_server: Callable[..., Awaitable[Any]], handler: Any, code: str, words: str
) -> None:
    client = PrometheusClient(await _start(aiohttp_server, handler), timeout_s=0.5)
    try:
        with pytest.raises(PrometheusError) as info:
            await client.query_range("up", start=NOW, end=NOW, step_s=60)
    finally:
        await client.close()
    assert info.value.code == code and words in str(info.value)


async def test_an_unreachable_prometheus_raises_prometheus_error() -> None:
    client = PrometheusClient("http://127.0.0.1:9", timeout_s=2)
    try:
        with pytest.raises(PrometheusError) as info:
            await client.query_range("up", start=NOW, end=NOW, step_s=60)
    finally:
        await client.close()
    assert info.value.code == "prometheus_unreachable" and "prometheus.url" in str(info.value)


async def test_the_history_service_gives_up_at_its_deadline_with_one_gap(
    aiohttp_server: Callable[..., Awaitable[Any]],
) -> None:
    client = PrometheusClient(await _start(aiohttp_server, _slow), timeout_s=10)
    service = HistoryService(client, timeout_s=0.5)
    started = time.monotonic()
    try:
        history = await service.fetch("gpu-node-01", now=NOW)
    finally:
        await service.close()
    assert time.monotonic() - started < SLOW_S / 2  # it gave up; it did not wait for the answer
    assert history is not None and history.series == []
    assert [g.source for g in history.gaps] == ["prometheus"]
    assert "did not answer within 0.5 s" in history.gaps[0].reason


async def test_without_a_url_there_is_no_history_and_no_request() -> None:
    assert await HistoryService(None).fetch("gpu-node-01", now=NOW) is None


def test_prometheus_settings_come_from_the_environment_and_are_checked() -> None:
    from bot.config import load_settings
    from bot.errors import ConfigError

    settings = load_settings(
        {"GPUNODE_PROMETHEUS__URL": "http://prom:9090", "GPUNODE_PROMETHEUS__TIMEOUT_S": "2.5"}
    )
    assert settings.prometheus.url == "http://prom:9090"
    assert (settings.prometheus.timeout_s, settings.prometheus.window_s) == (2.5, 6 * 3600)
    with pytest.raises(ConfigError, match=r"prometheus\.timeout_s"):
        load_settings({"GPUNODE_PROMETHEUS__TIMEOUT_S": "60"})
    assert load_settings({}).prometheus.url is None


async def test_a_service_built_without_a_url_asks_nobody() -> None:
    from bot.config import PrometheusSettings

    service = HistoryService.from_settings(PrometheusSettings())
    assert await service.fetch("gpu-node-01", now=NOW) is None
    await service.close()


async def _no_matrix(request: web.Request) -> web.Response:
    return web.json_response({"status": "success", "data": {"resultType": "vector", "result": []}})


@pytest.mark.parametrize("handler", [_bad_query, _html, _slow, _no_matrix, None])
async def test_a_failing_prometheus_is_a_gap_worded_in_every_locale(
    aiohttp_server: Callable[..., Awaitable[Any]], handler: Any
) -> None:
    """The history's gap carries the error's code and params: an English reader reads the
    error's own text; Chinese and pseudo-locale readers read catalog words, the URL and what
    Prometheus said quoted as they were."""
    url = await _start(aiohttp_server, handler) if handler else "http://127.0.0.1:9"
    service = HistoryService(PrometheusClient(url, timeout_s=0.5), timeout_s=30)
    try:
        history = await service.fetch("gpu-node-01", now=NOW)
    finally:
        await service.close()
    assert history is not None
    (gap,) = [g for g in history.gaps if g.source == "prometheus"]
    assert gap.code.startswith("prometheus_"), gap
    assert gap_text(gap.code, gap.params, "«none»", "en") == gap.reason
    for locale in ("zh-CN", "en-XA"):
        words = gap_text(gap.code, gap.params, "«none»", locale)
        for quoted in ("url", "error"):
            words = words.replace(str(gap.params.get(quoted, "")) or "\0", " ")
        assert english_words(words) == [], words
