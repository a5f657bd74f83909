"""Raw JSON requests through the official client's ApiClient (auth, TLS, pooling, retries).

Why not the typed ``CoreV1Api`` models: the gateway wants API JSON (the allocation port
reads ``kubectl get -o json`` shapes) and model deserialization dominates large lists
(see bench/fleet.py). Every request still goes through ``ApiClient.param_serialize`` and
``call_api``, so authentication and configuration are the client's own.

Impersonation: while ``ACTING_AS`` holds an identity, every request carries
``Impersonate-User``, one ``Impersonate-Group`` header per group and one
``Impersonate-Extra-<key>`` header per extra value (the key lower-cased and percent-encoded,
as kube-apiserver decodes it), so the API server authorizes the person, not the bot.

Sync on purpose: the gateway runs it on its own threads. Errors are client exceptions here;
``bot.kube.errors`` translates them at the gateway's boundary.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3 import HTTPHeaderDict
from urllib3.exceptions import HTTPError as Urllib3Error

from bot.core.governance.impersonation import ActingAs
from bot.kube.observing import KubeObserver, resource_of
from bot.kube.pages import gc_paused

#: seconds for one ordinary request (connect + read); watches use their own timeouts
REQUEST_TIMEOUT_S = 30.0

#: who the requests made in this context impersonate (None: the bot itself); the gateway sets
#: it in the thread that runs one call of an impersonating view
ACTING_AS: contextvars.ContextVar[ActingAs | None] = contextvars.ContextVar(
    "gpunode_acting_as", default=None
)

SMP = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


@dataclass
class Seen:
    """The status an observed request ended with (None: no answer came)."""

    status: int | None


class WatchInterrupt:
    """Ends a watch from another thread (an informer's ``stop``): ``set`` shuts the reading
    side of the watch's socket, so a read blocked on it returns at once, not when the server
    next writes or the watch times out; a watch started after ``set`` is shut as it opens.
    The watch then ends as if its server had ended it, and its connection is closed, never
    handed back to the pool (a connection shut under one request must serve no other)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._set = False
        self._stream: Any = None  # the urllib3 response of the watch in flight

    def set(self) -> None:
        with self._lock:  # under the lock: the stream cannot be released meanwhile
            self._set = True
            if self._stream is not None:
                _shut(self._stream)

    def is_set(self) -> bool:
        return self._set

    def _attach(self, stream: Any) -> None:
        with self._lock:
            self._stream = stream
            if self._set:
                _shut(stream)

    def _detach(self) -> None:
        with self._lock:
            self._stream = None


def _shut(stream: Any) -> None:
    # urllib3's HTTPResponse.shutdown (2.3+, pinned): shutdown(SHUT_RD) of its socket. It
    # refuses a response already closed or released: then nothing is left to end
    with contextlib.suppress(ValueError, RuntimeError, OSError):
        stream.shutdown()


class Transport:
    """``request`` returns parsed JSON (or text with ``text=True``); raises ApiException.

    ``observer`` (optional) hears about every request once it ended: verb, resource and HTTP
    status, None when no answer came (the bot's metrics count API errors here)."""

    def __init__(self, api_client: client.ApiClient, *, timeout_s: float = REQUEST_TIMEOUT_S):
        self.api_client = api_client
        self.timeout_s = timeout_s
        self.observer: KubeObserver | None = None

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, Any]] = (),
        body: Any = None,
        content_type: str | None = None,
        text: bool = False,
        timeout_s: float | None = None,
    ) -> Any:
        data = self.request_bytes(
            method,
            path,
            query=query,
            body=body,
            content_type=content_type,
            text=text,
            timeout_s=timeout_s,
        )
        if text:
            return data.decode("utf-8", "replace")
        if not data:
            return {}
        with gc_paused():
            return json.loads(data)

    def request_bytes(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, Any]] = (),
        body: Any = None,
        content_type: str | None = None,
        text: bool = False,
        timeout_s: float | None = None,
    ) -> bytes:
        """The answer's body undecoded (a page of a list, for a decoder elsewhere)."""
        headers = {"Accept": "text/plain" if text else "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type or "application/json"
        method_, url, header_params, body_, _ = self.api_client.param_serialize(
            method=method,
            resource_path=path,
            query_params=[(k, v) for k, v in query if v is not None],
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        acting = ACTING_AS.get()
        sent: Mapping[str, str] = (
            header_params if acting is None else impersonation_headers(header_params, acting)
        )
        with self.observed(method, path) as seen:
            response = self.api_client.call_api(
                method_,
                url,
                header_params=sent,  # a dict, or an HTTPHeaderDict when impersonating
                body=body_,
                _request_timeout=timeout_s or self.timeout_s,
            )
            seen.status = int(response.status)
            data = response.read()  # type: ignore[no-untyped-call]
        if not 200 <= response.status <= 299:
            raise ApiException.from_response(
                http_resp=response, body=data.decode("utf-8", "replace"), data=None
            )
        return bytes(data)

    def request_chunks(
        self, path: str, *, query: Sequence[tuple[str, Any]] = (), chunk_bytes: int
    ) -> Iterator[bytes]:
        """A GET's answer as it streams, in pieces of about ``chunk_bytes``: a caller that
        hands each piece on never holds the whole body (a metrics-server pod list comes in
        one piece, tens of MB on a large cluster). Raises ApiException when refused."""
        method_, url, header_params, _, _ = self.api_client.param_serialize(
            method="GET",
            resource_path=path,
            query_params=[(k, v) for k, v in query if v is not None],
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        acting = ACTING_AS.get()
        sent: Mapping[str, str] = (
            header_params if acting is None else impersonation_headers(header_params, acting)
        )
        with self.observed("GET", path) as seen:
            response = self.api_client.call_api(
                method_, url, header_params=sent, _request_timeout=self.timeout_s
            )
            seen.status = int(response.status)
            if not 200 <= response.status <= 299:
                data = response.read()  # type: ignore[no-untyped-call]
                raise ApiException.from_response(
                    http_resp=response, body=data.decode("utf-8", "replace"), data=None
                )
            stream, done = response.response, False
            held = bytearray()
            try:
                # a chunked answer comes in the server's own chunks (often a few KiB): they
                # are joined, so each piece handed on is about ``chunk_bytes``
                for chunk in stream.stream(amt=chunk_bytes, decode_content=True):
                    held += chunk
                    if len(held) >= chunk_bytes:
                        yield bytes(held)
                        held.clear()
                if held:
                    yield bytes(held)
                done = True
            finally:
                if done:
                    stream.release_conn()
                else:  # left unread: the connection cannot serve another request
                    stream.close()

    def watch_lines(
        self,
        path: str,
        *,
        query: Sequence[tuple[str, Any]],
        timeout_s: float,
        interrupt: WatchInterrupt | None = None,
    ) -> Iterator[str]:
        """A watch's answer (``watch=true`` in ``query``) line by line as it streams; reported
        as verb ``WATCH`` when it ends. Raises ApiException when the server refuses it. Made
        as the bot itself (informers are the bot's, never a person's view). ``interrupt``:
        ended early when it is set (the lines end; nothing is raised)."""
        method_, url, header_params, _, _ = self.api_client.param_serialize(
            method="GET",
            resource_path=path,
            query_params=[(k, v) for k, v in query if v is not None],
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        with self.observed("WATCH", path) as seen:
            response = self.api_client.call_api(
                method_, url, header_params=header_params, _request_timeout=timeout_s
            )
            seen.status = int(response.status)
            if not 200 <= response.status <= 299:
                data = response.read()  # type: ignore[no-untyped-call]
                raise ApiException.from_response(
                    http_resp=response, body=data.decode("utf-8", "replace"), data=None
                )
            rest, stream, ended = b"", response.response, False
            if interrupt is not None:
                interrupt._attach(stream)
            try:
                for chunk in stream.stream(amt=None, decode_content=False):
                    *lines, rest = (rest + chunk).split(b"\n")
                    yield from (line.decode("utf-8", "replace") for line in lines if line.strip())
                ended = interrupt is None or not interrupt.is_set()
            except (Urllib3Error, OSError):
                if interrupt is None or not interrupt.is_set():
                    raise  # not ours: the watch failed
                # ours: the read under the shut socket failed, as it must
            finally:
                if interrupt is not None:
                    interrupt._detach()
                if ended:
                    stream.release_conn()
                else:  # left mid-watch or shut: the connection cannot serve another request
                    stream.close()

    @contextmanager
    def observed(self, verb: str, path: str) -> Iterator[Seen]:
        """Report one request (or a watch: ``verb="WATCH"``) to ``observer`` once it ends:
        the status set on the yielded ``Seen`` (200 unless set), the status of an
        ApiException raised inside, None for any other failure (no answer); a stream its
        reader stopped reading (``GeneratorExit``: a watch whose answer was found) ended
        well."""
        seen = Seen(200)
        try:
            yield seen
        except ApiException as exc:
            seen.status = int(exc.status) if exc.status else None
            raise
        except GeneratorExit:
            raise
        except BaseException:
            seen.status = None
            raise
        finally:
            if self.observer is not None:
                self.observer(verb, resource_of(path), seen.status)

    def get(self, path: str, **query: Any) -> Any:
        return self.request("GET", path, query=_query(query))

    def list_all(self, path: str, *, page_size: int = 500, **query: Any) -> list[Any]:
        """Every item of a list, following ``continue`` tokens (pages of ``page_size``)."""
        return list(self.iter_items(path, page_size=page_size, **query))

    def iter_items(self, path: str, *, page_size: int = 500, **query: Any) -> Iterator[Any]:
        token: str | None = None
        while True:
            page = self.request(
                "GET", path, query=[*_query(query), ("limit", page_size), ("continue", token)]
            )
            yield from page.get("items") or []
            token = (page.get("metadata") or {}).get("continue") or None
            if not token:
                return


def impersonation_headers(headers: Mapping[str, str], acting: ActingAs) -> HTTPHeaderDict:
    """``headers`` plus the impersonation headers of ``acting`` (repeated headers kept apart:
    kube-apiserver reads each ``Impersonate-Group`` line as one group)."""
    out = HTTPHeaderDict(dict(headers))
    out["Impersonate-User"] = acting.user
    for group in acting.groups:
        out.add("Impersonate-Group", group)
    for key, values in acting.extra:
        name = "Impersonate-Extra-" + quote(key.lower(), safe="")
        for value in values:
            out.add(name, value)
    return out


def _query(params: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """snake_case keyword arguments to the API's camelCase query parameters."""
    out = []
    for key, value in params.items():
        head, *rest = key.split("_")
        out.append((head + "".join(part.title() for part in rest), value))
    return out
