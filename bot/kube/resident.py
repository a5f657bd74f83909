"""DaemonSet collector mode: ask the node's resident agent (``gpunode agent``) for evidence.

Sync functions (the gateway runs them in its threads). The bot never creates a Job here;
it needs only reads (the DaemonSet, the pods on the node) and the agent's answer.

The bot authenticates the agent before it sends anything secret:
1. through the API: the pod is on the node (``spec.nodeName``), its controller owner
   reference names the DaemonSet ``kube.agent_daemonset`` in the bot's namespace *with
   that DaemonSet's current uid*, it runs the DaemonSet's ServiceAccount, it is Running and
   Ready and has a pod IP; any other pod (an impostor that copies the labels, an orphan, a
   pod of another DaemonSet) is never contacted;
2. over TLS: the agent must present a certificate for ``kube.agent_server_name`` signed by
   the CA in ``kube.agent_ca_file`` (the Secret gpunode-agent-tls); the handshake happens
   before the request, so a pod that holds an IP but not the key gets no token.
Only then the bot sends its token: a projected ServiceAccount token with the agent's own
audience (``kube.agent_token_file``), which the API server refuses for anything else, so
even an agent that was compromised cannot replay it against the cluster.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
from typing import Any

from kubernetes.client.exceptions import ApiException

from bot.config import KubeSettings
from bot.errors import DiagnosticJobError
from bot.kube.transport import Transport

Obj = dict[str, Any]

EVIDENCE_PATH = "/v1/evidence"
#: the most the bot reads of an answer (the Job mode's log cap too)
MAX_EVIDENCE_BYTES = 16 * 1024 * 1024


def _controller(pod: Obj) -> Obj | None:
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller") is True:
            return ref  # type: ignore[no-any-return]
    return None


def _ready(pod: Obj) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )


def find_agent(t: Transport, settings: KubeSettings, node: str) -> Obj:
    """The agent pod of ``node`` (see the module's docstring for what makes it one);
    DiagnosticJobError ``agent_not_found`` / ``agent_not_ready`` otherwise."""
    ns, name = settings.namespace, settings.agent_daemonset
    try:
        ds = t.get(f"/apis/apps/v1/namespaces/{ns}/daemonsets/{name}")
    except ApiException as exc:
        if exc.status != 404:
            raise  # the gateway translates it
        raise DiagnosticJobError(
            f"the agent DaemonSet {ns}/{name} does not exist; apply "
            "deploy/overlays/daemonset, or set kube.collector_mode=job",
            code="agent_not_found",
            key="agent_daemonset_missing",
            params={"daemonset": f"{ns}/{name}"},
        ) from exc
    uid = (ds.get("metadata") or {}).get("uid")
    account = ((ds.get("spec") or {}).get("template") or {}).get("spec", {}).get(
        "serviceAccountName"
    ) or "default"
    listing = t.get(f"/api/v1/namespaces/{ns}/pods", field_selector=f"spec.nodeName={node}")
    owned = []
    for pod in listing.get("items") or []:
        ref = _controller(pod) or {}
        if (
            ref.get("kind") == "DaemonSet"
            and ref.get("name") == name
            and ref.get("uid") == uid
            and (pod.get("spec") or {}).get("nodeName") == node
            and ((pod.get("spec") or {}).get("serviceAccountName") or "default") == account
            and not (pod.get("metadata") or {}).get("deletionTimestamp")
        ):
            owned.append(pod)
    if not owned:
        raise DiagnosticJobError(
            f"no pod of the agent DaemonSet {ns}/{name} runs on {node}; check the "
            "DaemonSet's node selector and tolerations (kubectl -n "
            f"{ns} get pods -o wide), then retry",
            code="agent_not_found",
            key="agent_pod_missing",
            params={"daemonset": f"{ns}/{name}", "node": node, "namespace": ns},
        )
    ready = [p for p in owned if _ready(p) and (p.get("status") or {}).get("podIP")]
    if not ready:
        pod = owned[0]["metadata"]["name"]
        raise DiagnosticJobError(
            f"the agent pod {ns}/{pod} on {node} is not ready; look at its events and log",
            code="agent_not_ready",
            key="agent_not_ready",
            params={"pod": f"{ns}/{pod}", "node": node},
        )
    return ready[0]  # type: ignore[no-any-return]


class _AgentConnection(http.client.HTTPSConnection):
    """HTTPS to a pod IP, checking the certificate against a fixed name (pods come and go
    with new IPs; the certificate names the agent, not an address)."""

    def __init__(
        self, ip: str, port: int, *, server_name: str, tls: ssl.SSLContext, timeout: float
    ) -> None:
        super().__init__(ip, port, timeout=timeout, context=tls)
        self.server_name = server_name
        self.tls = tls

    def connect(self) -> None:
        sock = socket.create_connection((self.host, self.port), self.timeout)
        try:
            self.sock = self.tls.wrap_socket(sock, server_hostname=self.server_name)
        except BaseException:
            sock.close()
            raise


def _read_token(settings: KubeSettings) -> str:
    try:
        with open(settings.agent_token_file, encoding="utf-8") as fh:
            token = fh.read().strip()  # re-read each time: the kubelet rotates it
    except OSError as exc:
        raise DiagnosticJobError(
            f"cannot read the bot's agent token {settings.agent_token_file} "
            f"({exc.strerror}); mount the projected token of deploy/overlays/daemonset",
            code="agent_token",
            key="agent_token_unreadable",
            params={"path": settings.agent_token_file, "error": str(exc.strerror)},
        ) from exc
    if not token:
        raise DiagnosticJobError(
            f"the bot's agent token {settings.agent_token_file} is empty",
            code="agent_token",
            key="agent_token_empty",
            params={"path": settings.agent_token_file},
        )
    return token


def agent_tls(settings: KubeSettings) -> ssl.SSLContext:
    """The client TLS context that trusts only the agents' CA."""
    try:
        context = ssl.create_default_context(cafile=settings.agent_ca_file)
    except (OSError, ssl.SSLError) as exc:
        raise DiagnosticJobError(
            f"cannot load the agents' CA {settings.agent_ca_file} ({exc}); mount ca.crt of "
            "the gpunode-agent-tls Secret (README 'DaemonSet collector mode')",
            code="agent_tls",
            key="agent_ca_unreadable",
            params={"path": settings.agent_ca_file, "error": str(exc)},
        ) from exc
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def fetch_evidence(pod: Obj, settings: KubeSettings, node: str) -> str:
    """The agent's evidence JSON: TLS first (the agent proves itself), then the token."""
    ip = str(pod["status"]["podIP"])
    where = f"the agent {pod['metadata']['name']} on {node} ({ip}:{settings.agent_port})"
    # the agent as the words name it: its pod, node, address and port
    at: dict[str, object] = {
        "agent": str(pod["metadata"]["name"]),
        "node": node,
        "address": f"{ip}:{settings.agent_port}",
    }
    tls = agent_tls(settings)
    conn = _AgentConnection(
        ip,
        settings.agent_port,
        server_name=settings.agent_server_name,
        tls=tls,
        timeout=settings.agent_timeout_s,
    )
    try:
        try:
            conn.connect()
        except ssl.SSLError as exc:
            raise DiagnosticJobError(
                f"{where} did not prove itself ({exc.__class__.__name__}: "
                f"{getattr(exc, 'verify_message', '') or exc.reason}); the bot sent it no "
                "token. Check that its certificate comes from the gpunode-agent-tls Secret "
                f"and names {settings.agent_server_name}",
                code="agent_unverified",
                key="agent_unverified",
                params={
                    **at,
                    "error": f"{exc.__class__.__name__}: "
                    f"{getattr(exc, 'verify_message', '') or exc.reason}",
                    "server_name": settings.agent_server_name,
                },
            ) from exc
        except OSError as exc:
            raise DiagnosticJobError(
                f"{where} did not answer ({exc.__class__.__name__}); check the agent pod and "
                f"that the bot may reach TCP {settings.agent_port} on the node",
                code="agent_unreachable",
                key="agent_unreachable",
                params={**at, "error": exc.__class__.__name__, "port": settings.agent_port},
            ) from exc
        token = _read_token(settings)
        try:
            conn.request("GET", EVIDENCE_PATH, headers={"Authorization": f"Bearer {token}"})
            resp = conn.getresponse()
            body = resp.read(MAX_EVIDENCE_BYTES + 1)
        except OSError as exc:  # timeouts included
            raise DiagnosticJobError(
                f"{where} did not finish answering within {settings.agent_timeout_s:g}s "
                f"({exc.__class__.__name__}); retry, or raise kube.agent_timeout_s",
                code="deadline_exceeded",
                key="agent_slow",
                params={
                    **at,
                    "timeout_s": f"{settings.agent_timeout_s:g}",
                    "error": exc.__class__.__name__,
                },
            ) from exc
        except http.client.HTTPException as exc:
            raise DiagnosticJobError(
                f"{where} answered garbage ({exc.__class__.__name__})",
                code="agent_failed",
                key="agent_garbage",
                params={**at, "error": exc.__class__.__name__},
            ) from exc
    finally:
        conn.close()
    if len(body) > MAX_EVIDENCE_BYTES:
        raise DiagnosticJobError(
            f"{where} sent more than {MAX_EVIDENCE_BYTES} bytes; lower the agent's --top",
            code="evidence_unreadable",
            key="agent_too_much",
            params={**at, "limit": MAX_EVIDENCE_BYTES},
        )
    if resp.status != 200:
        raise _refused(where, at, resp.status, body)
    return body.decode("utf-8", errors="replace")


def _refused(where: str, at: dict[str, object], status: int, body: bytes) -> DiagnosticJobError:
    try:
        reason = str(json.loads(body).get("error") or "")
    except (ValueError, AttributeError):
        reason = ""
    reason = reason[:300] or f"HTTP {status}"
    if status in (401, 403):
        return DiagnosticJobError(
            f"{where} refused the bot ({status}: {reason}); the agent's --allow must name "
            "the bot's ServiceAccount and its --audience the bot's token audience",
            code="agent_refused",
            key="agent_refused",
            params={**at, "status": status, "reason": reason},
        )
    return DiagnosticJobError(
        f"{where} failed ({status}: {reason})",
        code="agent_failed",
        key="agent_failed",
        params={**at, "status": status, "reason": reason},
    )


def ask_agent(t: Transport, settings: KubeSettings, node: str) -> str:
    """Find the node's agent through the API, then fetch its evidence (TLS, then token)."""
    return fetch_evidence(find_agent(t, settings, node), settings, node)
