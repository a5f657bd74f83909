"""``gpunode agent``: the resident collector (DaemonSet mode), one per node, read-only.

It answers ``GET /v1/evidence`` with the same EvidenceBundle document ``gpunode collect``
prints (``bundle.collect_document``), read from the host tree at ``--root`` at the moment of
the request, and nothing else: no write, no command, no other path (``/healthz`` says ``ok``
without credentials, for the kubelet's probes).

Who may ask (the bot, and only the bot):
- the request carries ``Authorization: Bearer TOKEN``, a ServiceAccount token the bot got
  from a projected volume with the agent's own audience (``--audience``, default
  ``gpunode-agent``), so the token is good for agents only, never for the API server;
- the agent asks the API server about it with a TokenReview (authentication.k8s.io/v1,
  ``spec.audiences: [AUDIENCE]``), using its own ServiceAccount token (it holds only
  ``create tokenreviews``), and accepts only ``status.authenticated`` with AUDIENCE among
  ``status.audiences`` and ``status.user.username`` equal to ``--allow`` (the bot's
  ``system:serviceaccount:NS:NAME``). No token, or one the review rejects (unknown, expired,
  another audience): 401. Another identity: 403. The review could not be made: 503.
- it serves TLS only (``--tls-cert``/``--tls-key``, from a Secret the bot's CA file
  matches), so the bot verifies the agent before it sends its token.

Bounds: one collection at a time (a second request waits ``BUSY_WAIT_S``, then 503);
``MAX_CONNECTIONS`` open connections (more are closed at once); ``REQUEST_TIMEOUT_S`` per
socket read (TLS handshake and request included); no request body; a response over
``--max-response-bytes`` is refused (500) rather than sent. The token is never logged: the
access log holds the client address, the request line and the status only.

Imports: stdlib (http.server, ssl, urllib) and the collectors only ("the collector stays
light": no kubernetes client, no aiohttp, no pydantic).
"""

from __future__ import annotations

import argparse
import http.server
import json
import logging
import os
import socket
import ssl
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from bot.collectors.bundle import collect_document
from bot.errors import CollectorError

log = logging.getLogger("gpunode.agent")

EVIDENCE_PATH = "/v1/evidence"
DEFAULT_AUDIENCE = "gpunode-agent"
DEFAULT_PORT = 8443
#: seconds one socket read may block (the TLS handshake, the request line and headers)
REQUEST_TIMEOUT_S = 10.0
#: seconds a request waits for the collection in progress before it is told 503
BUSY_WAIT_S = 60.0
#: open connections at once; the bot makes one per diagnosis of this node
MAX_CONNECTIONS = 8
#: the bundle of a busy node is a few MiB; the Job mode reads at most 16 MiB of log
MAX_RESPONSE_BYTES = 16 * 1024 * 1024
#: seconds the TokenReview may take
REVIEW_TIMEOUT_S = 10.0
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


