"""``Metrics``: every metric gpunode exports, behind small typed methods.

Names follow Prometheus' conventions: prefix ``gpunode_``, base units in the name
(``_seconds``), ``_total`` on counters. Label values come from closed sets (command verbs,
outcomes, error codes, Slack error strings, HTTP verbs and statuses, API resources,
store operations), never from user input, so the number of series stays bounded.

The exported names are listed in ``EXPORTED``; the Grafana dashboard and the bot-health
rules in deploy/ are checked against what a live bot actually exports
(tests/telemetry/test_dashboard_and_rules_names.py).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    Info,
    disable_created_metrics,
)
from prometheus_client.exposition import choose_encoder
from prometheus_client.process_collector import ProcessCollector

import bot

log = logging.getLogger(__name__)

#: a diagnosis runs a Job on the node: from about a second (the stand-in, a warm node) to
#: the Job's deadline (``kube.job_timeout_s``, 120 s by default); finer below 30 s, where
#: most real diagnoses land
DIAGNOSIS_BUCKETS_S = (0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 45, 60, 90, 120, 180)
#: one SQLite statement is sub-millisecond; a queued write behind an evidence snapshot, or
#: a PostgreSQL round trip, is milliseconds; a second means trouble
#: event-loop lag: a healthy loop answers within a millisecond or two; Slack drops a slash
#: command whose ack takes more than 3 s, so the buckets reach past that
LOOP_LAG_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)
STORE_BUCKETS_S = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5)

#: every metric family this module defines (as they appear in a scrape, before suffixes)
EXPORTED = (
    "gpunode_build_info",
    "gpunode_commands_total",
    "gpunode_diagnosis_duration_seconds",
    "gpunode_actions_total",
    "gpunode_approvals_pending",
    "gpunode_slack_api_requests_total",
    "gpunode_slack_api_errors_total",
    "gpunode_kube_api_requests_total",
    "gpunode_kube_api_errors_total",
    "gpunode_store_operation_duration_seconds",
    "gpunode_leader",
    "gpunode_lease_holder_info",
    "gpunode_event_loop_lag_seconds",
)

Refresher = Callable[[], Awaitable[None]]


class Metrics:
    """One bot's metrics. Cheap to create; every method is safe from any thread (the
    Kubernetes client runs in worker threads) and never raises into the caller's work."""

    def __init__(self) -> None:
        # no ``*_created`` series: they double the scrape and no query here reads them (the
        # switch is the client's, process-wide; every Metrics wants it off)
        disable_created_metrics()  # type: ignore[no-untyped-call]
        self.registry = CollectorRegistry(auto_describe=True)
        reg = self.registry
        ProcessCollector(registry=reg)  # process_cpu_seconds_total, resident memory, fds
        Info("gpunode_build", "gpunode version", registry=reg).info({"version": bot.__version__})
        self._commands = Counter(
            "gpunode_commands",
            "Slash commands handled, by command verb and outcome (ok, usage_error, "
            "channel_not_served, denied, failed)",
            ["command", "outcome"],
            registry=reg,
        )
        self._diagnosis = Histogram(
            "gpunode_diagnosis_duration_seconds",
            "Diagnoses run (diagnostic Job, analysis, thread posts), by outcome (ok, failed, "
            "error) and failure code (none when ok)",
            ["outcome", "failure_code"],
            buckets=DIAGNOSIS_BUCKETS_S,
            registry=reg,
        )
        self._actions = Counter(
            "gpunode_actions",
            "Audited action decisions, by tier, step (request, dry_run, apply, execute, undo, "
            "approval, ...) and outcome (the audit decision: allowed, executed, failed, "
            "refused, denied, expired, ...)",
            ["tier", "step", "outcome"],
            registry=reg,
        )
        self._approvals = Gauge(
            "gpunode_approvals_pending",
            "Approval requests waiting for an approver (read from the store at each scrape)",
            registry=reg,
        )
        self._slack_requests = Counter(
            "gpunode_slack_api_requests",
            "Slack Web API calls made, by method (after the client's own retries)",
            ["method"],
            registry=reg,
        )
        self._slack_errors = Counter(
            "gpunode_slack_api_errors",
            "Slack Web API calls that failed, by method, HTTP status (0: no answer) and Slack "
            "error code (e.g. channel_not_found, ratelimited; connection_error, timeout)",
            ["method", "status", "error"],
            registry=reg,
        )
        self._kube_requests = Counter(
            "gpunode_kube_api_requests",
            "Kubernetes API requests made, by HTTP verb and resource (pods, pods/eviction, ...)",
            ["verb", "resource"],
            registry=reg,
        )
        self._kube_errors = Counter(
            "gpunode_kube_api_errors",
            "Kubernetes API requests that failed, by HTTP verb, resource and HTTP status "
            "(0: no answer: connection refused, timeout)",
            ["verb", "resource", "status"],
            registry=reg,
        )
        self._store = Histogram(
            "gpunode_store_operation_duration_seconds",
            "Incident store operations, by operation, including the wait for the store's thread",
            ["operation"],
            buckets=STORE_BUCKETS_S,
            registry=reg,
        )
        self._leader = Gauge(
            "gpunode_leader",
            "1 when this replica holds the Lease that runs background work, else 0",
            registry=reg,
        )
        self._holder = Info(
            "gpunode_lease_holder",
            "Who holds the Lease, as this replica last saw it (holder is empty when nobody does)",
            registry=reg,
        )
        self._loop_lag = Histogram(
            "gpunode_event_loop_lag_seconds",
            "How late the event loop ran a timer it was asked to run (bot.telemetry.lag): "
            "time the loop spent blocked, when no ack or reply could be sent",
            buckets=LOOP_LAG_BUCKETS_S,
            registry=reg,
        )
        self._refreshers: list[Refresher] = []
        self.set_leader(None, False)

    # -- what the services and edges report ------------------------------------------------
    def command(self, command: str, outcome: str) -> None:
        self._commands.labels(command=command, outcome=outcome).inc()

    def diagnosis(self, duration_s: float, *, outcome: str, failure_code: str = "none") -> None:
        self._diagnosis.labels(outcome=outcome, failure_code=failure_code).observe(
            max(duration_s, 0.0)
        )

    def action(self, *, tier: int | str, step: str, outcome: str) -> None:
        self._actions.labels(tier=str(tier), step=step, outcome=outcome).inc()

    def slack_api_call(self, method: str, *, status: int | None, error: str | None) -> None:
        """One Web API call ended: ``error`` None means it succeeded."""
        self._slack_requests.labels(method=method).inc()
        if error is not None:
            self._slack_errors.labels(method=method, status=str(status or 0), error=error).inc()

    def kube_api_call(self, verb: str, resource: str, status: int | None) -> None:
        """One API request ended with HTTP ``status`` (None: no answer came)."""
        self._kube_requests.labels(verb=verb, resource=resource).inc()
        if status is None or not 200 <= status <= 399:
            self._kube_errors.labels(verb=verb, resource=resource, status=str(status or 0)).inc()

    def store_operation(self, operation: str, duration_s: float) -> None:
        self._store.labels(operation=operation).observe(max(duration_s, 0.0))

    def event_loop_lag(self, lag_s: float) -> None:
        self._loop_lag.observe(max(lag_s, 0.0))

    def set_approvals_pending(self, count: int) -> None:
        self._approvals.set(count)

    def set_leader(self, identity: str | None, me: bool) -> None:
        """The Lease as this replica sees it: ``identity`` holds it (None: nobody), and
        ``me`` says whether that is this replica. Called by the leader election; a single
        replica without one calls it once at start with its own id and ``me=True``."""
        self._leader.set(1 if me else 0)
        self._holder.info({"holder": identity or ""})

    # -- exposition ------------------------------------------------------------------------
    def on_scrape(self, refresh: Refresher) -> None:
        """Run ``refresh`` before each scrape (gauges read from the store)."""
        self._refreshers.append(refresh)

    async def render(self, accept: str = "") -> tuple[bytes, str]:
        """The scrape body and its Content-Type, negotiated from the Accept header as the
        official client does (the classic text format 0.0.4 unless asked otherwise). A
        refresher that fails leaves its gauge at the last value and logs why."""
        for refresh in self._refreshers:
            try:
                await refresh()
            except Exception:
                log.exception("a metrics refresher failed; its gauge keeps its last value")
        encode, content_type = choose_encoder(accept)
        return encode(self.registry), content_type
