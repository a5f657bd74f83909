"""The object store: objects by resource plural, one global resourceVersion, watch fan-out.

Runs on the sim's event loop only (no locks). Every write bumps the global resourceVersion,
stamps it on the object and publishes a watch event; a bounded history lets a watch resume
from a recent resourceVersion (older ones get 410 Gone, as etcd compaction would give).

A stored object is never changed in place: every change is a ``put`` of a new version (a
copy changed), as every change through the API server is a write that bumps the
resourceVersion. The store keeps each object's JSON encoding once made (``encoded``, as the
API server's watch cache keeps its objects' serializations) and forgets it on the key's next
``put`` or ``remove`` (and so drops what a reader derived from it and keeps in a ``derived``
dict: the pod metrics items); an object changed in place would be served as it was. With
``KUBESIM_CHECK_ENCODED=1`` in the environment (the test suite sets it) every use of a kept
encoding encodes the object again and raises ``ChangedInPlaceError`` when they differ.
"""

from __future__ import annotations

import asyncio
import bisect
import builtins
import os
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

Obj = dict[str, Any]
HISTORY = 20_000  # events kept for watch resumption; older resourceVersions answer 410
#: the environment variable that makes every use of a kept encoding check it (``Store``)
CHECK_ENCODED = "KUBESIM_CHECK_ENCODED"


class ChangedInPlaceError(AssertionError):
    """A stored object differs from its kept encoding: it was changed without ``put``."""


@dataclass
class WatchEvent:
    rv: int
    type: str  # ADDED | MODIFIED | DELETED
    plural: str
    obj: Obj


@dataclass(eq=False)
class Watcher:
    plural: str
    #: the events to send, in order; None: the server is shutting down, end the watch
    queue: asyncio.Queue[WatchEvent | None] = field(default_factory=asyncio.Queue)


T = TypeVar("T")


def clone(o: T) -> T:
    """A deep copy of JSON data (dicts, lists, scalars); ~5x faster than copy.deepcopy."""
    t = type(o)
    if t is dict:
        return {k: clone(v) for k, v in o.items()}  # type: ignore[attr-defined, return-value]
    if t is list:
        return [clone(v) for v in o]  # type: ignore[attr-defined, return-value]
    return o


def key_of(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta["name"])