class RefusedError(Exception):
    """The request is refused: ``status`` and a short reason (no secret in it)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass
class Agent:
    """What the agent serves and whom it believes."""

    root: str
    allow: str
    api_server: str
    api_token_file: str
    api_ca_file: str | None = None
    audience: str = DEFAULT_AUDIENCE
    node_name: str | None = None
    top: int = 20
    kernel_log_window_s: int = 86400
    nvml_module: ModuleType | Any | None = None
    max_response_bytes: int = MAX_RESPONSE_BYTES
    review_timeout_s: float = REVIEW_TIMEOUT_S
    request_timeout_s: float = REQUEST_TIMEOUT_S
    max_connections: int = MAX_CONNECTIONS
    busy: threading.Lock = field(default_factory=threading.Lock)

    def _review(self, token: str) -> dict[str, Any]:
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token, "audiences": [self.audience]},
        }
        try:
            with open(self.api_token_file, encoding="utf-8") as fh:
                own = fh.read().strip()  # re-read: the kubelet rotates it
        except OSError as exc:
            raise RefusedError(503, f"cannot read the agent's own token: {exc.strerror}") from exc
        request = urllib.request.Request(  # noqa: S310 (http(s) only: see build)
            self.api_server.rstrip("/") + "/apis/authentication.k8s.io/v1/tokenreviews",
            data=json.dumps(body).encode(),
            method="POST",
            headers={
                "Authorization": f"Bearer {own}",
                "Content-Type": "application/json",
                "Accept": "application/json",
            },
        )
        context = None
        if self.api_server.startswith("https:"):
            context = ssl.create_default_context(cafile=self.api_ca_file)
        try:
            with urllib.request.urlopen(  # noqa: S310 (http(s) only: see build)
                request, timeout=self.review_timeout_s, context=context
            ) as resp:
                answer = json.loads(resp.read(1024 * 1024))
        except urllib.error.HTTPError as exc:
            raise RefusedError(
                503, f"the API server refused the TokenReview (HTTP {exc.code})"
            ) from exc
        except (OSError, ValueError) as exc:
            raise RefusedError(503, f"the TokenReview failed: {type(exc).__name__}") from exc
        status = answer.get("status") if isinstance(answer, dict) else None
        return status if isinstance(status, dict) else {}

    def check(self, authorization: str) -> str:
        """The caller's username when it is the allowed identity; else ``RefusedError``."""
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise RefusedError(401, "a bearer token is required")
        status = self._review(token)
        if status.get("authenticated") is not True:
            raise RefusedError(401, "the token was not accepted (TokenReview: not authenticated)")
        if self.audience not in (status.get("audiences") or []):
            # an authenticator that ignores audiences answers none: not good enough
            raise RefusedError(401, f"the token is not meant for audience {self.audience}")
        username = str((status.get("user") or {}).get("username") or "")
        if username != self.allow:
            raise RefusedError(
                403, f"{username or 'this identity'} may not read this node's evidence"
            )
        return username

    def evidence(self) -> bytes:
        """The bundle document as JSON bytes, one collection at a time."""
        if not self.busy.acquire(timeout=BUSY_WAIT_S):
            raise RefusedError(503, "a collection is already running; retry")
        try:
            doc = collect_document(
                self.root,
                top=self.top,
                nvml_module=self.nvml_module,
                node_name=self.node_name,
                kernel_log_window_s=self.kernel_log_window_s,
            )
        finally:
            self.busy.release()
        body = json.dumps(doc, separators=(",", ":")).encode()
        if len(body) > self.max_response_bytes:
            raise RefusedError(
                500,
                f"the evidence is {len(body)} bytes, over the agent's limit of "
                f"{self.max_response_bytes} (--max-response-bytes); lower --top",
            )
        return body


class _Handler(http.server.BaseHTTPRequestHandler):
    server: AgentServer
    server_version = "gpunode-agent"
    sys_version = ""
    timeout = None  # set per connection in setup, from the agent's request_timeout_s

    def setup(self) -> None:
        self.request.settimeout(self.server.agent.request_timeout_s)
        if isinstance(self.request, ssl.SSLSocket):
            self.request.do_handshake()  # here, in this connection's thread, under the timeout
        super().setup()

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        if status == 401:
            self.send_header("WWW-Authenticate", 'Bearer realm="gpunode-agent"')
        self.end_headers()
        self.wfile.write(body)

    def _refuse(self, status: int, reason: str) -> None:
        self._send(status, json.dumps({"error": reason}).encode())

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/healthz":
            self._send(200, b"ok\n", "text/plain")
            return
        if path != EVIDENCE_PATH:
            self._refuse(404, f"only GET {EVIDENCE_PATH} is served")
            return
        if self.headers.get("Content-Length", "0").strip() not in ("", "0"):
            self._refuse(413, "no request body is accepted")
            return
        agent = self.server.agent
        try:
            who = agent.check(self.headers.get("Authorization", ""))
            body = agent.evidence()
        except RefusedError as refused:
            log.warning("refused %s: %s", self.address_string(), refused.reason)
            self._refuse(refused.status, refused.reason)
            return
        log.info("evidence (%d bytes) for %s", len(body), who)
        self._send(200, body)

    def _not_allowed(self) -> None:
        self._refuse(405, f"only GET {EVIDENCE_PATH} is served")

    do_POST = do_PUT = do_PATCH = do_DELETE = _not_allowed  # noqa: N815

    def log_message(self, format: str, *args: Any) -> None:
        # the request line and status only: headers (the token) are never logged
        log.info("%s %s", self.address_string(), format % args)


