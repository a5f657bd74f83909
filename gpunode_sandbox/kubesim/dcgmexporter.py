"""dcgm-exporter on the stand-in's GPU nodes: real HTTP, real exposition text, found through a
real Service and EndpointSlice.

A node with ``dcgm_exporter`` in its scenario gets an exporter: an HTTP listener of its own on
a loopback address (``127.0.0.N``, one per node, all on the same port), serving ``/metrics``
as dcgm-exporter 3.x/4.x writes it (``# HELP``/``# TYPE``, labels ``gpu``, ``UUID``,
``pci_bus_id``, ``device``, ``modelName``, ``Hostname``, ``DCGM_FI_DRIVER_VERSION``; with the
Kubernetes mapping on, ``container``/``namespace``/``pod``; on MIG, ``GPU_I_PROFILE`` and
``GPU_I_ID``). The figures come from the stand-in's own model of the node: the GPU memory of
the processes of the pods running there (``usage.figures``) and of its system processes,
per GPU; the pod a device is labelled with is the pod whose processes use it, as the kubelet's
pod-resources API would report the assignment. Nothing here calls the product's arithmetic.

The Service (``nvidia-dcgm-exporter`` in ``gpu-operator``, as the GPU Operator names it) is
seeded with the scenario; its EndpointSlice (``discovery.k8s.io/v1``) is created when the
listeners are bound, since the endpoints' port is known only then (an EndpointSlice's ports
are the pods' target ports, not the Service's).
"""

from __future__ import annotations

import re
import socket
from typing import TYPE_CHECKING, Any

from aiohttp import web

from gpunode_sandbox.fake_nvml import default_pci_bus_id
from gpunode_sandbox.kubesim import scenarios as sc
from gpunode_sandbox.kubesim.defaults import stable_uid
from gpunode_sandbox.kubesim.quantities import to_bytes
from gpunode_sandbox.kubesim.usage import figures

if TYPE_CHECKING:
    from gpunode_sandbox.kubesim.sim import KubeSim

Obj = dict[str, Any]
NAMESPACE = "gpu-operator"
SERVICE = "nvidia-dcgm-exporter"
PORT_NAME = "gpu-metrics"
SELECTOR = {"app": "nvidia-dcgm-exporter"}
MIB = 1024 * 1024
#: binding one port on every exporter's address can race other processes: retry that often
ATTEMPTS = 20
_HELP = {
    "DCGM_FI_DEV_FB_FREE": "Framebuffer memory free (in MiB).",
    "DCGM_FI_DEV_FB_USED": "Framebuffer memory used (in MiB).",
    "DCGM_FI_DEV_GPU_UTIL": "GPU utilization (in %).",
}


def exporter_nodes(scenario: sc.Scenario) -> list[sc.Node]:
    return [n for n in scenario.nodes if n.dcgm_exporter is not None and n.gpus is not None]


def service_object() -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": SERVICE, "namespace": NAMESPACE, "labels": dict(SELECTOR)},
        "spec": {
            "selector": dict(SELECTOR),
            "ports": [{"name": PORT_NAME, "port": 9400, "targetPort": 9400, "protocol": "TCP"}],
            "type": "ClusterIP",
        },
    }


def endpoint_slice(endpoints: list[tuple[str, str, bool]], port: int) -> Obj:
    """The Service's EndpointSlice as the EndpointSlice controller writes it:
    ``(address, node, ready)`` per exporter pod."""
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": f"{SERVICE}-{stable_uid('eps', SERVICE)[:5]}",
            "namespace": NAMESPACE,
            "labels": {
                **SELECTOR,
                "kubernetes.io/service-name": SERVICE,
                "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
            },
        },
        "addressType": "IPv4",
        "ports": [{"name": PORT_NAME, "port": port, "protocol": "TCP"}],
        "endpoints": [
            {
                "addresses": [address],
                "conditions": {"ready": ready, "serving": ready, "terminating": False},
                "nodeName": node,
            }
            for address, node, ready in endpoints
        ],
    }


def _mig_profile(pod: Obj) -> str | None:
    for c in (pod.get("spec") or {}).get("containers") or []:
        for name in (c.get("resources") or {}).get("requests") or {}:
            if name.startswith("nvidia.com/mig-"):
                return str(name.removeprefix("nvidia.com/mig-"))
    return None


def _profile_mib(profile: str) -> int:
    match = re.search(r"\.(\d+)gb", profile)
    return int(match.group(1)) * 1024 if match else 0


def _line(metric: str, labels: dict[str, str], value: float) -> str:
    def esc(v: str) -> str:
        return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

    body = ",".join(f'{k}="{esc(v)}"' for k, v in labels.items())
    return f"{metric}{{{body}}} {value:g}"


