"""The clusters gpunode serves: name -> KubePort, built on first use, and the fan-out that
asks several of them at once without letting a slow one hold up the rest.

``ClusterRegistry.from_settings`` builds it from a ``ClusterConfig`` (``bot.config.Settings``
is one: its ``clusters``, or, when it lists none, the one ``kube`` cluster, named
``default``); the registry never reads the configuration itself. Each
cluster has its own ``timeout_s``: one request to it may take that long (its gateway's
transport timeout), and so may its share of a fan-out (``fan_out``), after which it is
reported as unreachable, by name, while the other clusters' answers are used.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from bot.core.model.clusters import DEFAULT_CLUSTER, NodeRef, choose_cluster
from bot.core.model.incidents import Incident
from bot.errors import (
    ClusterUnreachableError,
    GpunodeError,
    KubeUnavailableError,
    UnknownClusterError,
)
from bot.services.ports import KubePort

log = logging.getLogger(__name__)
T = TypeVar("T")
K = TypeVar("K")
K_co = TypeVar("K_co", covariant=True)

#: a fan-out share when the settings give none (the single ``kube`` cluster): the gateway's
#: own request timeout already bounds each call; this bounds the whole share
DEFAULT_TIMEOUT_S = 30.0


class ClusterConfig(Protocol[K_co]):
    """What a registry is built from (``bot.config.Settings`` is one): plain data, so the
    use cases never read the configuration themselves."""

    @property
    def default_cluster(self) -> str | None: ...

    @property
    def channel_clusters(self) -> Mapping[str, str]: ...

    def cluster_connections(self) -> Mapping[str, K_co]:
        """Each cluster's connection settings, by name (what ``build`` is given)."""

    def cluster_timeouts(self) -> Mapping[str, float]: ...


def _observe(port: KubePort, observer: Callable[..., None]) -> None:
    hook = getattr(port, "observe_api", None)
    if callable(hook):
        hook(observer)


class ClusterRegistry:
    """Which clusters exist, which one a command means, and their KubePorts (lazily)."""

    def __init__(
        self,
        builders: Mapping[str, Callable[[], KubePort]],
        *,
        default: str | None = None,
        channel_defaults: Mapping[str, str] | None = None,
        timeouts: Mapping[str, float] | None = None,
    ) -> None:
        if not builders:
            raise ValueError("a registry needs at least one cluster")
        self._builders = dict(builders)
        self.names: tuple[str, ...] = tuple(self._builders)
        self.default = default or self.names[0]
        if self.default not in self._builders:
            raise UnknownClusterError(self.default, tuple(sorted(self.names)))
        self.channel_defaults = dict(channel_defaults or {})
        self._timeouts = dict(timeouts or {})
        self._ports: dict[str, KubePort] = {}
        self._api_observer: Callable[..., None] | None = None

    def observe_api(self, observer: Callable[..., None]) -> None:
        """Have every cluster's port (built now or later) report its API calls to
        ``observer`` (the bot's metrics), where the port can (``observe_api``)."""
        self._api_observer = observer
        for port in self._ports.values():
            _observe(port, observer)

    @classmethod
    def single(cls, kube: KubePort, name: str = DEFAULT_CLUSTER) -> ClusterRegistry:
        """One cluster, already built (tests, the single-cluster setup, the CLI)."""
        registry = cls({name: lambda: kube})
        registry._ports[name] = kube
        return registry

    @classmethod
    def from_settings(
        cls, settings: ClusterConfig[K], *, build: Callable[[K], KubePort]
    ) -> ClusterRegistry:
        """``build`` makes one cluster's port from its connection settings
        (``Gateway.from_settings``); it runs on first use of that cluster, so a cluster that is
        never asked about is never connected to."""
        per_cluster = settings.cluster_connections()
        builders = {name: _builder(build, ks) for name, ks in per_cluster.items()}
        return cls(
            builders,
            default=settings.default_cluster,
            channel_defaults=settings.channel_clusters,
            timeouts=settings.cluster_timeouts(),
        )

    @property
    def multi(self) -> bool:
        """More than one cluster: messages name the cluster of each node."""
        return len(self.names) > 1

    def choose(self, explicit: str | None = None, *, channel: str = "") -> str:
        """The cluster a command means (see ``bot.core.model.clusters.choose_cluster``)."""
        return choose_cluster(
            explicit,
            channel=channel,
            known=self.names,
            default=self.default,
            channel_defaults=self.channel_defaults,
        )

    def port(self, name: str) -> KubePort:
        """The cluster's KubePort, built now if this is its first use."""
        if name not in self._builders:
            raise UnknownClusterError(name, tuple(sorted(self.names)))
        port = self._ports.get(name)
        if port is None:
            port = self._ports[name] = self._builders[name]()
            if self._api_observer is not None:
                _observe(port, self._api_observer)
        return port

    def stored(self, name: str) -> str:
        """The cluster a stored row (an incident, an action) names. A row stored before
        clusters existed names none (``''``) until ``Store.adopt_unclustered`` gives it the
        default at start-up; read before that (the terminal on an old store), it is the
        default cluster's. The one place that reads that old spelling."""
        return name if name else self.default

    def default_port(self) -> KubePort:
        """The default cluster's KubePort (the cluster the bot's Deployment runs in)."""
        return self.port(self.default)

    def prime_default(self) -> None:
        """Have the default cluster's port start what it keeps in memory (its ``prime``,
        where it has one: the gateway's pods and nodes informers), without waiting for it.
        The other clusters stay unconnected until asked about."""
        prime = getattr(self.default_port(), "prime", None)
        if callable(prime):
            prime()

    def timeout_s(self, name: str) -> float:
        return self._timeouts.get(name, DEFAULT_TIMEOUT_S)

    def close(self) -> None:
        """Close the ports that were built (those with a ``close``)."""
        for port in self._ports.values():
            close = getattr(port, "close", None)
            if callable(close):
                close()