class AgentServer(http.server.ThreadingHTTPServer):
    """The agent's HTTPS server: one thread per connection, at most ``agent.max_connections``
    (more are closed at once, before any TLS)."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], agent: Agent, tls: ssl.SSLContext | None) -> None:
        self.agent = agent
        self.tls = tls
        self.slots = threading.BoundedSemaphore(agent.max_connections)
        super().__init__(address, _Handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, addr = super().get_request()
        if self.tls is not None:  # the handshake runs in the connection's own thread
            sock = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, addr

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a failed handshake, a client that went away: one line, never a traceback
        log.warning("connection from %s ended in error", client_address[0])


def server_tls(cert_file: str, key_file: str) -> ssl.SSLContext:
    """TLS 1.2+ server context for the agent's certificate."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert_file, key_file)
    except (OSError, ssl.SSLError) as exc:
        raise CollectorError(
            f"cannot load the agent's TLS certificate {cert_file} / key {key_file}: {exc}; "
            "mount the gpunode-agent-tls Secret (README 'DaemonSet collector mode')"
        ) from exc
    return context


def _in_cluster_server() -> str:
    host = os.environ.get("KUBERNETES_SERVICE_HOST", "")
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    if not host:
        raise CollectorError(
            "no API server to review tokens with: pass --api-server, or run in a pod "
            "(KUBERNETES_SERVICE_HOST is unset)"
        )
    return f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"


def build(args: argparse.Namespace) -> tuple[Agent, ssl.SSLContext]:
    """The agent and its TLS context from the command line (``gpunode agent``)."""
    from bot.collectors.cli import load_fake_nvml

    if not args.allow.startswith("system:serviceaccount:") or args.allow.count(":") != 3:
        raise CollectorError(
            "--allow must name the bot's ServiceAccount as system:serviceaccount:NS:NAME"
        )
    if args.top < 0 or args.kernel_log_window < 0 or args.max_response_bytes < 1024:
        raise CollectorError(
            "--top and --kernel-log-window must be 0 or more, --max-response-bytes >= 1024"
        )
    server = args.api_server or _in_cluster_server()
    if not server.startswith(("https://", "http://")):
        raise CollectorError("--api-server must be an https:// (or http://) URL")
    agent = Agent(
        root=args.root,
        allow=args.allow,
        audience=args.audience,
        api_server=server,
        api_token_file=args.api_token_file,
        api_ca_file=args.api_ca_file,
        node_name=args.node_name,
        top=args.top,
        kernel_log_window_s=args.kernel_log_window,
        nvml_module=load_fake_nvml(args.fake_nvml) if args.fake_nvml else None,
        max_response_bytes=args.max_response_bytes,
    )
    return agent, server_tls(args.tls_cert, args.tls_key)


def main(args: argparse.Namespace) -> int:
    """Handler for ``gpunode agent``: serve until stopped."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    agent, tls = build(args)
    if agent.node_name is None:
        agent.node_name = os.environ.get("NODE_NAME") or None
    try:
        server = AgentServer((args.listen, args.port), agent, tls)
    except OSError as exc:  # taken, not an address of this host, a privileged port
        reason = exc.strerror or str(exc)
        raise CollectorError(
            f"cannot listen on {args.listen}:{args.port} ({reason}): choose another --port "
            "(0: any free port, named in the log) or --listen address"
        ) from None
    host, port = server.server_address[:2]  # the port bound, when --port is 0
    log.info("gpunode agent on %s:%d, answering %s only", host, port, agent.allow)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
