"""``KubeSim``: the Kubernetes API stand-in, started on a loopback port.

Owns the API core (store + rules), the HTTP app, the controllers (Jobs run the real collector
against a generated host tree) and the scenario's usage figures (for metrics and host trees).
Use ``await sim.start()`` / ``await sim.stop()`` in async code, or
``KubeSim.running_in_thread(scenario)`` from sync code (its own loop in a thread).
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import copy
import tempfile
import threading
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

from gpunode_sandbox.kubesim import access, building, eviction, stamps
from gpunode_sandbox.kubesim.admission import Admission
from gpunode_sandbox.kubesim.app import build_app
from gpunode_sandbox.kubesim.authz import Authorizer
from gpunode_sandbox.kubesim.crud import ApiCore
from gpunode_sandbox.kubesim.dcgmexporter import Exporters
from gpunode_sandbox.kubesim.encoding import encode_bytes
from gpunode_sandbox.kubesim.faults import Faults
from gpunode_sandbox.kubesim.resources import STORED, Resource
from gpunode_sandbox.kubesim.scenarios import Scenario
from gpunode_sandbox.kubesim.statuses import ApiError, not_found

if TYPE_CHECKING:
    from gpunode_sandbox.kubesim.metrics import PodMetricTexts

Obj = dict[str, Any]


class KubeSim:
    """A Kubernetes API server stand-in serving ``scenario``.

    Access is enforced as in a real cluster: the roles, bindings and admission policies of
    ``access_dir`` (``deploy/base`` by default) are installed, and every request is
    authenticated by its bearer token and authorized by RBAC (see ``access``, ``authz``,
    ``admission``). Use ``access.ADMIN_TOKEN`` for setup and ``access.BOT_TOKEN`` for the bot.
    ``insecure_superuser``: token-less requests act as ``system:unsecured`` (for kubectl,
    which sends no token over plain HTTP); otherwise they are ``system:anonymous``.
    ``clock_from_start``: serve the scenario's stamps relative to now (the scenario's "now" is
    the moment the stand-in was built), as a person at a terminal expects; tests keep the
    fixed scenario clock (``stamps.T0``) so their answers do not depend on the day.
    """

    def __init__(
        self,
        scenario: Scenario,
        *,
        kube_version: str = "1.35",
        workdir: Path | None = None,
        step_s: float = 0.05,
        access_dir: Path | None = None,
        insecure_superuser: bool = False,
        clock_from_start: bool = False,
        sigterm_exit_s: float = 0.0,
    ) -> None:
        self.scenario = scenario
        #: how long a deleted pod's containers take to exit after SIGTERM (its grace period
        #: bounds it): until then the pod is Terminating; 0: they exit at once
        self.sigterm_exit_s = sigterm_exit_s
        #: how far the scenario clock is moved when served (zero: the fixed scenario clock)
        self.clock_shift = (
            datetime.now(UTC) - stamps.SCENARIO_NOW if clock_from_start else timedelta(0)
        )
        self.kube_version = kube_version
        self.api = ApiCore(kube_version=kube_version)
        self.faults = Faults()
        self.requests: list[tuple[str, str, str]] = []
        self.tokens: list[str | None] = []
        self.logs: dict[tuple[str, str], str] = {}
        self.step_s = step_s
        #: seconds between a watch's bookmarks while nothing happens (the API server's are
        #: about a minute apart; one more comes just before the watch times out)
        self.bookmark_s = 60.0
        #: installed custom resources (``plural.group``); any other custom resource is a 404
        self.crds: frozenset[str] = frozenset(scenario.crds)
        #: node -> diagnostic mode for the job controller (see ``jobs.MODES``)
        self.diagnostic_mode: dict[str, str] = {}
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._workdir = workdir
        self._runner: web.AppRunner | None = None
        self.url = ""
        #: dcgm-exporter's listeners on the nodes that run it (started with the server)
        self.exporters = Exporters(self)
        self._pod_metric_texts: PodMetricTexts | None = None  # made with the first metrics list
        building.seed(self.api, scenario)
        access.install(
            self.api, access.bootstrap_objects() + access.shipped_access_objects(access_dir)
        )
        self.authn = access.Tokens(self.api, insecure_superuser=insecure_superuser)
        self.authorizer = Authorizer(self.api.store)
        self.api.admit.append(Admission(self.api.store))
        self.api.memory_usage = self._memory_usage
        from gpunode_sandbox.kubesim.controllers import Controllers

        self.controllers = Controllers(self)

    @property
    def workdir(self) -> Path:
        """Where host trees are generated (a temporary folder removed by ``stop`` unless one
        was given)."""
        if self._workdir is None:
            self._tmp = tempfile.TemporaryDirectory(
                prefix="kubesim-",
                ignore_cleanup_errors=True,  # a host tree may still be written
            )
            self._workdir = Path(self._tmp.name)
        return self._workdir

    # ---- lifecycle -----------------------------------------------------------------------
    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        self.controllers.loop = asyncio.get_running_loop()
        self._runner = web.AppRunner(build_app(self), access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        bound = self._runner.addresses[0]
        self.url = f"http://{bound[0]}:{bound[1]}"
        await self.exporters.start()
        return self.url

    async def stop(self) -> None:
        await self.controllers.stop()
        await self.exporters.stop()
        self.api.store.end_watches()  # else the runner waits out its shutdown timeout on them
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
            self._workdir = None

    @classmethod
    @contextlib.contextmanager
    def running_in_thread(cls, scenario: Scenario, **kw: Any) -> Iterator[KubeSim]:
        """A started sim on its own event loop in a daemon thread (for sync code, benches)."""
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        thread = threading.Thread(target=loop.run_forever, daemon=True, name="kubesim")
        thread.start()
        sim = cls(scenario, **kw)
        asyncio.run_coroutine_threadsafe(sim.start(), loop).result(30)
        ready.set()
        try:
            yield sim
        finally:
            asyncio.run_coroutine_threadsafe(sim.stop(), loop).result(30)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
            loop.close()

    # ---- direct access for tests ----------------------------------------------------------
    def get(self, kind_plural: str, namespace: str | None, name: str) -> Obj | None:
        obj = self.api.store.get(kind_plural, namespace, name)
        if obj is None:
            return None
        return self.present(STORED[kind_plural], obj)

    def list(self, kind_plural: str, namespace: str | None = None) -> list[Obj]:
        res = STORED[kind_plural]
        return [self.present(res, o) for o in self.api.store.list(kind_plural, namespace)]

    def present(self, res: Resource, obj: Obj) -> Obj:
        """The object as the API returns it (PDB status computed now), a private copy."""
        if res.kind == "PodDisruptionBudget":
            obj = eviction.with_status(self.api, obj)
        if self.clock_shift:
            return stamps.shift_stamps(obj, self.clock_shift)  # type: ignore[no-any-return]
        return copy.deepcopy(obj)

    def served(self, res: Resource, obj: Obj) -> Obj:
        """``present``'s object for a response encoded before control returns to the event
        loop, and never changed: the store's own object when nothing in it is computed. The
        API server's watch cache serializes the objects it holds, it does not copy each one;
        a list of 150,000 pods spent most of its time here in copies."""
        if self._computed(res):
            return self.present(res, obj)
        return obj

    def encoded(self, res: Resource, key: tuple[str, str], obj: Obj) -> bytes:
        """``served``'s object as JSON bytes, for the stored (or once stored) object ``obj``
        at ``key``: the store's kept encoding when nothing in the answer is computed (made
        once per version of the object, ``Store.encoded``), else made now."""
        if self._computed(res):
            return encode_bytes(self.present(res, obj))
        return self.api.store.encoded(res.key, key, obj, encode_bytes)

    def _computed(self, res: Resource) -> bool:
        """Whether ``present`` computes part of a ``res`` answer (it is not the stored
        object as stored): a PodDisruptionBudget's status, every stamp on a moved clock."""
        return bool(self.clock_shift) or res.kind == "PodDisruptionBudget"

    def _memory_usage(self, pod: Obj) -> dict[str, int]:
        from gpunode_sandbox.kubesim.usage import figures

        return {name: f.usage for name, f in figures(self, pod).items()}

    # ---- logs and metrics ------------------------------------------------------------------
    def pod_log(self, namespace: str, name: str, query: Mapping[str, str]) -> str:
        pod = self.api.get("pods", namespace, name)
        containers = [c["name"] for c in pod["spec"]["containers"]]
        inits = [c["name"] for c in pod["spec"].get("initContainers") or []]
        container = query.get("container") or containers[0]
        if container not in containers + inits:
            raise ApiError(400, f"container {container} is not valid for pod {name}")
        if (pod.get("status") or {}).get("phase") == "Pending":
            waiting = "ContainerCreating"
            for cs in pod["status"].get("containerStatuses") or []:
                waiting = ((cs.get("state") or {}).get("waiting") or {}).get("reason", waiting)
            raise ApiError(
                400, f'container "{container}" in pod "{name}" is waiting to start: {waiting}'
            )
        text = self.logs.get((namespace, name), "")
        if (namespace, name) not in self.logs:
            text = self._scenario_log(pod, container, previous=query.get("previous") == "true")
        if tail := query.get("tailLines"):
            lines = text.splitlines(keepends=True)
            text = "".join(lines[-int(tail) :]) if int(tail) > 0 else ""
        return text

    def _scenario_log(self, pod: Obj, container: str, *, previous: bool) -> str:
        """What a scenario container wrote (``logs``), or its previous instance's
        (``previous_logs``: the kubelet keeps the last terminated one; none without a
        restart, as the kubelet answers)."""
        from gpunode_sandbox.kubesim.usage import workload_of

        w = workload_of(self, pod)
        spec = next(
            (c for c in (w.containers + w.init_containers if w else []) if c.name == container),
            None,
        )
        if not previous:
            return spec.logs if spec is not None else ""
        restarts = 0
        status = pod.get("status") or {}
        for key in ("containerStatuses", "initContainerStatuses"):
            for cs in status.get(key) or []:
                if cs.get("name") == container:
                    restarts = int(cs.get("restartCount", 0))
        if not restarts:
            name = pod["metadata"]["name"]
            raise ApiError(
                400,
                f'previous terminated container "{container}" in pod "{name}" not found',
            )
        return spec.previous_logs if spec is not None else ""

    def pod_metrics_pieces(
        self, namespace: str | None, size: int
    ) -> tuple[Obj, int, Iterator[builtins.list[bytes]]]:
        """The pod metrics list as ``metrics`` answers it, in pieces: its fields but
        ``items``, how many items, and the items' JSON ``size`` at a time (each one's
        ``encode_bytes``), of the pods running when called, each piece made when it is asked
        for (as it is sent) from the items kept since their inputs last changed
        (``metrics.PodMetricTexts``)."""
        from gpunode_sandbox.kubesim.metrics import PodMetricTexts, running_rows

        if self._pod_metric_texts is None:
            self._pod_metric_texts = PodMetricTexts(self)
        texts = self._pod_metric_texts
        rows, stamp = running_rows(self, namespace), stamps.ts(stamps.T0)

        def pieces() -> Iterator[builtins.list[bytes]]:
            for at in range(0, len(rows), size):
                yield texts.items(rows[at : at + size], stamp)

        head = {"kind": "PodMetricsList", "apiVersion": "metrics.k8s.io/v1beta1", "metadata": {}}
        return head, len(rows), pieces()

    def warm(self) -> None:
        """Make now what the first answers would: every stored object's kept encoding and
        every running pod's metrics item, as the API server's watch cache holds its objects'
        serializations before any client lists (``process``: benches time a client, and the
        first list would otherwise pay the stand-in's encoding)."""
        store = self.api.store
        for plural in store.plurals():
            res = STORED.get(plural)
            if res is None or self._computed(res):
                continue
            for key, obj in store.scan(plural, None):
                self.encoded(res, key, obj)
        for _ in self.pod_metrics_pieces(None, 1000)[2]:
            pass

    def metrics(self, res: Resource, namespace: str | None, name: str | None) -> Obj:
        from gpunode_sandbox.kubesim.metrics import node_metrics, pod_metrics

        items = node_metrics(self) if res.kind == "NodeMetrics" else pod_metrics(self, namespace)
        items = stamps.shift_stamps(items, self.clock_shift) if self.clock_shift else items
        if name is not None:
            for item in items:
                if item["metadata"]["name"] == name:
                    return item
            raise not_found(res.plural, name, group=res.group)  # metrics: never a CRD
        return {
            "kind": f"{res.kind}List",
            "apiVersion": "metrics.k8s.io/v1beta1",
            "metadata": {},
            "items": items,
        }
