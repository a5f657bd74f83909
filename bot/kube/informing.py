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

It runs on a thread of its own; ``items`` is a copy taken under a lock.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from kubernetes.client.exceptions import ApiException

from bot.kube.transport import Transport

log = logging.getLogger(__name__)
Obj = dict[str, Any]
GONE = 410
MAX_BACKOFF_S = 30.0


class GoneError(Exception):
    """The resourceVersion the watch resumed from is older than the server keeps."""


def _key(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


class Informer:
    """``path``'s objects (those ``field_selector`` selects) as ``slim`` makes them."""

    def __init__(
        self,
        transport: Transport,
        path: str,
        *,
        slim: Callable[[Obj], Obj],
        field_selector: str | None = None,
        watch_s: int = 300,
        page_size: int = 500,
        bookmarks: bool = True,
        name: str = "informer",
    ) -> None:
        self.transport, self.path, self.slim = transport, path, slim
        self.field_selector, self.watch_s, self.page_size = field_selector, watch_s, page_size
        self.bookmarks, self.name = bookmarks, name
        self.synced = threading.Event()
        #: how many times it listed (1 after the first sync; each relist adds one)
        self.lists = 0
        self.resource_version: str | None = None
        #: namespace -> name -> slim object: a reader asks for the namespaces it needs
        self._items: dict[str, dict[str, Obj]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"gpunode-{self.name}")
            self._thread.daemon = True  # a watch in flight never holds the process open
            self._thread.start()

    def stop(self) -> None:
        """Stop after the watch in flight ends (at most ``watch_s``, or at once when the
        connections are closed under it); nothing is reported after this."""
        self._stop.set()
        self.synced.clear()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def items(self) -> list[Obj]:
        with self._lock:
            return [obj for held in self._items.values() for obj in held.values()]

    def items_in(self, namespaces: Iterable[str]) -> list[Obj]:
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
                if self._stop.is_set():
                    return
                log.warning("%s failed (%s); retrying in %.0f s", self.name, exc, backoff)
                self._stop.wait(backoff)
                backoff = min(MAX_BACKOFF_S, backoff * 2)

    def _list(self) -> str:
        items: dict[str, dict[str, Obj]] = {}
        token: str | None = None
        while True:
            page = self.transport.request(
                "GET",
                self.path,
                query=[
                    ("fieldSelector", self.field_selector),
                    ("limit", self.page_size),
                    ("continue", token),
                ],
            )
            for obj in page.get("items") or []:
                ns, name = _key(obj)
                items.setdefault(ns, {})[name] = self.slim(obj)
            meta = page.get("metadata") or {}
            token = meta.get("continue") or None
            if token is None:
                version = str(meta.get("resourceVersion") or "")
                break
        with self._lock:
            self._items = items
        self.resource_version = version
        self.lists += 1
        self.synced.set()
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
            lines = self.transport.watch_lines(self.path, query=query, timeout_s=self.watch_s + 30)
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
        if kind == "BOOKMARK":
            return version
        ns, name = _key(obj)
        with self._lock:
            if kind == "DELETED":
                held = self._items.get(ns)
                if held is not None:
                    held.pop(name, None)
                    if not held:
                        del self._items[ns]
            else:
                self._items.setdefault(ns, {})[name] = self.slim(obj)
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
