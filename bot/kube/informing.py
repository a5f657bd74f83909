"""An informer: one collection listed, then watched from the list's resourceVersion, kept in
memory as slim records (only the fields gpunode reads), as client-go's reflector does.

- The list is paged (``limit``/``continue``); its ``metadata.resourceVersion`` starts the watch.
- The watch asks for bookmarks (``allowWatchBookmarks``): a BOOKMARK carries only a newer
  resourceVersion, so a quiet watch resumes from there and does not fall behind compaction.
- A watch ends after ``watch_s`` (the server closes it) and resumes from the last version seen.
- 410 GoneError (the version was compacted away), as an ERROR event or as the answer's status:
  list again, replace everything, watch on.
- Any other failure: ``synced`` is cleared (readers fall back to reading the API), then after a
  back-off (1 s doubling to 30 s) list again.

It runs on a thread of its own; ``items`` is a copy taken under a lock. A large collection
(every pod of a 5,000-node cluster) is listed with ``pages``: each page's bytes are decoded
and cut to slim records by ``pages`` in the cluster's ``PageDecoder`` process, so neither the
decode nor the cut holds this process's interpreter lock (a page of 500 pods holds it for
10 ms on an idle core and far longer on a loaded one, and the event loop would wait that
long); ``share`` then lets records share equal parts (interned strings, one dict per distinct
request), so 150,000 records cost a few tens of MiB. Watch events come one object at a time
and are cut here by ``slim``.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

from kubernetes.client.exceptions import ApiException

from bot.kube.decoding import PageDecoder
from bot.kube.pages import SlimPage, gc_paused, list_token
from bot.kube.transport import Transport, WatchInterrupt

log = logging.getLogger(__name__)
Obj = dict[str, Any]
GONE = 410
MAX_BACKOFF_S = 30.0
#: list pages being cut while the next one is fetched
AHEAD = 2
R = TypeVar("R")


class GoneError(Exception):
    """The resourceVersion the watch resumed from is older than the server keeps."""


def _key(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


class Informer(Generic[R]):
    """``path``'s objects (those ``field_selector`` selects) as ``slim`` makes them (None:
    nothing of that object is kept); ``pages`` (with ``decoder``): how a whole list page is
    cut (see the module docstring)."""

    def __init__(
        self,
        transport: Transport,
        path: str,
        *,
        slim: Callable[[Obj], R | None],
        field_selector: str | None = None,
        watch_s: int = 300,
        page_size: int = 500,
        bookmarks: bool = True,
        name: str = "informer",
        pages: Callable[[bytes], SlimPage[R]] | None = None,
        decoder: PageDecoder | None = None,
        share: Callable[[R], R] | None = None,
    ) -> None:
        self.transport, self.path, self.slim = transport, path, slim
        self.field_selector, self.watch_s, self.page_size = field_selector, watch_s, page_size
        self.bookmarks, self.name = bookmarks, name
        self.pages, self.decoder, self.share = pages, decoder, share
        self.synced = threading.Event()
        #: set once the first list ended, listed or failed (a reader waits for no longer)
        self.answered = threading.Event()
        #: how many times it listed (1 after the first sync; each relist adds one)
        self.lists = 0
        #: failed lists or watches since the last good list (readers stop waiting on one)
        self.failures = 0
        #: bumped by every change to what it holds (a reader may reuse what it derived)
        self.generation = 0
        #: ``time.monotonic()`` when it last heard from the server (a list, event or bookmark)
        self.heard_at = 0.0
        self.resource_version: str | None = None
        #: namespace -> name -> slim object: a reader asks for the namespaces it needs
        self._items: dict[str, dict[str, R]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        #: ends the watch in flight when stopped (``stop``)
        self._interrupt = WatchInterrupt()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"gpunode-{self.name}")
            self._thread.daemon = True  # a watch in flight never holds the process open
            self._thread.start()

    def stop(self) -> None:
        """Stop now: the watch in flight is ended under its reader (its socket shut, so the
        server sees the watch closed), a list in flight ends within the request timeout, and
        nothing is reported after this. Does not wait for the thread."""
        with self._lock:  # never synced after this, even by a list ending now (``_list``)
            self._stop.set()
            self.synced.clear()
        self.answered.set()
        self._interrupt.set()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    @property
    def running(self) -> bool:
        """Whether its thread still runs (it ends soon after ``stop``)."""
        return self._thread is not None and self._thread.is_alive()

    def items(self) -> list[R]:
        with self._lock:
            return [obj for held in self._items.values() for obj in held.values()]

    def keyed(self) -> Iterator[tuple[str, str, R]]:
        """(namespace, name, record) of everything held, in the API's list order, copied a
        namespace at a time (never a second copy of 150,000 pods at once): a change the
        watch applies meanwhile shows in the namespaces not yet reached."""
        with self._lock:
            namespaces = sorted(self._items)
        for ns in namespaces:
            with self._lock:
                names = dict(self._items.get(ns) or {})
            for name in sorted(names):
                yield ns, name, names[name]

    def keyed_in(self, namespace: str) -> list[tuple[str, str, R]]:
        """(namespace, name, record) of ``namespace`` only, by name: O(its objects)."""
        with self._lock:
            names = dict(self._items.get(namespace) or {})
        return [(namespace, name, names[name]) for name in sorted(names)]

    def get(self, namespace: str, name: str) -> R | None:
        """The record of ``namespace``/``name``, or None when none is held."""
        with self._lock:
            return (self._items.get(namespace) or {}).get(name)

    def items_in(self, namespaces: Iterable[str]) -> list[R]:
        """The objects of ``namespaces`` only: O(those objects), not O(all it holds)."""
        with self._lock:
            return [obj for ns in namespaces for obj in (self._items.get(ns) or {}).values()]

    # -- the loop -----------------------------------------------------------------------
    def _run(self) -> None:
        backoff = 1.0
        while not self._stop.is_set():
            try:
                version = self._list()
                backoff = 1.0
                while not self._stop.is_set():
                    version = self._watch(version)
            except GoneError as exc:
                log.info("%s: %s; listing again", self.name, exc)
            except Exception as exc:
                self.synced.clear()
                self.failures += 1
                self.answered.set()
                if self._stop.is_set():
                    return
                log.warning("%s failed (%s); retrying in %.0f s", self.name, exc, backoff)
                self._stop.wait(backoff)
                backoff = min(MAX_BACKOFF_S, backoff * 2)

    def _query(self, token: str | None) -> list[tuple[str, Any]]:
        return [
            ("fieldSelector", self.field_selector),
            ("limit", self.page_size),
            ("continue", token),
        ]

    def _list_pages(
        self, pages: Callable[[bytes], SlimPage[R]]
    ) -> tuple[dict[str, dict[str, R]], str]:
        """Every page cut by ``pages`` in the decoder, the next page fetched while earlier
        ones are cut (its ``continue`` token is read from the metadata the server writes
        first; at most ``AHEAD`` wait), merged in order."""
        items: dict[str, dict[str, R]] = {}
        version = ""
        share = self.share

        def merge(cut: SlimPage[R]) -> None:
            nonlocal version
            with gc_paused():  # slim records are acyclic; see pages.gc_paused
                for ns, name, record in cut.items:
                    items.setdefault(ns, {})[name] = record if share is None else share(record)
            version = cut.resource_version

        pending: deque[Future[SlimPage[R]]] = deque()
        token: str | None = None
        while True:
            body = self.transport.request_bytes("GET", self.path, query=self._query(token))
            found, token = list_token(body)
            future = self._cut(pages, body)
            del body
            if not found:  # shaped otherwise: wait for the cut to know the next page
                while pending:
                    merge(pending.popleft().result())
                cut = future.result()
                merge(cut)
                token = cut.token
            else:
                pending.append(future)
            while pending and (len(pending) > AHEAD or not token):
                merge(pending.popleft().result())
            if not token:
                return items, version

    def _list_here(self) -> tuple[dict[str, dict[str, R]], str]:
        """Every page decoded and cut by ``slim`` on this thread (a small collection)."""
        items: dict[str, dict[str, R]] = {}
        token: str | None = None
        while True:
            page = self.transport.request("GET", self.path, query=self._query(token))
            for obj in page.get("items") or []:
                ns, name = _key(obj)
                record = self.slim(obj)
                if record is not None:
                    items.setdefault(ns, {})[name] = record
            meta = page.get("metadata") or {}
            token = meta.get("continue") or None
            if token is None:
                return items, str(meta.get("resourceVersion") or "")

    def _cut(self, pages: Callable[[bytes], SlimPage[R]], body: bytes) -> Future[SlimPage[R]]:
        if self.decoder is not None:
            return self.decoder.submit(pages, body)
        done: Future[SlimPage[R]] = Future()
        try:
            done.set_result(pages(body))
        except Exception as exc:
            done.set_exception(exc)
        return done

    def _list(self) -> str:
        if self.pages is not None:
            items, version = self._list_pages(self.pages)
        else:
            items, version = self._list_here()
        with self._lock:
            self._items = items
            self.generation += 1
            self.resource_version = version
            self.heard_at = time.monotonic()
            self.lists += 1
            self.failures = 0
            if not self._stop.is_set():
                self.synced.set()
        self.answered.set()
        return version

    def _watch(self, version: str) -> str:
        query = [
            ("watch", "true"),
            ("resourceVersion", version),
            ("allowWatchBookmarks", "true" if self.bookmarks else None),
            ("timeoutSeconds", self.watch_s),
            ("fieldSelector", self.field_selector),
        ]
        try:
            lines = self.transport.watch_lines(
                self.path, query=query, timeout_s=self.watch_s + 30, interrupt=self._interrupt
            )
            for line in lines:
                if self._stop.is_set():
                    break
                version = self._apply(json.loads(line), version)
        except ApiException as exc:
            if exc.status == GONE:
                raise GoneError(f"watch from resourceVersion {version}: 410 GoneError") from exc
            raise
        return version

    def _apply(self, event: Obj, version: str) -> str:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == GONE:
                raise GoneError(f"watch from resourceVersion {version}: {obj.get('message', '')}")
            raise RuntimeError(f"watch error {obj.get('code')}: {obj.get('message', '')}")
        version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
        self.resource_version = version
        self.heard_at = time.monotonic()
        if kind == "BOOKMARK":
            return version
        ns, name = _key(obj)
        record = None if kind == "DELETED" else self.slim(obj)
        if record is not None and self.share is not None:
            record = self.share(record)
        with self._lock:
            self.generation += 1
            if record is None:
                held = self._items.get(ns)
                if held is not None:
                    held.pop(name, None)
                    if not held:
                        del self._items[ns]
            else:
                self._items.setdefault(ns, {})[name] = record
        return version


def slim_event(event: Obj) -> Obj:
    """The fields ``bot.kube.objects.parse_event`` and the events' ordering read."""
    meta = event.get("metadata") or {}
    involved = event.get("involvedObject") or event.get("regarding") or {}
    series = event.get("series") or {}
    out: Obj = {
        "metadata": {k: meta[k] for k in ("namespace", "name", "creationTimestamp") if k in meta},
        "involvedObject": {k: involved[k] for k in ("kind", "name") if k in involved},
    }
    for k in ("reason", "message", "note", "type", "count"):
        if event.get(k) is not None:
            out[k] = event[k]
    for k in ("lastTimestamp", "eventTime", "firstTimestamp"):
        if event.get(k):
            out[k] = event[k]
    if series:
        out["series"] = {k: series[k] for k in ("count", "lastObservedTime") if k in series}
    return out