def exposition(sim: KubeSim, node_name: str) -> str:
    """``/metrics`` of the exporter on ``node_name``, from the stand-in's model of it."""
    node = sim.scenario.node(node_name)
    if node is None or node.gpus is None or node.dcgm_exporter is None:
        return ""
    g, mapping = node.gpus, node.dcgm_exporter.pod_mapping
    # per GPU: bytes used by each (namespace, pod, container), and by processes outside pods
    holders: dict[int, dict[tuple[str, str, str], int]] = {}
    profiles: dict[tuple[str, str], str | None] = {}
    outside: dict[int, int] = {}
    pods = [
        p
        for p in sim.api.store.list("pods")
        if (p.get("spec") or {}).get("nodeName") == node_name
        and (p.get("status") or {}).get("phase") == "Running"
    ]
    for pod in pods:
        meta = pod["metadata"]
        profiles[(meta["namespace"], meta["name"])] = _mig_profile(pod)
        for cname, f in figures(sim, pod).items():
            for proc in f.processes:
                for idx, used in proc.gpu_memory.items():
                    key = (meta["namespace"], meta["name"], cname)
                    per_pod = holders.setdefault(int(idx), {})
                    per_pod[key] = per_pod.get(key, 0) + to_bytes(used)
    for sp in node.system_processes:
        for idx, used in sp.gpu_memory.items():
            outside[int(idx)] = outside.get(int(idx), 0) + to_bytes(used)
    total_mib = to_bytes(g.memory_total) // MIB
    lines: dict[str, list[str]] = {m: [] for m in _HELP}
    for i in range(g.count):
        base = {
            "gpu": str(i),
            "UUID": "GPU-" + stable_uid("gpu", node_name, str(i)),
            "pci_bus_id": default_pci_bus_id(i),
            "device": f"nvidia{i}",
            "modelName": g.product.replace("-", " "),
            "Hostname": node_name,
            "DCGM_FI_DRIVER_VERSION": g.driver_version,
        }
        held = holders.get(i, {})
        device_used = (sum(held.values()) + outside.get(i, 0)) // MIB
        util = float(g.utilization_percent if device_used else 0)
        if g.mig:
            # one GPU instance per pod on this GPU, sized by the MIG profile it requested
            for gi, ((ns, pod_name, cname), used) in enumerate(sorted(held.items()), 1):
                profile = profiles.get((ns, pod_name)) or "1g.10gb"
                labels = {**base, "GPU_I_PROFILE": profile, "GPU_I_ID": str(gi)}
                if mapping:
                    labels |= {"container": cname, "namespace": ns, "pod": pod_name}
                used_mib = used // MIB
                lines["DCGM_FI_DEV_FB_USED"].append(_line("DCGM_FI_DEV_FB_USED", labels, used_mib))
                free_mib = max(_profile_mib(profile) - used_mib, 0)
                lines["DCGM_FI_DEV_FB_FREE"].append(_line("DCGM_FI_DEV_FB_FREE", labels, free_mib))
                lines["DCGM_FI_DEV_GPU_UTIL"].append(_line("DCGM_FI_DEV_GPU_UTIL", labels, util))
            continue
        who = sorted(held) if held else [("", "", "")]
        for ns, pod_name, cname in who:
            labels = dict(base)
            if mapping:
                labels |= {"container": cname, "namespace": ns, "pod": pod_name}
            free_mib = max(total_mib - device_used, 0)
            lines["DCGM_FI_DEV_FB_USED"].append(_line("DCGM_FI_DEV_FB_USED", labels, device_used))
            lines["DCGM_FI_DEV_FB_FREE"].append(_line("DCGM_FI_DEV_FB_FREE", labels, free_mib))
            lines["DCGM_FI_DEV_GPU_UTIL"].append(_line("DCGM_FI_DEV_GPU_UTIL", labels, util))
            if not mapping:
                break  # without the mapping the exporter writes one series per device
    out: list[str] = []
    for metric in sorted(lines):
        out += [f"# HELP {metric} {_HELP[metric]}", f"# TYPE {metric} gauge", *lines[metric]]
    return "\n".join(out) + "\n"


class Exporters:
    """The listeners of every exporter node (one loopback address each, one shared port)."""

    def __init__(self, sim: KubeSim) -> None:
        self.sim = sim
        self._runners: list[web.AppRunner] = []
        #: node -> (address, port) of its exporter, once started
        self.addresses: dict[str, tuple[str, int]] = {}

    async def start(self) -> None:
        nodes = exporter_nodes(self.sim.scenario)
        if not nodes:
            return
        for attempt in range(ATTEMPTS):
            port = _free_port("127.0.0.2")
            try:
                await self._listen(nodes, port)
                break
            except OSError:  # another process took the port on one of the addresses
                await self.stop()
                if attempt == ATTEMPTS - 1:
                    raise
        endpoints = [
            (*self.addresses[n.name][:1], n.name, n.dcgm_exporter.ready)
            for n in nodes
            if n.dcgm_exporter is not None
        ]
        self.sim.api.seed(endpoint_slice(endpoints, port), validate=True)

    async def _listen(self, nodes: list[sc.Node], port: int) -> None:
        for i, node in enumerate(nodes):
            address = f"127.0.0.{2 + i}"
            app = web.Application()
            app.router.add_get("/metrics", self._handler(node.name))
            runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
            await runner.setup()
            self._runners.append(runner)
            await web.TCPSite(runner, address, port).start()
            self.addresses[node.name] = (address, port)

    def _handler(self, node: str) -> Any:
        async def metrics(_: web.Request) -> web.Response:
            return web.Response(
                text=exposition(self.sim, node), content_type="text/plain", charset="utf-8"
            )

        return metrics

    async def stop(self) -> None:
        for runner in self._runners:
            await runner.cleanup()
        self._runners.clear()


def _free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])
