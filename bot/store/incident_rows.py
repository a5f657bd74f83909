"""Incident, timeline and evidence rows (sync; called on the store's thread)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bot.core.diagnosis.findings import Diagnosis
from bot.core.model.cluster import ClusterView
from bot.core.model.clusters import DEFAULT_CLUSTER
from bot.core.model.evidence import EvidenceBundle
from bot.core.model.incidents import (
    Incident,
    IncidentState,
    TimelineEntry,
    TimelineRow,
    find_joinable,
    open_incident,
    order_timeline,
    resolve_incident,
    start_mitigation,
)
from bot.core.reporting.records import EvidenceSnapshot
from bot.errors import StoreError
from bot.store import packing
from bot.store.db import Db, Row
from bot.store.summarizing import summarize
from bot.store.values import dumps, loads, parse_ts, ts

_SELECT_INCIDENTS = (
    "SELECT id, number, node, channel, thread_ts, root_ts, state, opened_at, resolved_at, "
    "opened_by, alert_fingerprint, resolution_note, cluster, locale FROM incidents"
)


def _incident(row: Row) -> Incident:
    data = dict(row)
    data["opened_at"] = parse_ts(data["opened_at"])
    data["resolved_at"] = parse_ts(data["resolved_at"])
    return Incident.model_validate(data)


def _insert_incident(conn: Db, incident: Incident) -> None:
    conn.execute(
        "INSERT INTO incidents (id, number, node, channel, thread_ts, root_ts, state, opened_at, "
        "resolved_at, opened_by, alert_fingerprint, resolution_note, cluster, locale) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            incident.id,
            incident.number,
            incident.node,
            incident.channel,
            incident.thread_ts,
            incident.root_ts,
            incident.state,
            ts(incident.opened_at),
            ts(incident.resolved_at) if incident.resolved_at else None,
            incident.opened_by,
            incident.alert_fingerprint,
            incident.resolution_note,
            incident.cluster,
            incident.locale,
        ),
    )


def save_incident(conn: Db, incident: Incident) -> None:
    """Write back an incident changed by a core transition (state, thread, note)."""
    cur = conn.execute(
        "UPDATE incidents SET channel=?, thread_ts=?, root_ts=?, state=?, resolved_at=?, "
        "alert_fingerprint=?, resolution_note=? WHERE id=?",
        (
            incident.channel,
            incident.thread_ts,
            incident.root_ts,
            incident.state,
            ts(incident.resolved_at) if incident.resolved_at else None,
            incident.alert_fingerprint,
            incident.resolution_note,
            incident.id,
        ),
    )
    if cur.rowcount != 1:
        raise StoreError(f"no incident {incident.id} in the store; was it opened here?")


def insert_timeline(conn: Db, entry: TimelineEntry) -> int:
    """Append one entry, kept with its incident's cluster (read from the incident's row;
    ``''`` for an incident stored before clusters, or none)."""
    cur = conn.execute(
        "INSERT INTO timeline (incident_id, at, kind, actor, text, data, cluster) "
        "VALUES (?,?,?,?,?,?, COALESCE((SELECT cluster FROM incidents WHERE id=?), '')) "
        "RETURNING seq",
        (
            entry.incident_id,
            ts(entry.at),
            entry.kind,
            entry.actor,
            entry.text,
            dumps(entry.data),
            entry.incident_id,
        ),
    )
    return int(cur.fetchone()[0])


def open_or_join(
    conn: Db,
    node: str,
    channel: str,
    *,
    opened_by: str,
    at: datetime,
    alert_fingerprint: str | None = None,
    cluster: str = DEFAULT_CLUSTER,
    locale: str,
) -> tuple[Incident, bool]:
    """Join the (cluster's) node's open incident or open the next one, in one write
    transaction. Incident numbers are global: INC-0007 names one incident in any cluster.

    Serialised with every other incident numbering (lock ``incidents``), so two replicas
    diagnosing one node join one incident and two nodes never get the same number; the
    partial unique index ``incidents_open_node`` (per cluster and node) backs this up.
    ``locale`` is kept by a new incident only: a joined thread keeps its own."""
    with conn.transaction(lock="incidents"):
        rows = conn.execute(
            _SELECT_INCIDENTS + " WHERE cluster=? AND node=? AND state!='resolved'",
            (cluster, node),
        ).fetchall()
        joined = find_joinable([_incident(r) for r in rows], node, cluster)
        if joined is not None:
            return joined, False
        top = conn.execute("SELECT COALESCE(MAX(number), 0) FROM incidents").fetchone()[0]
        incident, entry = open_incident(
            int(top) + 1,
            node,
            at=at,
            opened_by=opened_by,
            channel=channel,
            alert_fingerprint=alert_fingerprint,
            cluster=cluster,
            locale=locale,
        )
        _insert_incident(conn, incident)
        insert_timeline(conn, entry)
        return incident, True


def get_incident(conn: Db, incident_id: str) -> Incident | None:
    row = conn.execute(_SELECT_INCIDENTS + " WHERE id=?", (incident_id,)).fetchone()
    return _incident(row) if row else None


def state_messages(conn: Db, incident_id: str) -> list[str]:
    """The ts of the incident's current-state messages ([] when none, or no incident)."""
    row = conn.execute("SELECT state_ts FROM incidents WHERE id=?", (incident_id,)).fetchone()
    found = loads(row["state_ts"]) if row is not None else None
    return [str(ts) for ts in found] if isinstance(found, list) else []


def set_state_messages(conn: Db, incident_id: str, state_ts: list[str]) -> None:
    """Keep ``state_ts`` as the incident's current-state messages."""
    cur = conn.execute(
        "UPDATE incidents SET state_ts=? WHERE id=?", (dumps(list(state_ts)), incident_id)
    )
    if cur.rowcount != 1:
        raise StoreError(f"no incident {incident_id} in the store; was it opened here?")


def require_incident(conn: Db, incident_id: str) -> Incident:
    incident = get_incident(conn, incident_id)
    if incident is None:
        raise StoreError(f"no incident {incident_id}; `status` lists the open incidents")
    return incident


def find_by_thread(conn: Db, channel: str, thread_ts: str) -> Incident | None:
    row = conn.execute(
        _SELECT_INCIDENTS
        + " WHERE channel=? AND (thread_ts=? OR root_ts=?) ORDER BY number DESC LIMIT 1",
        (channel, thread_ts, thread_ts),
    ).fetchone()
    return _incident(row) if row else None


def incidents_for_node(conn: Db, node: str, cluster: str | None = None) -> list[Incident]:
    """The node's incidents, oldest first; of one cluster, or of every cluster (None)."""
    if cluster is None:
        rows = conn.execute(_SELECT_INCIDENTS + " WHERE node=? ORDER BY number", (node,))
    else:
        rows = conn.execute(
            _SELECT_INCIDENTS + " WHERE cluster=? AND node=? ORDER BY number", (cluster, node)
        )
    return [_incident(r) for r in rows.fetchall()]


def adopt_unclustered(conn: Db, cluster: str) -> int:
    """Rows written before clusters existed ('' ) belong to ``cluster`` (the default one):
    an incident left open across the upgrade is joined, and its actions run, there.
    Audit rows keep '' (append-only; their hashes cover what they said). Idempotent.
    Returns how many incidents were adopted."""
    with conn.transaction(lock="incidents"):
        count = conn.execute("UPDATE incidents SET cluster=? WHERE cluster=''", (cluster,)).rowcount
        conn.execute("UPDATE timeline SET cluster=? WHERE cluster=''", (cluster,))
        conn.execute("UPDATE actions SET cluster=? WHERE cluster=''", (cluster,))
    return int(count)


def open_incidents(conn: Db, node: str | None = None) -> list[Incident]:
    sql = _SELECT_INCIDENTS + " WHERE state!='resolved'"
    params: tuple[Any, ...] = ()
    if node is not None:
        sql += " AND node=?"
        params = (node,)
    return [_incident(r) for r in conn.execute(sql + " ORDER BY number", params).fetchall()]


def recent_incidents(conn: Db, limit: int) -> list[Incident]:
    """The ``limit`` newest incidents, open or resolved, newest first."""
    sql = _SELECT_INCIDENTS + " ORDER BY number DESC LIMIT ?"
    return [_incident(r) for r in conn.execute(sql, (limit,)).fetchall()]


def set_state(
    conn: Db,
    incident_id: str,
    state: IncidentState,
    *,
    at: datetime,
    actor: str,
    note: str = "",
) -> tuple[Incident, TimelineEntry | None]:
    """Apply a core transition and record its timeline entry (None when nothing changed)."""
    with conn.transaction(lock="incidents"):
        incident = require_incident(conn, incident_id)
        entry: TimelineEntry | None = None
        if state == "resolved":
            incident, entry = resolve_incident(incident, at=at, actor=actor, note=note)
        elif state == "mitigating":
            if incident.state == "mitigating":
                return incident, None
            incident, entry = start_mitigation(incident, at=at, actor=actor, text=note)
        elif incident.state != "investigating":
            raise StoreError(
                f"{incident_id} is {incident.state}; it cannot go back to investigating"
            )
        else:
            return incident, None
        save_incident(conn, incident)
        insert_timeline(conn, entry)
        return incident, entry


def timeline(conn: Db, incident_id: str) -> list[TimelineRow]:
    rows = conn.execute(
        "SELECT seq, incident_id, at, kind, actor, text, data, cluster FROM timeline "
        "WHERE incident_id=? ORDER BY at, seq",
        (incident_id,),
    ).fetchall()
    entries = [
        TimelineRow(
            seq=r["seq"],
            incident_id=r["incident_id"],
            at=parse_ts(r["at"]),
            kind=r["kind"],
            actor=r["actor"],
            text=r["text"],
            data=loads(r["data"]),
            cluster=r["cluster"],
        )
        for r in rows
    ]
    return order_timeline(entries)


def snapshot_digest(
    bundle_json: str, view_json: str, diagnosis_json: str, tail_json: str = ""
) -> str:
    """sha256 over the texts, length-prefixed so no two splits collide (the process tail
    only when there is one, so digests of snapshots without one are as before)."""
    digest = hashlib.sha256()
    parts = (bundle_json, view_json, diagnosis_json) + ((tail_json,) if tail_json else ())
    for part in parts:
        raw = part.encode("utf-8")
        digest.update(len(raw).to_bytes(8, "big"))
        digest.update(raw)
    return digest.hexdigest()


def _text(value: str | dict[str, Any] | list[Any]) -> str:
    return value if isinstance(value, str) else dumps(value)


@dataclass(frozen=True)
class Capture:
    """One evidence capture ready to store: its texts, digest and packed value."""

    texts: tuple[str, str, str, str]
    sha256: str
    packed: bytes


def capture(bundle: EvidenceBundle, view: ClusterView, diagnosis: Diagnosis) -> Capture:
    """Summarise the bundle's process tail (``bot.store.summarizing``), dump, hash and pack
    (format 3). CPU-bound: callers run it off the event loop and off the store's writer."""
    kept, tail = summarize(bundle)
    texts = (
        kept.model_dump_json(),
        view.model_dump_json(),
        diagnosis.model_dump_json(),
        tail.model_dump_json() if tail is not None else "",
    )
    return Capture(texts, snapshot_digest(*texts), packing.pack_summarised(*texts))


def save_capture(conn: Db, incident_id: str, *, at: datetime, capture: Capture) -> EvidenceSnapshot:
    cur = conn.execute(
        "INSERT INTO evidence_snapshots (incident_id, at, bundle, cluster_view, diagnosis, "
        "sha256, packed, format) VALUES (?,?,'','','',?,?,?) RETURNING id",
        (incident_id, ts(at), capture.sha256, capture.packed, packing.XZ_SUMMARISED),
    )
    b, v, d, t = capture.texts
    return EvidenceSnapshot(
        id=int(cur.fetchone()[0]),
        incident_id=incident_id,
        at=at,
        bundle_json=b,
        view_json=v,
        diagnosis_json=d,
        process_tail_json=t,
        sha256=capture.sha256,
    )


def save_snapshot(
    conn: Db,
    incident_id: str,
    *,
    at: datetime,
    bundle_json: str | dict[str, Any],
    view_json: str | dict[str, Any],
    diagnosis_json: str | dict[str, Any],
) -> EvidenceSnapshot:
    """Keep the evidence exactly as given (text) or canonically dumped (dict), format 1."""
    texts = (_text(bundle_json), _text(view_json), _text(diagnosis_json))
    digest = snapshot_digest(*texts)
    cur = conn.execute(
        "INSERT INTO evidence_snapshots (incident_id, at, bundle, cluster_view, diagnosis, "
        "sha256, packed, format) VALUES (?,?,'','','',?,?,?) RETURNING id",
        (incident_id, ts(at), digest, packing.pack(*texts), packing.ZLIB),
    )
    return EvidenceSnapshot(
        id=int(cur.fetchone()[0]),
        incident_id=incident_id,
        at=at,
        bundle_json=texts[0],
        view_json=texts[1],
        diagnosis_json=texts[2],
        sha256=digest,
    )


_SELECT_SNAPSHOTS = (
    "SELECT id, incident_id, at, bundle, cluster_view, diagnosis, sha256, packed, format "
    "FROM evidence_snapshots"
)


def snapshots(conn: Db, incident_id: str) -> list[EvidenceSnapshot]:
    rows = conn.execute(
        _SELECT_SNAPSHOTS + " WHERE incident_id=? ORDER BY at, id", (incident_id,)
    ).fetchall()
    return [_snapshot(r) for r in rows]


def latest_snapshot(conn: Db, incident_id: str) -> EvidenceSnapshot | None:
    row = conn.execute(
        _SELECT_SNAPSHOTS + " WHERE incident_id=? ORDER BY at DESC, id DESC LIMIT 1",
        (incident_id,),
    ).fetchone()
    return _snapshot(row) if row else None


def _texts(row: Row) -> tuple[str, str, str, str]:
    """The texts of a snapshot row, whatever its format (bot/store/packing.py): bundle,
    view, diagnosis, process tail ('' when none)."""
    if row["format"] == packing.TEXT:
        return row["bundle"], row["cluster_view"], row["diagnosis"], ""
    return packing.unpack(bytes(row["packed"]), int(row["format"]))


def _snapshot(row: Row) -> EvidenceSnapshot:
    bundle, view, diagnosis, tail = _texts(row)
    return EvidenceSnapshot(
        id=row["id"],
        incident_id=row["incident_id"],
        at=parse_ts(row["at"]),
        bundle_json=bundle,
        view_json=view,
        diagnosis_json=diagnosis,
        process_tail_json=tail,
        sha256=row["sha256"],
    )


#: rows rewritten per statement batch by the retention (bounded memory on any table size)
PRUNE_BATCH = 100


def prune_evidence(conn: Db, *, before: datetime) -> int:
    """Keep only the diagnosis of snapshots taken before ``before`` (format 2); returns how
    many rows were pruned in this call (at most ``PRUNE_BATCH``: call again until 0)."""
    rows = conn.execute(
        _SELECT_SNAPSHOTS + " WHERE at < ? AND format != ? ORDER BY at, id LIMIT ?",
        (ts(before), packing.SUMMARY, PRUNE_BATCH),
    ).fetchall()
    for row in rows:
        _, _, diagnosis, _ = _texts(row)
        conn.execute(
            "UPDATE evidence_snapshots SET bundle='', cluster_view='', diagnosis='', packed=?, "
            "format=? WHERE id=?",
            (packing.pack("", "", diagnosis), packing.SUMMARY, row["id"]),
        )
    return len(rows)


def claim_root(
    conn: Db,
    incident_id: str,
    claimer: str,
    *,
    at: datetime,
    stale_before: datetime,
) -> bool:
    """True for exactly one caller: it may post the incident's root message.

    One UPDATE, so callers on any thread, connection or replica race safely. A claim older
    than ``stale_before`` whose ts was never filled in (the claimer crashed between claim
    and post) may be taken over."""
    cur = conn.execute(
        "UPDATE incidents SET root_claimed_by=?, root_claimed_at=? WHERE id=? "
        "AND thread_ts IS NULL AND (root_claimed_by IS NULL OR root_claimed_at < ?)",
        (claimer, ts(at), incident_id, ts(stale_before)),
    )
    return cur.rowcount == 1


def release_root(conn: Db, incident_id: str, claimer: str) -> None:
    """The claimer could not post the root: let the next caller try at once."""
    conn.execute(
        "UPDATE incidents SET root_claimed_by=NULL, root_claimed_at=NULL "
        "WHERE id=? AND root_claimed_by=? AND thread_ts IS NULL",
        (incident_id, claimer),
    )


def set_thread(conn: Db, incident_id: str, *, root_ts: str, channel: str | None = None) -> Incident:
    """The incident's root message was posted: its ts is the thread to reply in.

    The first ts wins: an incident whose thread is already set keeps it (a claimer whose
    claim was taken over after it went stale gets the incident back and sees the other ts)."""
    with conn.transaction(lock="incidents"):
        incident = require_incident(conn, incident_id)
        if incident.thread_ts:
            return incident
        update: dict[str, Any] = {"root_ts": root_ts, "thread_ts": root_ts}
        if channel is not None:
            update["channel"] = channel
        incident = incident.model_copy(update=update)
        save_incident(conn, incident)
        return incident
