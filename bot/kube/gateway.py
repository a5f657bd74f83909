"""``Gateway``: the async face of ``bot.kube``; implements ``bot.services.ports.KubePort``.

Every client call runs on the gateway's own threads and every client exception is translated
(``bot.kube.errors``) before it leaves this module. One diagnosis runs per node at a time:
concurrent ``run_diagnostic`` calls for a node share one Job.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import functools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, TypeVar

from kubernetes import client

from bot.config import KubeSettings
from bot.core.diagnosis import dcgm
from bot.core.diagnosis.allocation import allocated_resources, describe_allocated
from bot.core.diagnosis.attribution import norm_uid
from bot.core.governance.impersonation import ActingAs
from bot.core.model.changes import Change, EnvValues, EvictionOutcome, ResourceValues
from bot.core.model.cluster import BudgetInfo, ClusterView, NodeInfo, NodeLoad, RoomOnNode
from bot.core.model.evidence import EvidenceBundle
from bot.core.model.quoted_errors import flat_error
from bot.core.remedies.rollouts import DRA_PREFIX
from bot.core.remedies.watching import RolloutProgress
from bot.errors import DiagnosticJobError, GpunodeError, KubeUnavailableError, NotFoundError
from bot.kube import (
    anchoring,
    cutting,
    dra,
    draining,
    gpuevidence,
    jobs,
    objects,
    patching,
    preflight,
    prioritizing,
    reading,
    resident,
    resizing,
    selections,
    selectors,
    selfcheck,
    tallying,
    unanswered,
    watching,
)
from bot.kube import dcgm as kube_dcgm
from bot.kube.connecting import build_api_client
from bot.kube.cutting import FleetShare, MetricsPage, PodRecord
from bot.kube.decoding import PageDecoder
from bot.kube.doing import Doing
from bot.kube.errors import refused_as, translate
from bot.kube.informing import Informer, slim_event
from bot.kube.observing import KubeObserver
from bot.kube.ownerrecords import (
    BUDGETS_PATH,
    INFORMED_CONTROLLERS,
    api_version,
    budget_records_page,
    budget_text,
    controller_records_page,
    controller_text,
    read_record,
)
from bot.kube.pages import gc_paused
from bot.kube.reading import OwnerCache
from bot.kube.rollouts import with_settings_keys
from bot.kube.surveying import survey
from bot.kube.tallying import FleetTally, NodeShare
from bot.kube.transport import ACTING_AS, Transport

log = logging.getLogger(__name__)
T = TypeVar("T")
#: concurrent API calls to one cluster: a diagnosis makes a few at once, `top` three, a
#: watch one per rollout or Job; 16 (asyncio.to_thread's pool on 12 cores) leaves room
THREADS_PER_CLUSTER = 16
#: seconds each watch of the pod-events informer lasts before it resumes
EVENTS_WATCH_S = 300
#: ... and of the pods and nodes informers (as client-go's reflector: 5-10 minutes), and of
#: the owner informers
FLEET_WATCH_S = 300
#: the owner informers' key for the PodDisruptionBudgets' (the others' is their kind)
BUDGETS = "PodDisruptionBudget"
Obj = dict[str, Any]


def _retrieved(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


class Gateway:
    """Talks to one cluster. Build with ``Gateway.from_settings(settings.kube)``."""

    def __init__(self, api_client: client.ApiClient, settings: KubeSettings) -> None:
        self.transport = Transport(api_client, timeout_s=settings.request_timeout_s)
        self.settings = settings
        # this cluster's own threads: a hung API server blocks only its own calls, never
        # the other clusters' (asyncio.to_thread would share one pool among all of them)
        self._threads = ThreadPoolExecutor(
            max_workers=THREADS_PER_CLUSTER, thread_name_prefix="gpunode-kube"
        )
        self._diagnoses: dict[str, asyncio.Task[EvidenceBundle]] = {}
        self._waiters: dict[str, int] = {}
        self._discovery: tuple[str | None, set[str]] | None = None
        #: the person this view acts as (``impersonating``); None: the bot itself
        self.acting: ActingAs | None = None
        self._answers: dict[str, tuple[float, Any]] = {}
        self._tally: tuple[float, FleetTally] | None = None
        self._tally_task: asyncio.Future[FleetTally] | None = None
        self._writes = 0  # real writes made through this gateway
        self._tally_writes = 0  # ... when the fleet read in flight started
        self._decoder = PageDecoder()
        #: controllers read by owner-chain walks and each owner's pods elsewhere, shared by
        #: the diagnoses for ``fleet_cache_s`` (started, writes then, answers)
        self._owners: tuple[float, int, OwnerCache] | None = None
        #: built-in controllers' own controller references, for ``discovery_cache_s``: the
        #: chains of the gangs' candidate members (``_member_chains``)
        self._controller_refs = reading.ControllerRefs(settings.discovery_cache_s)
        #: pod events of every namespace, listed then watched (``informers=True``); None:
        #: each diagnosis lists its namespaces' events
        self._events: Informer[Obj] | None = None
        self.informers = False
        self.events_watch_s = EVENTS_WATCH_S
        #: every pod and node in slim records, listed then watched (``informers=True``): the
        #: fleet (`top`, the plans' room) is summed from memory while they are synced
        self._fleet_informers: tuple[Informer[PodRecord], Informer[Obj]] | None = None
        self.fleet_watch_s = FLEET_WATCH_S
        #: every built-in controller an owner chain walks through, and every
        #: PodDisruptionBudget, in slim records (``bot.kube.ownerrecords``), listed then
        #: watched (``informers=True``): a diagnosis reads its pods' owners and its
        #: namespaces' budgets from memory, however long since the last one (issue #25)
        self._owner_informers: dict[str, Informer[str]] | None = None
        #: the fleet summed from the informers: (pods generation, nodes generation, drivers)
        self._summed: tuple[tuple[int, int, object], FleetTally] | None = None
        #: parsed GPU nodes by (name, resourceVersion, DRA drivers), reused while unchanged
        self._node_infos: dict[tuple[str, str, tuple[str, ...]], NodeInfo | None] = {}
        self._written_at = 0.0  # ``time.monotonic()`` of this gateway's last real write
        self._summing = threading.Lock()

    def impersonating(self, acting: ActingAs) -> Gateway:
        """A view of this gateway whose calls impersonate ``acting`` (same connections and
        threads): the cluster's RBAC decides, and a 403 says who may not do what."""
        view = copy.copy(self)
        view.acting = acting
        return view

    @classmethod
    def from_settings(cls, settings: KubeSettings, *, informers: bool = False) -> Gateway:
        """``informers``: keep the cluster's pod events in an informer (list, then watch),
        started by the first diagnosis, so the next ones read no events but the node's:
        for a long-running bot (``gpunode serve``), not a one-shot command."""
        gateway = cls(build_api_client(settings), settings)
        gateway.informers = informers
        return gateway

    @property
    def cluster_name(self) -> str:
        """How reports name the cluster: the kubeconfig context, else the API server URL."""
        s = self.settings
        return s.context or s.server or ("in-cluster" if s.mode == "in_cluster" else "")

    def observe_api(self, observer: KubeObserver | None) -> None:
        """Tell ``observer`` the verb, resource and status of every API request this gateway
        makes (the bot's metrics count API errors so); the diagnostic Job's pod watch is
        reported as verb ``WATCH`` when it ends."""
        self.transport.observer = observer

    def close(self) -> None:
        """Drop queued calls, let running ones end (each within the request timeout, as
        ``asyncio.run`` waits for ``to_thread`` calls), then close the connections."""
        if self._events is not None:
            self._events.stop()
        for informer in [*(self._fleet_informers or ()), *(self._owner_informers or {}).values()]:
            informer.stop()
        self._threads.shutdown(wait=True, cancel_futures=True)
        self._decoder.close()
        self.transport.api_client.close()  # type: ignore[no-untyped-call]

    async def _call(self, what: Doing, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a sync client function in a thread; translate what it raises.

        Every effect takes ``dry_run``; with ``dry_run=False`` it is a real write, and a
        write that got no answer may still have been applied (the error says so)."""
        if kwargs.get("dry_run") is False:
            # our own write: the next fleet read must see it
            held: list[Any] = [self._tally]
            self._tally = None
            if self._tally_task is not None and self._tally_task.done():
                held.append(self._tally_task)  # it holds the tally as its result
                self._tally_task = None
            self._let_go_off_loop(held)
            self._writes += 1
            self._written_at = time.monotonic()
        try:
            loop = asyncio.get_running_loop()
            call = functools.partial(fn, self.transport, *args, **kwargs)
            context = contextvars.copy_context()
            context.run(ACTING_AS.set, self.acting)
            return await loop.run_in_executor(self._threads, context.run, call)
        except GpunodeError:
            raise
        except Exception as exc:
            if self.acting is not None and (refusal := refused_as(exc, self.acting.user)):
                raise refusal from exc
            raise translate(
                exc, what=what, write=kwargs.get("dry_run") is False, cluster=self.cluster_name
            ) from exc

    # -- reads --------------------------------------------------------------------------
    async def read_node(self, node: str) -> Obj:
        return await self._call(Doing.of("read_node", node=node), reading.read_node, node)

    async def get_node(self, node: str) -> NodeInfo:
        raw, drivers = await asyncio.gather(self.read_node(node), self._dra_drivers(node))
        return objects.parse_node(raw, dra_drivers=drivers.get(node, []))

    async def _dra_drivers(self, node: str | None = None) -> dict[str, list[str]]:
        """node -> DRA drivers with ResourceSlices there (of ``node`` only, when given).
        Optional evidence: a failing read leaves DRA nodes to their extended resources."""
        what = Doing.of("list_slices_of", node=node) if node else Doing.of("list_slices")
        try:
            return dra.drivers_by_node(await self._call(what, dra.list_slices, node))
        except GpunodeError as exc:
            if isinstance(exc, KubeUnavailableError) and exc.status is None:
                raise  # no answer at all: the cluster is out of reach, the command says so
            log.warning("%s failed: %s", what, exc)
            return {}

    async def list_gpu_nodes(self) -> list[NodeInfo]:
        nodes, drivers = await asyncio.gather(
            self._call(Doing.of("list_nodes"), reading.list_nodes), self._dra_drivers()
        )
        parsed = [
            objects.parse_node(n, dra_drivers=drivers.get(n["metadata"]["name"], [])) for n in nodes
        ]
        return [n for n in parsed if n.has_gpus]

    async def _metrics(
        self, groups: dict[str, str], namespaces: list[str] | None = None
    ) -> list[Obj] | None:
        """Pod metrics of ``namespaces`` (one list each), or None when not served/failing."""
        version = groups.get(reading.METRICS_GROUP)
        if not version:
            return None
        try:
            return await self._call(
                Doing.of("list_pod_metrics"), reading.list_pod_metrics, version, namespaces or []
            )
        except GpunodeError as exc:  # served but failing: metrics are optional evidence
            log.warning("metrics.k8s.io is served but failed: %s", exc)
            return None

    async def _cached(self, key: str, what: Doing, fn: Callable[..., T], *args: Any) -> T:
        """A cluster-wide answer that rarely changes (discovery, version, priority classes),
        read at most once per ``discovery_cache_s`` and shared by every diagnosis."""
        hit = self._answers.get(key)
        now = time.monotonic()
        if hit is not None and now - hit[0] < self.settings.discovery_cache_s:
            return hit[1]  # type: ignore[no-any-return]
        value = await self._call(what, fn, *args)
        self._answers[key] = (now, value)
        return value

    def _owner_chains(
        self, t: Transport, pods: list[Obj], cache: dict[tuple[str, str, str], Obj | None]
    ) -> list[list[Any]]:
        held = self._owner_lookup()
        return [reading.owner_chain(t, p, cache, held) for p in pods]

    def _member_chains(
        self, t: Transport, pods: list[Obj], cache: dict[tuple[str, str, str], Obj | None]
    ) -> list[list[Any]]:
        """The owner chains of the gangs' candidate members (one pod per distinct direct
        owner, ``bot.kube.members``), through the controller references kept for
        ``discovery_cache_s`` (``reading.ControllerRefs``). A view acting as a person walks
        through its own owner cache only: their RBAC decides."""
        if self.acting is not None:
            return self._owner_chains(t, pods, cache)
        return self._controller_refs.chains(t, pods, cache, self._owner_lookup())

    async def fleet(self, *, max_age_s: float | None = None) -> FleetTally:
        """Every node's sums and room in slim records (``bot.kube.tallying``).

        With informers (``informers=True``, the bot itself): summed from the pods and nodes
        informers' memory, no list call (the first call waits for their first list). A
        reader falls back to listing when they are not synced (a relist, a failing watch),
        or have heard nothing from the server since this gateway's last real write.

        Otherwise, read page by page on this cluster's threads; a read younger than
        ``max_age_s`` (default ``fleet_cache_s``) is shared, and so is a read in flight.
        Any real write this gateway makes (cordon, eviction, patch...) drops the shared
        read."""
        informed = await self._informed_fleet()
        if informed is not None:
            return informed
        age = self.settings.fleet_cache_s if max_age_s is None else max_age_s
        if self._tally is not None and time.monotonic() - self._tally[0] <= age:
            return self._tally[1]
        task = self._tally_task
        if task is None or task.done() or self._tally_writes != self._writes:
            # none in flight, or one that started before our last write
            self._tally_writes = self._writes
            replaced = [self._tally_task]  # the last read, its tally as its result
            task = self._tally_task = asyncio.ensure_future(self._read_fleet())
            # its failure reaches every waiter through the shield; marked retrieved here too,
            # so a read no one waits on any more is never logged later by the collector, on
            # whatever thread runs it (Python 3.11 formats that traceback with ``ast``, which
            # is not safe beside another thread's ``ast.parse``: seen as a SystemError)
            task.add_done_callback(_retrieved)
            self._let_go_off_loop(replaced)
        return await asyncio.shield(task)

    async def _read_fleet(self) -> FleetTally:
        started, writes = time.monotonic(), self._writes
        dra = await self._dra_drivers()
        tally = await self._call(
            Doing.of("list_nodes_and_pods"), tallying.read_fleet, self._decoder, dra
        )
        if writes == self._writes:
            replaced = [self._tally]
            self._tally = (started, tally)
            self._let_go_off_loop(replaced)
        return tally

    def _let_go_off_loop(self, held: list[Any]) -> None:
        """Empty ``held`` (the only holder of what it holds) on one of this cluster's threads:
        the tally a fleet read replaces is ~150,000 records on a 5,000-node fleet, and freeing
        them took the event loop 40 ms of CPU in one callback (issue #25). Where the pool is
        shut down (the gateway closing), they are freed here."""
        try:
            self._threads.submit(held.clear)
        except RuntimeError:
            held.clear()

    def fleet_informers(self) -> tuple[Informer[PodRecord], Informer[Obj]] | None:
        """The pods and nodes informers (started on first use), or None when this gateway
        keeps none (``informers``) or acts as a person (their RBAC decides what they read)."""
        if not self.informers or self.acting is not None:
            return None
        if self._fleet_informers is None:
            pods: Informer[PodRecord] = Informer(
                self.transport,
                "/api/v1/pods",
                slim=cutting.pod_record,
                pages=cutting.pod_records_page,
                decoder=self._decoder,
                share=FleetShare().pod,
                watch_s=self.fleet_watch_s,
                name="pods-informer",
            )
            nodes: Informer[Obj] = Informer(
                self.transport,
                "/api/v1/nodes",
                slim=cutting.node_record,
                pages=cutting.node_records_page,
                decoder=self._decoder,
                share=NodeShare().node,
                watch_s=self.fleet_watch_s,
                name="nodes-informer",
            )
            self._fleet_informers = (pods, nodes)
            nodes.start()
            pods.start()
        return self._fleet_informers

    def prime(self) -> None:
        """Start listing what this gateway keeps (``informers``): the pods and nodes
        informers list the fleet now, on their own threads and the decoder process, then
        watch. ``gpunode serve`` calls it once it is warm, so the first ``top`` and the tier
        planners' first gang members read memory instead of waiting on that list (about 20 s
        at 150,000 pods, issue #25). Nothing for a gateway that keeps no informers, or acts
        as a person; the call itself never waits on the API. The owner informers start
        too (``owner_informers``)."""
        self.fleet_informers()
        self.owner_informers()

    async def _informed_fleet(self) -> FleetTally | None:
        """The fleet from the informers' memory, or None: not kept, not synced (after
        waiting out their first list, at most ``request_timeout_s`` a page... bounded by
        the first failure), or not caught up with our last write."""
        informers = self.fleet_informers()
        if informers is None:
            return None
        pods, nodes = informers
        await self._first_lists([nodes, pods])  # this read: never a second list beside them
        if not (pods.synced.is_set() and nodes.synced.is_set()):
            return None
        if min(pods.heard_at, nodes.heard_at) <= self._written_at:
            return None  # our own write may not have reached them yet: the lists will see it
        try:  # DRA nodes: their slices change when a driver starts, read as discovery is
            drivers = await self._cached("dra", Doing.of("list_slices"), dra_by_node)
        except GpunodeError as exc:
            log.warning("list ResourceSlices failed: %s", exc)
            drivers = {}
        key = (pods.generation, nodes.generation, drivers)  # drivers compared by value
        held = self._summed
        if held is not None and held[0] == key:
            return held[1]

        def info_of(node: Obj) -> NodeInfo | None:
            meta = node["metadata"]
            found = tuple(drivers.get(meta["name"], ()))
            at = (meta["name"], str(meta.get("resourceVersion") or ""), found)
            if at not in self._node_infos:
                gpu = objects.is_gpu_node(node, list(found))
                self._node_infos[at] = (
                    objects.parse_node(node, dra_drivers=list(found)) if gpu else None
                )
            return self._node_infos[at]

        def summed() -> FleetTally:
            with self._summing:  # one at a time: a second caller reuses the first's sum
                done = self._summed
                if done is not None and done[0] == key:
                    return done[1]
                with gc_paused():  # what it builds is acyclic; see pages.gc_paused
                    tally = tallying.tally_from(nodes.keyed(), pods.keyed(), info_of)
                if len(self._node_infos) > 2 * len(tally.nodes):
                    self._node_infos.clear()  # old versions of changed nodes: let them go
                self._summed = (key, tally)
                return tally

        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._threads, summed)

    async def gpu_node_loads(self) -> list[NodeLoad]:
        """A row per GPU node (``/gpunode top``): its requests and limits from the fleet, and
        the working set metrics-server reports for its pods, read beside the fleet's lists,
        not after them (at 5,000 nodes that list is 45 MB that the server makes while the
        pods stream, and it was the last second of a cold ``top``)."""
        fleet_read = asyncio.ensure_future(self.fleet())
        usage_read = asyncio.ensure_future(self._pod_usage())
        try:
            fleet, pages = await asyncio.gather(fleet_read, usage_read)
        except BaseException:
            fleet_read.cancel()
            usage_read.cancel()
            raise

        def loads() -> list[NodeLoad]:
            used = None if pages is None else tallying.usage_by_node(pages, fleet.where)
            return fleet.loads(used)

        # a row per GPU node (1,250 on a 5,000-node fleet): built off the event loop
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._threads, loads)

    async def _pod_usage(self) -> list[MetricsPage] | None:
        """Every running pod's working set from metrics.k8s.io; None when the cluster does
        not serve it, or it fails (metrics are optional evidence: logged, not raised)."""
        groups = await self._cached("groups", Doing.of("discover_groups"), reading.served_groups)
        version = groups.get(reading.METRICS_GROUP)
        if not version:
            return None
        try:
            return await self._call(
                Doing.of("list_pod_metrics"), tallying.read_pod_usage, version, self._decoder
            )
        except GpunodeError as exc:  # served but failing: metrics are optional evidence
            log.warning("metrics.k8s.io is served but failed: %s", exc)
            return None

    async def _held(self) -> Informer[PodRecord] | None:
        """The pods informer when it can answer as the API would: kept, synced (after waiting
        out its first list, never a list beside it) and caught up with our last write."""
        informers = self.fleet_informers()
        if informers is None:
            return None
        pods = informers[0]
        await self._first_lists([pods])  # this read: never a list beside it
        if not pods.synced.is_set() or pods.heard_at <= self._written_at:
            return None
        return pods

    async def held_pods(self, namespace: str | None, selector: str) -> list[Obj] | None:
        """The bound, running pods ``selector`` (a ``labelSelector`` value) picks, of
        ``namespace`` or every namespace (None), from the pods informer's memory
        (``bot.kube.selections``): no API call. None when it cannot answer as the API would
        (informers not kept or not synced, not caught up with our last write, a selector it
        cannot parse): the caller lists them, and ``selections.cut`` makes that answer the
        same objects."""
        pods = await self._held()
        if pods is None:
            return None
        try:
            parsed = selectors.parse_selector(selector)
        except ValueError:
            return None

        def chosen() -> list[Obj]:
            records = pods.keyed() if namespace is None else pods.keyed_in(namespace)
            return selections.select(records, parsed)

        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._threads, chosen)

    async def held_records(self, namespace: str) -> list[tuple[str, str, PodRecord]] | None:
        """Every pod of ``namespace`` as the pods informer keeps it (``bot.kube.members``
        reads the gangs' members from them): no API call. None when it cannot answer as the
        API would (see ``held_pods``): the caller lists the namespace."""
        pods = await self._held()
        if pods is None:
            return None
        loop = asyncio.get_running_loop()  # a training namespace may hold thousands
        return await loop.run_in_executor(self._threads, pods.keyed_in, namespace)

    def owner_cache(self) -> OwnerCache:
        """The controllers and owners' pods this gateway read lately: one lookup per owner
        per ``fleet_cache_s`` across all diagnoses (dropped by any real write this gateway
        makes). A view acting as a person gets a cache of its own: their RBAC decides."""
        if self.acting is not None:
            return OwnerCache()
        now, held = time.monotonic(), self._owners
        if held is None or now - held[0] > self.settings.fleet_cache_s or held[1] != self._writes:
            held = self._owners = (now, self._writes, OwnerCache())
        return held[2]

    def owner_informers(self) -> dict[str, Informer[str]] | None:
        """The owner informers (started on first use), by kind: each built-in controller
        kind an owner chain walks through (``ownerrecords.INFORMED_CONTROLLERS``) and
        ``BUDGETS``; None when this gateway keeps none (``informers``) or acts as a person
        (their RBAC decides what they read). A page of them is cut in the decoder process,
        as the pods' are."""
        if not self.informers or self.acting is not None:
            return None
        if self._owner_informers is None:
            held: dict[str, Informer[str]] = {}
            for kind, (prefix, plural) in INFORMED_CONTROLLERS.items():
                version = api_version(prefix)
                held[kind] = Informer(
                    self.transport,
                    f"{prefix}/{plural}",
                    slim=functools.partial(controller_text, kind, version),
                    pages=functools.partial(controller_records_page, kind, version),
                    decoder=self._decoder,
                    watch_s=self.fleet_watch_s,
                    name=f"{plural}-informer",
                )
            held[BUDGETS] = Informer(
                self.transport,
                BUDGETS_PATH,
                slim=budget_text,
                pages=budget_records_page,
                decoder=self._decoder,
                watch_s=self.fleet_watch_s,
                name="poddisruptionbudgets-informer",
            )
            self._owner_informers = held
            for informer in held.values():
                informer.start()
        return self._owner_informers

    async def _owners_answered(self) -> None:
        """Start the owner informers (when `serve` did not prime them: a diagnosis's Job
        started them), and wait out their first lists, never a GET beside them (bounded
        by the request timeout a page, or the first failure: then the walk GETs)."""
        await self._first_lists(list((self.owner_informers() or {}).values()))

    async def _first_lists(self, informers: list[Informer[Any]]) -> None:
        """Wait, on this cluster's threads, until each of ``informers`` has ended its first
        list, listed or failed (``Informer.answered``)."""
        loop = asyncio.get_running_loop()
        for informer in informers:
            if not informer.answered.is_set():
                await loop.run_in_executor(self._threads, informer.answered.wait)

    def _answering(self, kind: str) -> Informer[str] | None:
        """The owner informer of ``kind`` when it can answer as the API would: kept for this
        gateway (not a view acting as a person), synced, and heard from since this gateway's
        last real write (a patched Deployment's own event has then arrived, or a bookmark
        newer than it). None otherwise: the caller reads the API."""
        if self.acting is not None or self._owner_informers is None:
            return None
        informer = self._owner_informers.get(kind)
        if informer is None or not informer.synced.is_set():
            return None
        if informer.heard_at <= self._written_at:
            return None
        return informer

    def _held_owner(self, kind: str, namespace: str, name: str) -> Obj | None:
        """``reading.OwnerLookup``: the controller from its informer's memory; None (the walk
        then GETs it) when the informer cannot answer (``_answering``) or holds no such
        object (one made a moment ago whose event is still on its way, or one deleted: the
        GET says which)."""
        informer = self._answering(kind)
        text = None if informer is None else informer.get(namespace, name)
        return None if text is None else read_record(text)

    def _owner_lookup(self) -> reading.OwnerLookup | None:
        if self.acting is not None or self._owner_informers is None:
            return None
        return self._held_owner

    def pod_events(self) -> Informer[Obj] | None:
        """The pod-events informer (started on first use), or None when this gateway keeps
        none (``informers``) or acts as a person (their RBAC decides what they may read)."""
        if not self.informers or self.acting is not None:
            return None
        if self._events is None:
            self._events = Informer(
                self.transport,
                "/api/v1/events",
                slim=slim_event,
                field_selector="involvedObject.kind=Pod",
                watch_s=self.events_watch_s,
                name="pod-events-informer",
            )
            self._events.start()
        return self._events

    async def get_cluster_view(
        self, node: str, *, measured: frozenset[str] = frozenset()
    ) -> ClusterView:
        """``measured``: UIDs of pods whose working set the evidence already holds (the
        collector read their cgroups; the analysis prefers that figure): pod metrics are
        read only for the namespaces of the node's other pods, none when there are none."""
        node_obj = await self.read_node(node)
        all_pods, groups, classes, (version, resources) = await asyncio.gather(
            self._call(
                Doing.of("list_pods_on", node=node),
                reading.list_pods_on_node,
                node,
                non_terminated=False,
            ),
            self._cached("groups", Doing.of("discover_groups"), reading.served_groups),
            self._cached(
                "classes", Doing.of("list_priority_classes"), reading.list_priority_classes
            ),
            self._resize_discovery(),
        )
        pods = non_terminated(all_pods)
        namespaces = sorted(
            {
                meta.get("namespace", "")
                for p in pods
                if norm_uid((meta := p.get("metadata") or {}).get("uid")) not in measured
            }
        )
        cache = self.owner_cache()
        await self._owners_answered()
        informer = self.pod_events()
        held = informer.items_in if informer is not None and informer.synced.is_set() else None
        chains, events, metrics, budgets = await asyncio.gather(
            self._call(Doing.of("read_pod_owners"), self._owner_chains, pods, cache),
            self._call(
                Doing.of("list_events_of", node=node), reading.list_events, node, all_pods, held
            ),
            self._metrics(groups, namespaces),
            self._budgets(pods, cache),
        )
        keys = {(p["metadata"].get("namespace"), p["metadata"].get("name")) for p in pods}
        claims = await self._claims(pods)
        infos = [
            objects.parse_pod(
                p,
                owners=c,
                dra_devices=dra.pod_devices(p, claims[ns])
                if (ns := p["metadata"].get("namespace", "")) in claims
                and (p.get("spec") or {}).get("resourceClaims")
                else None,
            )
            for p, c in zip(pods, chains, strict=True)
        ]
        context = await survey(self, node, infos, cache, groups)
        infos = [
            p.model_copy(
                update={
                    "scheduling": p.scheduling.model_copy(
                        update={"volume_terms": context.volume_terms[p.key]}
                    )
                }
            )
            if p.scheduling is not None and p.key in context.volume_terms
            else p
            for p in infos
        ]
        room = context.room
        if room is not None and any(p.gpu_devices and not p.accelerator_request for p in infos):
            room = await self._with_dra_devices(room)
        return ClusterView(
            node=objects.parse_node(node_obj),
            pods=infos,
            gang_pods=context.gang_pods,
            workloads=with_settings_keys(context.workloads, self.settings.helm_values_keys),
            room=room,
            peers=context.peers,
            namespace_labels=context.namespace_labels,
            queues=context.queues,
            kueue_workloads=context.kueue_workloads,
            pools=context.pools,
            bot_namespace=self.settings.namespace,
            in_place_resize="pods/resize" in resources,
            budgets=budgets,
            events=[objects.parse_event(e) for e in events],
            allocated=allocated_resources(node_obj, pods),
            allocated_text=describe_allocated(node_obj, pods),
            metrics=None
            if metrics is None
            else [
                m
                for m in (objects.parse_pod_metrics(i) for i in metrics)
                if (m.namespace, m.name) in keys
            ],
            priority_classes=[objects.parse_priority_class(c) for c in classes],
            server_version=version,
            observed_at=datetime.now(UTC),
        )

    async def _budgets(self, pods: list[Obj], cache: OwnerCache) -> list[BudgetInfo] | None:
        """The PodDisruptionBudgets of the namespaces of ``pods`` that tier 1 could evict
        (not a DaemonSet's, not a static pod), with their status: one scoped list per
        namespace, shared like the owners (``owner_cache``). None when they cannot be read:
        tier 1 then names no budget block before the dry run, whose evictions still do."""
        spaces = {
            str(p["metadata"].get("namespace", ""))
            for p in pods
            if (objects.controller_ref(p) or {}).get("kind") != "DaemonSet"
            and objects.MIRROR_ANNOTATION not in (p["metadata"].get("annotations") or {})
        }
        if not spaces:
            return []
        informer = self._answering(BUDGETS)
        if informer is not None:  # by namespace, then name: as the lists below answer
            return [
                objects.parse_budget(read_record(text))
                for ns in sorted(spaces)
                for _, _, text in informer.keyed_in(ns)
            ]
        try:
            items = await self._call(
                Doing.of("list_budgets"), reading.list_budgets, spaces, cache.budgets
            )
        except GpunodeError as exc:
            if isinstance(exc, KubeUnavailableError) and exc.status is None:
                raise
            log.warning("PodDisruptionBudgets not read: %s", exc)
            return None
        return [objects.parse_budget(b) for b in items]

    async def _with_dra_devices(self, room: list[RoomOnNode]) -> list[RoomOnNode]:
        """``room`` with each node's free DRA devices per driver (``dra:DRIVER``): its
        ResourceSlices' devices less those allocated to claims. Asked only when a pod on the
        node holds GPUs through DRA alone; unreadable, the rooms stay as they are (and such a
        pod fits nowhere else, the conservative answer)."""
        try:
            slices, claims = await asyncio.gather(
                self._call(Doing.of("list_slices"), dra.list_slices),
                self._call(Doing.of("list_claims"), dra.list_claims, None),
            )
        except GpunodeError as exc:
            if isinstance(exc, KubeUnavailableError) and exc.status is None:
                raise
            log.warning("DRA devices for placement not read: %s", exc)
            return room
        if claims is None:
            return room
        free = dra.free_devices(slices, claims)
        return [
            r.model_copy(
                update={
                    "free": {
                        **r.free,
                        **{DRA_PREFIX + d: n for d, n in free.get(r.name, {}).items()},
                    }
                }
            )
            for r in room
        ]

    async def _claims(self, pods: list[Obj]) -> dict[str, list[Obj]]:
        """namespace -> its ResourceClaims, for the namespaces of ``pods`` that claim DRA
        devices (no call when none does); a namespace whose claims cannot be read is left
        out (its pods' devices stay unknown). Optional evidence, like the ResourceSlices."""
        namespaces = sorted(
            {
                str(p["metadata"].get("namespace", ""))
                for p in pods
                if (p.get("spec") or {}).get("resourceClaims")
            }
        )
        out: dict[str, list[Obj]] = {}
        for ns in namespaces:
            try:
                found = await self._call(
                    Doing.of("list_claims_in", namespace=ns), dra.list_claims, ns
                )
            except GpunodeError as exc:
                if isinstance(exc, KubeUnavailableError) and exc.status is None:
                    raise
                log.warning("list ResourceClaims in %s failed: %s", ns, exc)
                continue
            if found is not None:
                out[ns] = found
        return out

    async def read_controller(self, kind: str, namespace: str, name: str) -> dict[str, object]:
        return await self._call(
            Doing.of("read_object", kind=kind, namespace=namespace, name=name),
            patching.read_controller,
            kind,
            namespace,
            name,
        )

    async def read_target(self, kind: str, namespace: str, name: str) -> dict[str, object] | None:
        """A remedy step's object as it is now (None: it does not exist); the re-read after
        a write that got no answer (``bot.kube.unanswered``)."""
        return await self._call(
            Doing.of("reread_object", kind=kind, namespace=namespace, name=name)
            if namespace
            else Doing.of("reread_cluster_object", kind=kind, name=name),
            unanswered.read_target,
            kind,
            namespace,
            name,
        )

    # -- diagnostic Job -------------------------------------------------------------------
    async def run_diagnostic(self, node: str, *, known: NodeInfo | None = None) -> EvidenceBundle:
        self.owner_informers()  # their first lists run beside the Job (``_owners_answered``)
        task = self._diagnoses.get(node)
        if task is None or task.done():
            task = asyncio.create_task(self._diagnose(node, known), name=f"gpunode-diagnose-{node}")
            self._diagnoses[node] = task
            task.add_done_callback(functools.partial(self._forget, node))
        self._waiters[node] = self._waiters.get(node, 0) + 1
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if self._waiters.get(node, 0) <= 1 and not task.done():
                task.cancel()  # the last waiter left: stop the Job (it is still deleted)
            raise
        finally:
            left = self._waiters.get(node, 1) - 1
            if left > 0:
                self._waiters[node] = left
            else:
                self._waiters.pop(node, None)

    def _forget(self, node: str, task: asyncio.Task[EvidenceBundle]) -> None:
        if self._diagnoses.get(node) is task:
            del self._diagnoses[node]
        if not task.cancelled():
            task.exception()  # mark retrieved: a failure is delivered to every waiter

    async def _check_node(self, node: str, known: NodeInfo | None) -> NodeInfo:
        """The node ready to run the collector (``known`` when given, else read now)."""
        info = known
        if info is None:
            try:
                info = await self.get_node(node)
            except NotFoundError as exc:
                raise DiagnosticJobError(
                    f"node {node} does not exist; check the name "
                    "(`gpunode top` or `/gpunode top` lists the GPU nodes)",
                    code="node_not_found",
                    key="node_not_found",
                    params={"node": node},
                ) from exc
        if not info.ready:
            ready = next((c for c in info.conditions if c.type == "Ready"), None)
            why = f"{ready.reason}: {ready.message}" if ready else "no Ready condition"
            raise DiagnosticJobError(
                f"node {node} is not Ready ({why}); its kubelet cannot run the collector - "
                "look at the node's conditions and events first",
                code="node_not_ready",
                key="node_not_ready",
                # the kubelet's words, quoted as it said them (empty: no Ready condition)
                params={
                    "node": node,
                    "message": f"{ready.reason}: {ready.message}" if ready else "",
                },
            )
        return info

    async def _gpu_preflight(self, info: NodeInfo) -> gpuevidence.GpuPlan:
        """How the Job asks for NVML on this node (``gpuevidence``): the NVIDIA RuntimeClass
        when it exists, else the node's default runtime; nothing on a node without NVIDIA
        GPUs (the plan's gap says why)."""
        state: preflight.RuntimeClassState = "unknown"
        name = self.settings.nvidia_runtime_class
        if info.has_nvidia_gpus and name and self.settings.nvidia_visible_devices_all:
            state = await self._cached(
                f"runtimeclass/{name}",
                Doing.of("read_runtime_class", name=name),
                preflight.read_runtime_class,
                name,
            )
        return gpuevidence.plan(info, self.settings, runtime_class=state)

    async def _diagnose(self, node: str, known: NodeInfo | None) -> EvidenceBundle:
        info = await self._check_node(node, known)
        if self.settings.collector_mode == "daemonset":
            jobs.report_progress("reading")
            text = await self._call(
                Doing.of("ask_agent", node=node), resident.ask_agent, self.settings, node
            )
            return jobs.parse_evidence(text)
        gpu = await self._gpu_preflight(info)
        gaps = list(gpu.gaps)
        run_id = jobs.new_run_id()
        job = jobs.build_job(
            self.settings,
            node,
            run_id,
            runtime_class=gpu.runtime_class is not None,
            visible_devices=gpu.visible_devices,
        )
        ns, name = self.settings.namespace, job["metadata"]["name"]
        jobs.report_progress("creating")
        await self._call(Doing.of("create_job", namespace=ns, name=name), jobs.create_job, job)
        cancel = threading.Event()
        try:
            deadline = time.monotonic() + self.settings.job_timeout_s + jobs.DEADLINE_GRACE_S
            outcome = await self._call(
                Doing.of("watch_job", namespace=ns, name=name),
                jobs.wait_for_pod,
                ns,
                run_id,
                deadline=deadline,
                cancel=cancel,
                job=name,
            )
            if outcome.state == "succeeded" and outcome.pod is not None:
                pod_name = outcome.pod["metadata"]["name"]
                jobs.report_progress("reading")
                text = await self._call(
                    Doing.of("read_log", namespace=ns, name=pod_name), jobs.read_log, ns, pod_name
                )
                bundle = jobs.parse_evidence(text)
                if (why := gpuevidence.evidence_gap(info, gpu, bundle)) is not None:
                    gaps.append(why)
                if gaps:
                    bundle = bundle.model_copy(update={"gaps": [*gaps, *bundle.gaps]})
                if dcgm.needs_dcgm(bundle, nvidia=info.has_nvidia_gpus):
                    bundle = dcgm.join(bundle, await self.read_dcgm_exporter(node))
                return bundle
            job_now = None
            if outcome.state in ("timeout", "deleted"):
                try:
                    job_now = await self._call(
                        Doing.of("read_job", namespace=ns, name=name), jobs.read_job, ns, name
                    )
                except GpunodeError:
                    job_now = None
            raise jobs.failure(
                outcome,
                job_now or job,
                node=node,
                timeout_s=self.settings.job_timeout_s,
                priority_class=self.settings.diagnostic_priority_class,
            )
        finally:
            cancel.set()
            await asyncio.shield(self._delete_job(ns, name))

    async def read_dcgm_exporter(self, node: str) -> dcgm.DcgmAttempt:
        """The third GPU-evidence rung: dcgm-exporter's per-pod figures from its endpoint on
        ``node`` (``bot.kube.dcgm``); a failure is the attempt's reason, never raised."""
        try:
            return await self._call(
                Doing.of("read_dcgm", node=node),
                kube_dcgm.read,
                node,
                list(self.settings.dcgm_exporter_services),
                self.settings.request_timeout_s,
            )
        except GpunodeError as exc:
            return dcgm.DcgmAttempt(
                "the exporter's endpoint",
                failure=exc.message,
                via="endpoint",
                code="exporter_read_failed",
                # the error's English text, and its key and params for the reader's words
                params={"error": exc.message, **flat_error("error", exc.key, exc.params)},
            )

    async def _delete_job(self, namespace: str, name: str) -> None:
        try:
            await self._call(
                Doing.of("delete_job", namespace=namespace, name=name),
                jobs.delete_job,
                namespace,
                name,
            )
        except NotFoundError:
            pass
        except GpunodeError as exc:  # ttlSecondsAfterFinished still removes it later
            log.warning("could not delete diagnostic Job %s/%s: %s", namespace, name, exc)

    # -- audit anchors (bot.kube.anchoring) --------------------------------------------------
    async def post_audit_anchor(
        self, deployment: str, row_id: int, row_hash: str, *, at: datetime
    ) -> None:
        """An Event on the bot's Deployment naming the audit chain's head."""
        await self._call(
            Doing.of("post_anchor", row=row_id),
            anchoring.post_anchor,
            self.settings.namespace,
            deployment,
            row_id,
            row_hash,
            at,
        )

    async def audit_anchors(self, deployment: str) -> list[anchoring.Anchor]:
        return await self._call(
            Doing.of("list_anchors"), anchoring.list_anchors, self.settings.namespace, deployment
        )

    # -- self-check (gpunode doctor, bot.kube.selfcheck) -------------------------------------
    async def rules_review(self, namespace: str) -> Obj:
        """The token's rules in ``namespace`` (SelfSubjectRulesReview status)."""
        review = await self._call(
            Doing.of("review_rules", namespace=namespace), selfcheck.rules_review, namespace
        )
        return dict(review.get("status") or {})

    async def admission_policies(self) -> tuple[list[Obj], list[Obj]]:
        return await self._call(Doing.of("list_admission_policies"), selfcheck.admission_policies)

    async def dry_run_collector(self, node: str) -> None:
        """Create the collector Job for ``node`` with ``dryRun=All``: admission answers as
        for a real diagnosis (GpunodeError when refused), nothing is created. In daemonset
        mode: the node's agent pod is found as a diagnosis finds it (nothing is sent to it)."""
        if self.settings.collector_mode == "daemonset":
            await self._call(
                Doing.of("find_agent", node=node), resident.find_agent, self.settings, node
            )
            return
        info = await self.get_node(node)
        gpu = await self._gpu_preflight(info)
        job = jobs.build_job(
            self.settings,
            node,
            jobs.new_run_id(),
            runtime_class=gpu.runtime_class is not None,
            visible_devices=gpu.visible_devices,
        )
        await self._call(Doing.of("dry_run_job", node=node), selfcheck.dry_run_job, job)

    # -- remedies -------------------------------------------------------------------------
    async def cordon(self, node: str, *, dry_run: bool) -> Change:
        return await self._call(
            Doing.of("cordon", node=node), draining.set_unschedulable, node, True, dry_run=dry_run
        )

    async def uncordon(self, node: str, *, dry_run: bool) -> Change:
        return await self._call(
            Doing.of("uncordon", node=node),
            draining.set_unschedulable,
            node,
            False,
            dry_run=dry_run,
        )

    async def annotate_node(
        self, node: str, annotations: dict[str, str | None], *, dry_run: bool
    ) -> Change:
        return await self._call(
            Doing.of("annotate", node=node),
            draining.set_annotations,
            node,
            annotations,
            dry_run=dry_run,
        )

    async def evict(self, namespace: str, name: str, *, dry_run: bool) -> EvictionOutcome:
        return await self._call(
            Doing.of("evict", namespace=namespace, name=name),
            draining.evict,
            namespace,
            name,
            dry_run=dry_run,
        )

    async def ensure_priority_class(
        self,
        name: str,
        value: int,
        *,
        description: str,
        dry_run: bool,
        preemption_policy: str = "Never",
    ) -> Change:
        return await self._call(
            Doing.of("ensure_priority_class", name=name),
            prioritizing.ensure_priority_class,
            name,
            value,
            description=description,
            dry_run=dry_run,
            preemption_policy=preemption_policy,
        )

    async def set_priority_class_name(
        self, kind: str, namespace: str, name: str, priority_class: str | None, *, dry_run: bool
    ) -> Change:
        return await self._call(
            Doing.of("set_priority_class_name", kind=kind, namespace=namespace, name=name),
            patching.set_priority_class_name,
            kind,
            namespace,
            name,
            priority_class,
            dry_run=dry_run,
        )

    async def patch_container_resources(
        self,
        kind: str,
        namespace: str,
        name: str,
        container: str,
        *,
        requests: ResourceValues,
        limits: ResourceValues,
        env: EnvValues,
        dry_run: bool,
    ) -> Change:
        return await self._call(
            Doing.of(
                "patch_resources", kind=kind, namespace=namespace, name=name, container=container
            ),
            patching.patch_container_resources,
            kind,
            namespace,
            name,
            container,
            requests=requests,
            limits=limits,
            env=env,
            dry_run=dry_run,
        )

    async def _resize_discovery(self) -> tuple[str | None, set[str]]:
        if self._discovery is None:
            version, resources = await asyncio.gather(
                self._call(Doing.of("read_server_version"), reading.server_version),
                self._call(Doing.of("discover_core"), reading.core_resources),
            )
            self._discovery = (version, resources)
        return self._discovery

    async def resize_pod(
        self,
        namespace: str,
        name: str,
        container: str,
        *,
        requests: ResourceValues,
        limits: ResourceValues,
        dry_run: bool,
    ) -> Change:
        """In-place resize through ``pods/resize`` where served (kube >= 1.33)."""
        version, resources = await self._resize_discovery()
        return await self._call(
            Doing.of("resize_pod", namespace=namespace, name=name),
            resizing.resize_pod,
            namespace,
            name,
            container,
            requests=requests,
            limits=limits,
            dry_run=dry_run,
            server_version=version,
            resources=resources,
        )

    # -- watching an action land ---------------------------------------------------------
    async def rollout_progress(
        self, kind: str, namespace: str, name: str, *, since: str = ""
    ) -> RolloutProgress:
        return await self._call(
            Doing.of("read_rollout", kind=kind, namespace=namespace, name=name),
            watching.rollout_progress,
            kind,
            namespace,
            name,
            since=since,
        )

    async def resize_progress(self, namespace: str, name: str, container: str) -> RolloutProgress:
        return await self._call(
            Doing.of("read_resize", namespace=namespace, name=name),
            watching.resize_progress,
            namespace,
            name,
            container,
        )

    async def pods_present(self, pods: list[tuple[str, str, str]]) -> list[str]:
        return await self._call(Doing.of("read_evicted_pods"), watching.pods_present, pods)


def dra_by_node(t: Transport) -> dict[str, list[str]]:
    """node -> DRA drivers with ResourceSlices there, every node."""
    return dra.drivers_by_node(dra.list_slices(t, None))


def non_terminated(pods: list[Obj]) -> list[Obj]:
    """kubectl's non-terminated pods (phase not Succeeded/Failed), in API order."""
    return [p for p in pods if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
