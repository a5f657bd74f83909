"""The resident collector, for real, against the Kubernetes stand-in.

- ``make_tls``: a CA and a certificate for the agent (``openssl``, as an installer makes the
  Secret gpunode-agent-tls);
- ``start_agent``: ``bot.collectors.agent``'s HTTPS server on a loopback address, reading the
  stand-in's generated host tree of one node (the same fake /proc, cgroup and NVML files the
  diagnostic Job's collector reads there), reviewing tokens with the stand-in's TokenReview
  using the agent ServiceAccount's own token;
- ``place_agent_pod``: the DaemonSet of ``deploy/overlays/daemonset`` and its pod on the node,
  created through the stand-in's API and controllers. The stand-in's pods have no network;
  the pod's IP is set to the loopback address the agent listens on, as the host network
  (the agents run with ``hostNetwork``) would give it the node's address.
"""

from __future__ import annotations

import copy
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.collectors.agent import Agent, AgentServer, server_tls
from bot.collectors.cli import load_fake_nvml
from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim.access import API_AUDIENCES
from gpunode_sandbox.kubesim.hosttree import write_host_tree
from gpunode_sandbox.kubesim.kustomize import find, render

ROOT = Path(__file__).resolve().parents[2]
OVERLAY = ROOT / "deploy" / "overlays" / "daemonset"
NAMESPACE = "gpunode"
AUDIENCE = "gpunode-agent"
BOT_USER = "system:serviceaccount:gpunode:gpunode"
SERVER_NAME = "gpunode-agent"


@dataclass(frozen=True)
class Tls:
    ca: Path
    cert: Path
    key: Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_tls(folder: Path, *, name: str = SERVER_NAME) -> Tls:
    """A fresh CA in ``folder`` and a certificate for DNS name ``name`` that it signed."""
    folder.mkdir(parents=True, exist_ok=True)
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl(
        "req",
        "-x509",
        *ec,
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "2",
        "-subj",
        "/CN=gpunode-test-ca",
        cwd=folder,
    )
    _openssl(
        "req", *ec, "-keyout", "tls.key", "-out", "tls.csr", "-subj", f"/CN={name}", cwd=folder
    )
    (folder / "ext.cnf").write_text(
        f"subjectAltName=DNS:{name}\nbasicConstraints=CA:FALSE\n"
        "keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n"
        "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n",
        encoding="utf-8",
    )
    _openssl(
        "x509",
        "-req",
        "-in",
        "tls.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "tls.crt",
        "-days",
        "2",
        "-extfile",
        "ext.cnf",
        cwd=folder,
    )
    return Tls(folder / "ca.crt", folder / "tls.crt", folder / "tls.key")


@dataclass
class RunningAgent:
    server: AgentServer
    thread: threading.Thread
    address: str

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=30)


def start_agent(
    sim: KubeSim,
    node: str,
    tls: Tls,
    folder: Path,
    *,
    address: str = "127.0.0.1",
    allow: str = BOT_USER,
    audience: str = AUDIENCE,
    api_token: str | None = None,
    max_response_bytes: int = 16 * 1024 * 1024,
    request_timeout_s: float = 10.0,
    max_connections: int = 8,
) -> RunningAgent:
    """The agent of ``node`` serving HTTPS on ``address`` (an ephemeral port)."""
    root = folder / "host" / node
    spec = write_host_tree(sim, node, root)
    hostname = root / "proc" / "sys" / "kernel" / "hostname"
    hostname.parent.mkdir(parents=True, exist_ok=True)
    hostname.write_text(node + "\n", encoding="utf-8")  # hostNetwork: the node's name
    token_file = folder / "agent-api-token"
    if api_token is None:  # the agent's projected token (the API server's audience)
        api_token = sim.authn.issue(NAMESPACE, "gpunode-agent", API_AUDIENCES)
    token_file.write_text(api_token, encoding="utf-8")
    agent = Agent(
        root=str(root),
        allow=allow,
        audience=audience,
        api_server=sim.url,
        api_token_file=str(token_file),
        node_name=node,
        nvml_module=load_fake_nvml(str(spec)) if spec is not None else None,
        max_response_bytes=max_response_bytes,
        request_timeout_s=request_timeout_s,
        max_connections=max_connections,
    )
    server = AgentServer((address, 0), agent, server_tls(str(tls.cert), str(tls.key)))
    thread = threading.Thread(target=server.serve_forever, name=f"agent-{node}", daemon=True)
    thread.start()
    return RunningAgent(server, thread, address)


def agent_daemonset() -> dict[str, Any]:
    return copy.deepcopy(find(render(OVERLAY), "DaemonSet", "gpunode-agent"))


def install_daemonset(sim: KubeSim, obj: dict[str, Any] | None = None) -> dict[str, Any]:
    """The agent DaemonSet as ``kubectl apply`` leaves it (seeded: the stand-in's DaemonSet
    controller only replaces the pods it owns, it does not place them)."""
    obj = obj or agent_daemonset()
    found = sim.api.store.get("daemonsets", NAMESPACE, obj["metadata"]["name"])
    return found if found is not None else sim.api.seed(obj, validate=True)


def place_agent_pod(
    sim: KubeSim, node: str, address: str, *, owner: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The agent DaemonSet (created once) and a pod of it on ``node`` at ``address``;
    ``owner``: another controller to own the pod instead (an impostor's)."""
    ds = install_daemonset(sim)
    ctrl = owner or ds
    name = f"{ctrl['metadata']['name']}-{node[-6:]}"
    pod = sim.controllers._create_pod(
        ctrl, ds["spec"]["template"], name=name, preferred=None, node=node
    )
    assert pod is not None, "the stand-in refused the agent pod"
    stored = sim.api.store.get("pods", NAMESPACE, name)
    assert stored is not None
    live = copy.deepcopy(stored)
    live["status"]["podIP"] = address
    live["status"]["podIPs"] = [{"ip": address}]
    sim.api.store.put("pods", live)
    return live
