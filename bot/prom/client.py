"""A small async Prometheus HTTP API client: ``query_range`` and ``query``.

``GET /api/v1/query_range?query=..&start=..&end=..&step=..`` returns ``{"status":
"success", "data": {"resultType": "matrix", "result": [{"metric": {...}, "values": [[t,
"v"], ...]}]}}``; errors are ``{"status": "error", "errorType": ..., "error": ...}`` with
HTTP 400/422/503. Every failure (connection refused, timeout, bad status, bad JSON) becomes a
``PrometheusError`` with what to check; no aiohttp exception leaves this module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import aiohttp

from bot.errors import PrometheusError


@dataclass(frozen=True)
class Sample:
    """One series of a range query: its labels and its (unix seconds, value) points."""

    labels: dict[str, str]
    points: list[tuple[float, float]]


class PrometheusClient:
    """One per process; ``close()`` when done. ``timeout_s`` bounds each request."""

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = 3.0,
        bearer_token: str | None = None,
        verify_tls: bool = True,
    ) -> None:
        self._base = url.rstrip("/")
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._headers = {"Authorization": f"Bearer {bearer_token}"} if bearer_token else {}
        self._ssl = verify_tls  # True: verify with the default context; False: do not
        self._session: aiohttp.ClientSession | None = None

    async def _get(self, path: str, params: dict[str, str]) -> Any:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self._timeout, headers=self._headers)
        url = f"{self._base}{path}"
        try:
            async with self._session.get(url, params=params, ssl=self._ssl) as resp:
                try:
                    body = await resp.json(content_type=None)
                except (ValueError, aiohttp.ContentTypeError) as exc:
                    raise PrometheusError(
                        f"Prometheus at {self._base} answered HTTP {resp.status} without JSON; "
                        "check prometheus.url points at the Prometheus API",
                        key="prometheus_not_json",
                        params={"url": self._base, "status": resp.status},
                    ) from exc
        except TimeoutError as exc:
            raise PrometheusError(
                f"Prometheus at {self._base} did not answer within "
                f"{self._timeout.total:g} s; raise prometheus.timeout_s or check its load",
                code="prometheus_timeout",
                key="prometheus_slow",
                params={"url": self._base, "timeout_s": f"{self._timeout.total:g}"},
            ) from exc
        except aiohttp.ClientError as exc:
            raise PrometheusError(
                f"cannot reach Prometheus at {self._base} ({exc}); check prometheus.url",
                code="prometheus_unreachable",
                key="prometheus_unreachable",
                params={"url": self._base, "error": str(exc)},
            ) from exc
        if not isinstance(body, dict) or body.get("status") != "success":
            error = body.get("error") if isinstance(body, dict) else None
            said = str(error or repr(body))
            raise PrometheusError(
                f"Prometheus refused the query: {said}; check the query and Prometheus's log",
                key="prometheus_refused",
                params={"error": said},
            )
        return body.get("data")

    async def query_range(
        self, expr: str, *, start: datetime, end: datetime, step_s: float
    ) -> list[Sample]:
        data = await self._get(
            "/api/v1/query_range",
            {
                "query": expr,
                "start": f"{start.timestamp():.3f}",
                "end": f"{end.timestamp():.3f}",
                "step": f"{step_s:g}",
            },
        )
        if not isinstance(data, dict) or data.get("resultType") != "matrix":
            raise PrometheusError(
                "Prometheus returned no matrix for a range query; check that prometheus.url "
                "points at the Prometheus API",
                key="prometheus_no_matrix",
            )
        out = []
        for item in data.get("result") or []:
            points = [
                (float(t), float(v)) for t, v in item.get("values") or [] if math.isfinite(float(v))
            ]
            out.append(Sample(labels=dict(item.get("metric") or {}), points=points))
        return out

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