def incident_at(clusters: ClusterRegistry, incident: Incident) -> NodeRef:
    """The incident's node in its cluster (an incident stored before clusters existed: the
    default cluster's, ``ClusterRegistry.stored``)."""
    return NodeRef(cluster=clusters.stored(incident.cluster), node=incident.node)


def _builder(build: Callable[[K], KubePort], ks: K) -> Callable[[], KubePort]:
    return lambda: build(ks)


@dataclass(frozen=True)
class ClusterAnswer(Generic[T]):
    """One cluster's share of a fan-out: its value, or the error that names it."""

    cluster: str
    value: T | None = None
    error: GpunodeError | None = None


async def fan_out(
    registry: ClusterRegistry,
    ask: Callable[[str, KubePort], Awaitable[T]],
    *,
    clusters: tuple[str, ...] | None = None,
) -> list[ClusterAnswer[T]]:
    """Ask every cluster (or ``clusters``) at once; each answers within its own timeout.

    The result keeps the registry's order. A cluster that times out, or cannot be reached,
    becomes a ``ClusterUnreachableError`` naming it; any other gpunode error is kept as it
    is (the caller names the cluster). The whole call takes about as long as the slowest
    *healthy* cluster, and never much longer than the largest timeout among those asked."""
    names = clusters if clusters is not None else registry.names
    return list(await asyncio.gather(*(_one(registry, name, ask) for name in names)))


async def _one(
    registry: ClusterRegistry, name: str, ask: Callable[[str, KubePort], Awaitable[T]]
) -> ClusterAnswer[T]:
    timeout = registry.timeout_s(name)
    try:
        async with asyncio.timeout(timeout):
            return ClusterAnswer(name, value=await ask(name, registry.port(name)))
    except TimeoutError:
        log.warning("cluster %s did not answer within %gs", name, timeout)
        return ClusterAnswer(name, error=ClusterUnreachableError(name, waited_s=timeout))
    except ClusterUnreachableError as err:
        return ClusterAnswer(name, error=err)
    except KubeUnavailableError as err:
        return ClusterAnswer(name, error=ClusterUnreachableError(name, cause=err))
    except GpunodeError as err:  # forbidden, a bad kubeconfig...: said as it is, with its name
        return ClusterAnswer(name, error=err)
