"""dcgm-exporter on the node, found through its Service: the third GPU-evidence rung.

The exporter runs as a DaemonSet behind a Service (``nvidia-dcgm-exporter`` from the GPU
Operator, ``dcgm-exporter`` from its Helm chart; ``kube.dcgm_exporter_services``). Its
EndpointSlices (``discovery.k8s.io/v1``, label ``kubernetes.io/service-name``) name each
endpoint's ``nodeName``; the bot asks the endpoint on the diagnosed node for ``/metrics``
(Prometheus text) and ``bot.core.diagnosis.dcgm`` turns it into per-pod GPU memory. Every failure
is a reason in words (no Service, no endpoint on the node, refused, blocked, not the format), never
an exception: it is the last rung of optional evidence. Sync: run in the gateway's threads.
"""

from __future__ import annotations

import ipaddress
import urllib.error
import urllib.request
from typing import Any

from kubernetes.client.exceptions import ApiException

from bot.core.diagnosis.dcgm import DcgmAttempt, ExpositionError, parse_exposition, pod_memory
from bot.kube.transport import Transport

SLICES = "/apis/discovery.k8s.io/v1/endpointslices"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
#: port names the GPU Operator's Service and the Helm chart's give the metrics port
PORT_NAMES = ("gpu-metrics", "metrics")
#: exposition text is small (a few KiB per GPU); more is not an exporter
MAX_BYTES = 8 * 1024 * 1024


def _way(address: str, port: int, node: str, service: str) -> str:
    return f"the exporter's endpoint {_host(address)}:{port} on {node} (Service {service})"


def _host(address: str) -> str:
    try:
        return f"[{address}]" if ipaddress.ip_address(address).version == 6 else address
    except ValueError:
        return address


def find_endpoint(slices: list[dict[str, Any]], node: str) -> tuple[str, int, str] | None:
    """(address, port, "namespace/service") of a ready exporter endpoint on ``node``."""
    for s in slices:
        meta = s.get("metadata") or {}
        service = f"{meta.get('namespace')}/{(meta.get('labels') or {}).get(SERVICE_NAME_LABEL)}"
        ports = [p for p in s.get("ports") or [] if p.get("port")]
        if not ports:
            continue
        port = next((p for name in PORT_NAMES for p in ports if p.get("name") == name), ports[0])
        for ep in s.get("endpoints") or []:
            ready = (ep.get("conditions") or {}).get("ready")
            if ep.get("nodeName") == node and ready is not False and ep.get("addresses"):
                return str(ep["addresses"][0]), int(port["port"]), service
    return None


def read(t: Transport, node: str, services: list[str], timeout_s: float) -> DcgmAttempt:
    """Per-pod GPU memory from the exporter on ``node``, or why there is none."""
    names = ", ".join(services)
    base = "the exporter's endpoint"

    def failed(failure: str, code: str, way: str = base, **params: str | int) -> DcgmAttempt:
        return DcgmAttempt(way, failure=failure, via="endpoint", code=code, params=params)

    if not services:
        return failed("off in the bot's settings (kube.dcgm_exporter_services)", "dcgm_off")
    try:
        slices = t.list_all(
            SLICES, label_selector=f"{SERVICE_NAME_LABEL} in ({','.join(services)})"
        )
    except ApiException as exc:
        if exc.status in (401, 403):
            return failed(
                "the bot may not list EndpointSlices (discovery.k8s.io); apply deploy/base's RBAC",
                "slices_forbidden",
            )
        return failed(
            f"listing EndpointSlices failed: HTTP {exc.status} {exc.reason}",
            "slices_failed",
            status=int(exc.status or 0),
            error=str(exc.reason),
        )
    if not slices:
        return failed(
            f"no Service named {names} has endpoints: dcgm-exporter is not installed, or its "
            "Service has another name (kube.dcgm_exporter_services)",
            "no_exporter_service",
            names=names,
        )
    found = find_endpoint(slices, node)
    if found is None:
        return failed(
            f"its Service has no ready endpoint on {node} (the exporter's DaemonSet does not "
            "run there, or its pod is not ready)",
            "no_exporter_endpoint",
            node=node,
        )
    address, port, service = found
    way = _way(address, port, node, service)
    at: dict[str, str | int] = {
        "at_address": f"{_host(address)}:{port}",
        "at_node": node,
        "at_service": service,
    }
    url = f"http://{_host(address)}:{port}/metrics"

    def refused(failure: str, code: str, **params: str | int) -> DcgmAttempt:
        return failed(failure, code, way, **at, url=url, **params)

    try:
        request = urllib.request.Request(url, headers={"Accept": "text/plain"})
        with urllib.request.urlopen(request, timeout=timeout_s) as resp:  # noqa: S310 (http only)
            body = resp.read(MAX_BYTES + 1)
    except urllib.error.HTTPError as exc:
        return refused(f"GET {url} answered HTTP {exc.code}", "http_status", status=exc.code)
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return refused(
            f"GET {url} failed ({reason}): check that a NetworkPolicy lets the bot reach port "
            f"{port} of the exporter's pods",
            "get_failed",
            error=str(reason),
            port=port,
        )
    if len(body) > MAX_BYTES:
        return refused(
            f"GET {url} answered more than {MAX_BYTES} bytes", "too_big", limit=MAX_BYTES
        )
    try:
        series = parse_exposition(body.decode("utf-8", errors="replace"))
    except ExpositionError as exc:
        return refused(
            f"GET {url} is not Prometheus text ({exc})", "not_exposition", error=str(exc)
        )
    return pod_memory(series, way=way, via="endpoint", at=at)
