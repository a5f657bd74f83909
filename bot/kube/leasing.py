"""Read and write the leader-election Lease with the official client (``CoordinationV1Api``).

Every write is an optimistic-concurrency write: ``replace`` sends the ``resourceVersion``
that was read, so the API server answers 409 Conflict when another replica wrote first,
which arrives here as ``ConflictError`` (``bot.kube.errors.translate``). Sync client calls
run on the Lease's own thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from functools import partial
from typing import Any, Literal, TypeVar

from kubernetes import client

from bot.core.governance.leases import LeaseRecord
from bot.errors import GpunodeError, NotFoundError
from bot.kube.doing import Doing
from bot.kube.errors import translate

T = TypeVar("T")


class LeaseApi:
    """One Lease, ``namespace/name``; implements ``bot.services.leading.LeasePort``."""

    def __init__(self, api_client: client.ApiClient, *, namespace: str, name: str) -> None:
        self._api = client.CoordinationV1Api(api_client)
        self.namespace = namespace
        self.name = name
        # its own thread: a renewal never queues behind diagnoses' cluster reads in the
        # default executor (a late renewal costs the leadership)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpunode-lease")

    def _doing(self, key: Literal["read_lease", "create_lease", "update_lease"]) -> Doing:
        """The label of a request on this Lease (``bot.kube.doing``)."""
        return Doing.of(key, namespace=self.namespace, name=self.name)

    async def _call(
        self,
        what: Doing,
        fn: Callable[..., T],
        *args: Any,
        **kwargs: Any,
    ) -> T:
        try:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._executor, partial(fn, *args, **kwargs))
        except GpunodeError:
            raise
        except Exception as exc:
            raise translate(exc, what=what) from exc

    async def read(self) -> LeaseRecord | None:
        """The Lease, or None when it does not exist yet."""
        try:
            lease = await self._call(
                self._doing("read_lease"),
                self._api.read_namespaced_lease,
                self.name,
                self.namespace,
            )
        except NotFoundError:
            return None
        return _record(lease)

    async def create(self, record: LeaseRecord) -> LeaseRecord:
        """Create the Lease; ``ConflictError`` (409 AlreadyExists) when another replica did."""
        body = client.V1Lease(
            metadata=client.V1ObjectMeta(name=self.name, namespace=self.namespace),
            spec=_spec(record),
        )
        return _record(
            await self._call(
                self._doing("create_lease"), self._api.create_namespaced_lease, self.namespace, body
            )
        )

    async def replace(self, record: LeaseRecord) -> LeaseRecord:
        """Write ``record`` over the version it was read at; ``ConflictError`` if it moved."""
        body = client.V1Lease(
            metadata=client.V1ObjectMeta(
                name=self.name, namespace=self.namespace, resource_version=record.resource_version
            ),
            spec=_spec(record),
        )
        return _record(
            await self._call(
                self._doing("update_lease"),
                self._api.replace_namespaced_lease,
                self.name,
                self.namespace,
                body,
            )
        )


def _spec(record: LeaseRecord) -> Any:
    return client.V1LeaseSpec(
        holder_identity=record.holder or None,
        lease_duration_seconds=record.duration_s,
        acquire_time=record.acquire_time,
        renew_time=record.renew_time,
        lease_transitions=record.transitions,
    )


def _aware(at: datetime | None) -> datetime | None:
    if at is None:
        return None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _record(lease: Any) -> LeaseRecord:
    spec = lease.spec or client.V1LeaseSpec()
    return LeaseRecord(
        holder=spec.holder_identity or None,
        duration_s=int(spec.lease_duration_seconds or 0),
        acquire_time=_aware(spec.acquire_time),
        renew_time=_aware(spec.renew_time),
        transitions=int(spec.lease_transitions or 0),
        resource_version=lease.metadata.resource_version,
    )
