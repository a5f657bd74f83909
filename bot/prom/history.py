"""Memory history for a diagnosis: Prometheus series and markers, within a short deadline.

``HistoryService`` is the ``HistoryPort`` of ``bot.services.ports``: ``fetch(node, now=...)``
runs every query of ``bot.prom.queries`` at once and returns a ``History``
(``bot.core.diagnosis.history``) whatever happens: a series nobody scrapes, a query Prometheus
refuses, Prometheus unreachable or slower than ``timeout_s`` are gaps in it, never errors.
The diagnose service starts ``fetch`` together with the diagnostic Job and waits for
it only after the Job, so Prometheus never delays a diagnosis past ``timeout_s``.

``attach`` (re-exported from ``bot.core.diagnosis.rules.growth``, pure) adds the snapshot's markers
(kernel log, evictions) and the growth of the verdict's leading consumer.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Protocol

from bot.config import PrometheusSettings
from bot.core.diagnosis.dcgm import DcgmAttempt, pod_memory, samples_as_series
from bot.core.diagnosis.history import History, Marker, Series, SeriesKind
from bot.core.diagnosis.rules.growth import attach
from bot.core.model.evidence import Gap
from bot.errors import PrometheusError
from bot.prom.client import PrometheusClient, Sample
from bot.prom.queries import Query, gpu_memory_query, node_queries

MIB = 1024**2
__all__ = ["HistoryService", "RangeQuerier", "attach", "build_series"]


class RangeQuerier(Protocol):
    async def query_range(
        self, expr: str, *, start: datetime, end: datetime, step_s: float
    ) -> list[Sample]: ...


def _series(
    key: str,
    kind: SeriesKind,
    label: str,
    q: Query,
    s: Sample,
    *,
    scale: float = 1.0,
    unit: str = "bytes",
) -> Series:
    return Series.model_validate(
        {
            "key": key,
            "kind": kind,
            "label": label,
            "unit": unit,
            "source": f"prometheus:{q.metric}",
            "timestamps_s": [t for t, _ in s.points],
            "values": [v * scale for _, v in s.points],
        }
    )


_NODE: dict[str, tuple[str, SeriesKind, str, str]] = {
    "mem_total": ("node:mem_total", "mem_total", "total", "bytes"),
    "mem_available": ("node:mem_available", "mem_available", "available", "bytes"),
    "slab_unreclaimable": (
        "node:slab_unreclaimable",
        "kernel_slab_unreclaimable",
        "kernel slab (unreclaimable)",
        "bytes",
    ),
    "page_cache": ("node:page_cache", "page_cache", "page cache", "bytes"),
    "psi_full_rate": ("node:psi_full_rate", "psi_full_rate", "memory stall (PSI full)", "ratio"),
    "oom_kills": ("node:oom_kills", "oom_kills", "OOM kills (vmstat)", "count"),
}


def _gpu_order(label: str) -> tuple[int, str]:
    return (int(label), "") if label.isdigit() else (1 << 30, label)


def _increases(s: Sample) -> list[tuple[float, float]]:
    return [(t, v) for (_, prev), (t, v) in zip(s.points, s.points[1:], strict=False) if v > prev]


def build_series(
    results: dict[str, tuple[Query, list[Sample]]],
) -> tuple[list[Series], list[Marker]]:
    """Series and Prometheus-side markers from the query results (pure)."""
    series: list[Series] = []
    markers: list[Marker] = []
    for name, (key, kind, label, unit) in _NODE.items():
        if name in results and results[name][1]:
            q, samples = results[name]
            series.append(_series(key, kind, label, q, samples[0], unit=unit))
    if "pods" in results:
        q, samples = results["pods"]
        for s in sorted(
            samples, key=lambda x: (x.labels.get("namespace", ""), x.labels.get("pod", ""))
        ):
            who = f"{s.labels.get('namespace', '?')}/{s.labels.get('pod', '?')}"
            series.append(_series(f"pod:{who}", "pod_working_set", who, q, s))
    if "gpu_fb_used" in results:
        q, samples = results["gpu_fb_used"]
        for s in sorted(samples, key=lambda x: _gpu_order(x.labels.get("gpu", ""))):
            gpu = s.labels.get("gpu", "?")
            series.append(_series(f"gpu:{gpu}", "gpu_memory_used", f"GPU {gpu}", q, s, scale=MIB))
    if "gpu_xid" in results:
        q, samples = results["gpu_xid"]
        for s in samples:
            gpu = s.labels.get("gpu", "?")
            for t, v in _changes(s):
                code = int(v)
                markers.append(_marker(t, "xid", f"GPU {gpu}", f"XID {code}", q, code=code))
    oom_killed = {
        _container(s.labels)
        for s in results.get("oom_killed", (None, []))[1]
        if s.points and s.points[-1][1] > 0
    }
    if "restarts" in results:
        q, samples = results["restarts"]
        for s in samples:
            who = _container(s.labels)
            killed = who in oom_killed
            label = "restart (OOMKilled)" if killed else "restart"
            reason = {"reason": "OOMKilled"} if killed else {}
            for t, _ in _increases(s):
                markers.append(_marker(t, "restart", who, label, q, **reason))
    if "oom_kills" in results and results["oom_kills"][1]:
        q, samples = results["oom_kills"]
        for t, _ in _increases(samples[0]):
            label = "OOM kill (node_vmstat_oom_kill)"
            markers.append(_marker(t, "oom_kill", "node", label, q, counter="node_vmstat_oom_kill"))
    return series, markers


def _changes(s: Sample) -> list[tuple[float, float]]:
    out, prev = [], 0.0
    for t, v in s.points:
        if v and v != prev:
            out.append((t, v))
        prev = v
    return out


def _container(labels: dict[str, str]) -> str:
    return f"{labels.get('namespace', '?')}/{labels.get('pod', '?')}/{labels.get('container', '?')}"


def _marker(t: float, kind: str, subject: str, label: str, q: Query, **params: object) -> Marker:
    return Marker.model_validate(
        {
            "at": datetime.fromtimestamp(t, UTC),
            "kind": kind,
            "subject": subject,
            "label": label,
            "source": f"prometheus:{q.metric}",
            "params": params,
        }
    )


class HistoryService:
    """Fetches one node's history from Prometheus; ``client`` None = no Prometheus configured."""

    def __init__(
        self,
        client: RangeQuerier | None,
        *,
        window_s: float = 6 * 3600,
        step_s: float = 60,
        timeout_s: float = 3.0,
    ) -> None:
        self._client = client
        self._window = timedelta(seconds=window_s)
        self._step = step_s
        self._timeout = timeout_s

    async def fetch(self, node: str, *, now: datetime) -> History | None:
        """The node's history over the window ending ``now``; None without Prometheus."""
        if self._client is None:
            return None
        start = now - self._window
        queries = node_queries(node)
        gaps: list[Gap] = []
        try:
            answers = await asyncio.wait_for(
                asyncio.gather(
                    *(self._one(q, start, now) for q in queries), return_exceptions=True
                ),
                self._timeout,
            )
        except TimeoutError:
            gaps.append(
                Gap(
                    source="prometheus",
                    reason=f"Prometheus did not answer within {self._timeout:g} s; the "
                    "diagnosis went on without history (raise prometheus.timeout_s)",
                    code="prometheus_timeout",
                    params={"timeout_s": f"{self._timeout:g}"},
                )
            )
            answers = []
        results: dict[str, tuple[Query, list[Sample]]] = {}
        reasons: set[str] = set()
        for q, answer in zip(queries, answers, strict=False):
            if isinstance(answer, PrometheusError):
                if str(answer) not in reasons:  # one gap for "unreachable", not ten
                    reasons.add(str(answer))
                    # its key and params are the gap's code and params: worded per locale
                    params = {k: v for k, v in answer.params.items() if isinstance(v, str | int)}
                    gaps.append(
                        Gap(source="prometheus", reason=str(answer), code=answer.key, params=params)
                    )
            elif isinstance(answer, BaseException):
                raise answer
            elif not answer:
                gaps.append(
                    Gap(
                        source=f"prometheus:{q.metric}",
                        reason=f"no {q.metric} series for node {node}: is {q.exporter} "
                        "scraped, with the labels the README documents?",
                        code="prometheus_no_series",
                        params={"metric": q.metric, "node": node, "exporter": q.exporter},
                    )
                )
            else:
                results[q.key] = (q, answer)
        series, markers = build_series(results)
        return History(
            node=node,
            source="prometheus",
            start=start,
            end=now,
            step_s=self._step,
            series=series,
            markers=markers,
            gaps=gaps,
        )

    async def pod_gpu_memory(self, node: str, *, now: datetime) -> DcgmAttempt:
        """The third GPU-evidence rung through Prometheus: dcgm-exporter's latest per-pod
        framebuffer figures on ``node`` (``bot.core.diagnosis.dcgm``), or why there are none."""
        way = "Prometheus"
        if self._client is None:
            return not_asked()
        start = now - timedelta(seconds=self._step)
        try:
            samples = await asyncio.wait_for(
                self._client.query_range(
                    gpu_memory_query(node), start=start, end=now, step_s=self._step
                ),
                self._timeout,
            )
        except TimeoutError:
            return DcgmAttempt(
                way,
                failure=f"no answer within {self._timeout:g} s",
                via="prometheus",
                code="no_answer_within",
                params={"timeout_s": f"{self._timeout:g}"},
            )
        except PrometheusError as exc:  # its key is a gap code: worded as the history's gap
            said = {f"cause_{k}": v for k, v in exc.params.items() if isinstance(v, str | int)}
            return DcgmAttempt(
                way,
                failure=str(exc),
                via="prometheus",
                code="prometheus_failed" if exc.key else "",
                params={**said, "cause": exc.key},
            )
        latest = [(s.labels, s.points[-1][1]) for s in samples if s.points]
        if not latest:
            return DcgmAttempt(
                way,
                failure=f"no DCGM_FI_DEV_FB_USED series with Hostname={node!r} in the "
                "last step: is dcgm-exporter scraped, with the labels the README documents?",
                via="prometheus",
                code="no_series_for_node",
                params={"node": node},
            )
        return pod_memory(samples_as_series(latest), way=way, via="prometheus")

    @classmethod
    def from_settings(cls, settings: PrometheusSettings) -> HistoryService:
        """A service over a real client when ``prometheus.url`` is set, else a no-op one."""
        client = None
        if settings.url:
            token = settings.bearer_token.get_secret_value() if settings.bearer_token else None
            client = PrometheusClient(
                settings.url,
                timeout_s=settings.timeout_s,
                bearer_token=token,
                verify_tls=settings.verify_tls,
            )
        return cls(
            client,
            window_s=settings.window_s,
            step_s=settings.step_s,
            timeout_s=settings.timeout_s,
        )

    async def close(self) -> None:
        close = getattr(self._client, "close", None)
        if close is not None:
            await close()

    async def _one(self, q: Query, start: datetime, end: datetime) -> list[Sample]:
        assert self._client is not None
        return await self._client.query_range(q.expr, start=start, end=end, step_s=self._step)


def not_asked() -> DcgmAttempt:
    """Prometheus was not asked for dcgm-exporter's figures: no ``prometheus.url``."""
    return DcgmAttempt(
        "Prometheus",
        failure="not asked: prometheus.url is not set",
        via="prometheus",
        code="prometheus_not_set",
    )