class Store:
    """In-memory objects keyed by ``(namespace, name)`` per plural.

    Contract: an object the store holds (``get``, ``list``, ``scan``, what ``put`` returns)
    is read-only; to change one, ``put`` a changed copy (see the module's docstring)."""

    def __init__(self) -> None:
        self._objs: dict[str, dict[tuple[str, str], Obj]] = {}
        # keys in API order (namespace, name) per plural, sorted lazily after adds/removes:
        # a page is a bisect plus its own items, O(page) as the API server's watch cache
        self._sorted: dict[str, builtins.list[tuple[str, str]]] = {}
        # pods by spec.nodeName (the API server indexes this field selector too)
        self._pods_on: dict[str, set[tuple[str, str]]] = {}
        self._node_of: dict[tuple[str, str], str] = {}
        self.rv = 1000
        self.history: deque[WatchEvent] = deque(maxlen=HISTORY)
        self.compacted_rv = 0  # a watch from before this answers 410 Gone (``compact``)
        self._watchers: set[Watcher] = set()
        #: writes per plural so far: a reader may reuse what it derived from one while unchanged
        self.writes: dict[str, int] = {}
        # each stored object's JSON encoding once made, per plural and key, until its next write
        self._encoded: dict[str, dict[tuple[str, str], bytes]] = {}
        # readers' dicts of what they derive from each object, per plural (``derived``)
        self._derived: dict[str, builtins.list[dict[tuple[str, str], Any]]] = {}
        #: encode again on every use of a kept encoding, and raise if the object changed
        self.check_encoded = os.environ.get(CHECK_ENCODED, "") not in ("", "0")

    def next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def get(self, plural: str, namespace: str | None, name: str) -> Obj | None:
        """The stored object itself (callers that hand it out must copy)."""
        return self._objs.get(plural, {}).get((namespace or "", name))

    def list(self, plural: str, namespace: str | None = None) -> list[Obj]:
        bucket = self._objs.get(plural, {})
        keys = sorted(k for k in bucket if namespace is None or k[0] == namespace)
        return [bucket[k] for k in keys]

    def plurals(self) -> builtins.list[str]:
        """The plurals that have held objects."""
        return builtins.list(self._objs)

    def keys(self, plural: str) -> builtins.list[tuple[str, str]]:
        """Every key of ``plural`` in API order (cached until the next add or remove)."""
        keys = self._sorted.get(plural)
        if keys is None:
            keys = self._sorted[plural] = sorted(self._objs.get(plural, {}))
        return keys

    def pods_on(self, node: str) -> builtins.list[tuple[str, str]]:
        """Keys of the pods whose ``spec.nodeName`` is ``node``, in API order."""
        return sorted(self._pods_on.get(node, ()))

    def scan(
        self,
        plural: str,
        namespace: str | None,
        *,
        after: tuple[str, str] | None = None,
        among: builtins.list[tuple[str, str]] | None = None,
    ) -> Iterator[tuple[tuple[str, str], Obj]]:
        """(key, stored object) in API order from just after ``after``: over ``among`` (an
        index's keys) when given, else over the namespace's (or every) key. Lazy: a page
        reads only as far as it needs."""
        keys = among if among is not None else self.keys(plural)
        lo = 0
        if namespace is not None:
            lo = bisect.bisect_left(keys, (namespace, ""))
        if after is not None:
            lo = max(lo, bisect.bisect_right(keys, after))
        bucket = self._objs.get(plural, {})
        for i in range(lo, len(keys)):
            k = keys[i]
            if namespace is not None and k[0] != namespace:
                return
            obj = bucket.get(k)
            if obj is not None:
                yield k, obj

    def encoded(
        self, plural: str, k: tuple[str, str], obj: Obj, encode: Callable[[Obj], bytes]
    ) -> bytes:
        """``encode(obj)``, made once per version of a stored object: kept while ``obj`` is
        the object stored at ``k`` (every ``put`` or ``remove`` of ``k`` forgets it). Any
        other object (an older version, a deleted one's last state) is encoded each time and
        not kept. ``encode`` must be one function for the store's life (the API's JSON)."""
        if self._objs.get(plural, {}).get(k) is not obj:
            return encode(obj)
        kept = self._encoded.setdefault(plural, {})
        text = kept.get(k)
        if text is None:
            text = kept[k] = encode(obj)
        elif self.check_encoded and encode(obj) != text:
            raise ChangedInPlaceError(
                f"{plural} {'/'.join(p for p in k if p)} was changed in place, without a put: "
                "a stored object is read-only (put a changed copy)"
            )
        return text

    def derived(self, plural: str) -> dict[tuple[str, str], Any]:
        """A new dict for what a reader derives from ``plural``'s stored objects, keyed as
        they are: the store drops a key's entry on the key's every ``put`` or ``remove`` (as
        it forgets the key's encoding), so an entry is about the object stored at its key
        now and none outlives its object. The reader clears it, never replaces it."""
        made: dict[tuple[str, str], Any] = {}
        self._derived.setdefault(plural, []).append(made)
        return made

    def _index(self, plural: str, k: tuple[str, str], obj: Obj | None, *, new: bool) -> None:
        self.writes[plural] = self.writes.get(plural, 0) + 1
        if kept := self._encoded.get(plural):
            kept.pop(k, None)  # the next answer encodes the new version (or none: removed)
        for derived in self._derived.get(plural, ()):
            derived.pop(k, None)  # made from the version written over (or removed)
        if new:
            self._sorted.pop(plural, None)
        if plural != "pods":
            return
        old = self._node_of.pop(k, None)
        if old is not None:
            self._pods_on.get(old, set()).discard(k)
        node = ((obj or {}).get("spec") or {}).get("nodeName") if obj is not None else None
        if node:
            self._node_of[k] = node
            self._pods_on.setdefault(node, set()).add(k)

    def put(self, plural: str, obj: Obj, *, event: str | None = None, owned: bool = False) -> Obj:
        """Store a copy of ``obj`` (or ``obj`` itself when ``owned``: the caller hands it
        over), stamp a new resourceVersion, publish.

        ``event`` defaults to ADDED for a new key and MODIFIED otherwise.
        """
        bucket = self._objs.setdefault(plural, {})
        k = key_of(obj)
        kind = event or ("MODIFIED" if k in bucket else "ADDED")
        stored = obj if owned else clone(obj)
        stored["metadata"]["resourceVersion"] = str(self.next_rv())
        self._index(plural, k, stored, new=k not in bucket)
        bucket[k] = stored
        self._publish(WatchEvent(self.rv, kind, plural, stored))
        return stored

    def remove(self, plural: str, namespace: str | None, name: str) -> Obj | None:
        obj = self._objs.get(plural, {}).pop((namespace or "", name), None)
        if obj is not None:
            self._index(plural, (namespace or "", name), None, new=True)
            gone = clone(obj)
            gone["metadata"]["resourceVersion"] = str(self.next_rv())
            self._publish(WatchEvent(self.rv, "DELETED", plural, gone))
        return obj

    def _publish(self, ev: WatchEvent) -> None:
        self.history.append(ev)
        for w in list(self._watchers):
            if w.plural == ev.plural:
                w.queue.put_nowait(ev)

    def subscribe(self, plural: str) -> Watcher:
        w = Watcher(plural)
        self._watchers.add(w)
        return w

    def unsubscribe(self, w: Watcher) -> None:
        self._watchers.discard(w)

    def open_watches(self) -> int:
        """How many watches are being served now."""
        return len(self._watchers)

    def end_watches(self) -> None:
        """Every open watch ends now, as the API server ends its long-running requests when
        it shuts down: its client sees the answer end and watches again elsewhere."""
        for w in list(self._watchers):
            w.queue.put_nowait(None)

    def compact(self) -> None:
        """Forget the history up to now, as etcd's compaction does: a watch that resumes
        from an older resourceVersion gets 410 Gone and has to list again."""
        self.compacted_rv = self.rv
        self.history.clear()

    def events_since(self, plural: str, rv: int) -> builtins.list[WatchEvent] | None:
        """Events after ``rv``, or None when ``rv`` is older than the kept history."""
        if rv < self.compacted_rv:
            return None
        if self.history and rv < self.history[0].rv - 1 and rv < self.rv:
            return None
        return [e for e in self.history if e.rv > rv and e.plural == plural]
