"""Audit anchors as Kubernetes Events on the bot's Deployment (sync; run in threads).

Every so many audit rows, and at each incident resolve, the chain's head (row id and hash)
is written outside the store: an Event ``GpunodeAuditAnchor`` about ``Deployment/<name>`` in the
bot's namespace, message ``audit head <id> <sha256>``. ``gpunode audit --verify --anchors``
lists them and checks that the store's row ``<id>`` still has that hash, so rewriting the
whole store (every hash recomputed) shows. Events expire (the API server's ``--event-ttl``,
1 h by default): the thread's context lines keep the long copy.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, NamedTuple

from bot.kube.transport import Transport

REASON = "GpunodeAuditAnchor"
_MESSAGE = re.compile(r"audit head (\d+) ([0-9a-f]{64})")


class Anchor(NamedTuple):
    row_id: int
    row_hash: str
    at: str


def anchor_message(row_id: int, row_hash: str) -> str:
    return f"audit head {row_id} {row_hash}"


def parse_anchor(message: str) -> tuple[int, str] | None:
    found = _MESSAGE.fullmatch(message.strip())
    return (int(found[1]), found[2]) if found else None


def post_anchor(
    t: Transport, namespace: str, deployment: str, row_id: int, row_hash: str, at: datetime
) -> Any:
    when = at.strftime("%Y-%m-%dT%H:%M:%SZ")
    body = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{deployment}.audit-", "namespace": namespace},
        "involvedObject": {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": deployment,
            "namespace": namespace,
        },
        "reason": REASON,
        "message": anchor_message(row_id, row_hash),
        "type": "Normal",
        "source": {"component": "gpunode"},
        "reportingComponent": "gpunode",
        "reportingInstance": deployment,
        "firstTimestamp": when,
        "lastTimestamp": when,
        "count": 1,
    }
    return t.request("POST", f"/api/v1/namespaces/{namespace}/events", body=body)


def list_anchors(t: Transport, namespace: str, deployment: str) -> list[Anchor]:
    """The anchors still held by the API server, oldest row first."""
    anchors = []
    for e in t.iter_items(
        f"/api/v1/namespaces/{namespace}/events",
        field_selector=f"involvedObject.kind=Deployment,involvedObject.name={deployment},"
        f"reason={REASON}",
    ):
        involved = e.get("involvedObject") or {}
        if e.get("reason") != REASON or involved.get("name") != deployment:
            continue  # a server that ignores the selector
        parsed = parse_anchor(str(e.get("message") or ""))
        if parsed is not None:
            anchors.append(Anchor(*parsed, str(e.get("lastTimestamp") or "")))
    return sorted(anchors)
