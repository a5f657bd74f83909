"""Dedupe keys (Slack events, Alertmanager groups) and the append-only audit log (sync)."""

from __future__ import annotations

from datetime import datetime

from bot.core.reporting.records import AuditRecord, ChainReport
from bot.store import audit_chain
from bot.store.db import Db
from bot.store.values import dumps, loads, parse_ts, ts

_SELECT_AUDIT = (
    "SELECT id, at, actor, action, channel, incident_id, action_id, tier, decision, dry_run, "
    "outcome, changes, detail, row_hash, cluster, detail_code, detail_params FROM audit"
)


def remember_event(conn: Db, key: str, *, at: datetime) -> bool:
    """True the first time ``key`` (a Slack event_id or interaction key) is seen."""
    cur = conn.execute(
        "INSERT INTO processed_events (key, at) VALUES (?, ?) ON CONFLICT DO NOTHING",
        (key, ts(at)),
    )
    return cur.rowcount == 1


def seen_event(conn: Db, key: str) -> bool:
    """Whether ``key`` was remembered (a read: it remembers nothing)."""
    return conn.execute("SELECT 1 FROM processed_events WHERE key=?", (key,)).fetchone() is not None


def forget_events_before(conn: Db, before: datetime) -> int:
    """Prune dedupe keys older than any retry Slack would still send."""
    return conn.execute("DELETE FROM processed_events WHERE at < ?", (ts(before),)).rowcount


def beat(conn: Db, replica_id: str, *, at: datetime) -> None:
    """``replica_id`` is alive at ``at`` (one upsert; the leader reads these)."""
    conn.execute(
        "INSERT INTO replicas (replica_id, seen_at) VALUES (?, ?) "
        "ON CONFLICT(replica_id) DO UPDATE SET seen_at=excluded.seen_at",
        (replica_id, ts(at)),
    )


def live_replicas(conn: Db, since: datetime) -> list[str]:
    rows = conn.execute(
        "SELECT replica_id FROM replicas WHERE seen_at >= ? ORDER BY replica_id", (ts(since),)
    ).fetchall()
    return [str(r[0]) for r in rows]


def remember_alert_group(
    conn: Db,
    group_key: str,
    status: str,
    *,
    at: datetime,
    incident_id: str | None = None,
) -> bool:
    """True when the group is new or its status changed (firing <-> resolved); repeats of
    the same notification (Alertmanager's repeat_interval) return False."""
    with conn.transaction(lock=f"alert_group:{group_key}"):
        row = conn.execute(
            "SELECT status FROM alert_groups WHERE group_key=?", (group_key,)
        ).fetchone()
        if row is not None and row["status"] == status:
            return False
        conn.execute(
            "INSERT INTO alert_groups (group_key, status, incident_id, updated_at) "
            "VALUES (?,?,?,?) ON CONFLICT(group_key) DO UPDATE SET status=excluded.status, "
            "updated_at=excluded.updated_at, "
            "incident_id=COALESCE(excluded.incident_id, alert_groups.incident_id)",
            (group_key, status, incident_id, ts(at)),
        )
        return True


def link_alert_group(conn: Db, group_key: str, incident_id: str) -> None:
    conn.execute(
        "UPDATE alert_groups SET incident_id=? WHERE group_key=?", (incident_id, group_key)
    )


def incident_for_alert_group(conn: Db, group_key: str) -> str | None:
    row = conn.execute(
        "SELECT incident_id FROM alert_groups WHERE group_key=?", (group_key,)
    ).fetchone()
    return str(row["incident_id"]) if row and row["incident_id"] else None


def append_audit(conn: Db, record: AuditRecord, key: bytes | None = None) -> AuditRecord:
    """Append one row to the hash chain (``audit_chain``), atomically across replicas.

    The row keeps the cluster its record names, as given (``NO_CLUSTER``: ``''``)."""
    values = {
        "at": ts(record.at),
        "actor": record.actor,
        "action": record.action,
        "channel": record.channel,
        "incident_id": record.incident_id,
        "action_id": record.action_id,
        "tier": record.tier,
        "decision": record.decision,
        "dry_run": dumps(record.dry_run) if record.dry_run is not None else None,
        "outcome": record.outcome,
        "changes": dumps(record.changes) if record.changes is not None else None,
        "detail": record.detail,
        "detail_code": record.detail_code,
        # canonical JSON (hashed as stored); '' when there are none, as on older rows
        "detail_params": dumps(record.detail_params) if record.detail_params else "",
        "cluster": record.cluster,
    }
    with conn.transaction(lock="audit"):
        row_id, _prev, digest = audit_chain.insert(conn, values, key)
    return record.model_copy(update={"id": row_id, "row_hash": digest})


def verify_audit(conn: Db, key: bytes | None = None) -> ChainReport:
    """Check the whole chain in one consistent snapshot: no append lands between reading
    the rows and reading the head (SQLite: one read transaction; PostgreSQL: the chain's
    lock, which appends wait for)."""
    with conn.transaction(lock="audit", readonly=True):
        return audit_chain.verify(conn, key)


def audit_since(conn: Db, since: datetime | None = None) -> list[AuditRecord]:
    sql = _SELECT_AUDIT
    params: tuple[str, ...] = ()
    if since is not None:
        sql += " WHERE at >= ?"
        params = (ts(since),)
    records = []
    for row in conn.execute(sql + " ORDER BY at, id", params).fetchall():
        data = dict(row)
        data["at"] = parse_ts(data["at"])
        data["dry_run"] = loads(data["dry_run"])
        data["changes"] = loads(data["changes"])
        data["detail_params"] = loads(data["detail_params"] or "{}")
        records.append(AuditRecord.model_validate(data))
    return records


def audit_head(conn: Db) -> tuple[int, str]:
    row = conn.execute("SELECT last_id, last_hash FROM audit_head WHERE id = 1").fetchone()
    return (int(row[0]), str(row[1])) if row else (0, audit_chain.GENESIS)


def audit_hashes(conn: Db, ids: list[int]) -> dict[int, str]:
    found: dict[int, str] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        rows = conn.execute(
            f"SELECT id, row_hash FROM audit WHERE id IN ({marks})",  # noqa: S608
            chunk,
        ).fetchall()
        found |= {int(r[0]): str(r[1]) for r in rows}
    return found
