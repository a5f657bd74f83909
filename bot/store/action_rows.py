"""Action and approval rows, with the atomic claim (sync; called on the store's thread).

The claim is one ``UPDATE ... WHERE state IN (...)``: SQLite serialises writers on the file,
and PostgreSQL re-checks the WHERE on the row's newest version after waiting for a
concurrent writer's row lock (READ COMMITTED), so of N callers (threads, connections,
processes, replicas) exactly one sees ``rowcount == 1``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from bot.core.governance.approvals import ApprovalRequest
from bot.core.reporting.records import (
    ACTION_TRANSITIONS,
    INTERRUPTED_STATES,
    ActionRecord,
    ActionState,
)
from bot.errors import StoreError
from bot.store.db import Db, DbIntegrityError, Row
from bot.store.values import dumps, loads, parse_ts, ts

T = TypeVar("T")
_SELECT_ACTIONS = (
    "SELECT action_id, incident_id, tier, plan, requester, needs_approval, state, created_at, "
    "updated_at, claimed_by, claimed_at, result, message_ts, undo_claimed_by, undo_claimed_at, "
    "cluster FROM actions"
)


def _action(row: Row) -> ActionRecord:
    data = dict(row)
    data["plan"] = loads(data["plan"])
    data["result"] = loads(data["result"])
    data["needs_approval"] = bool(data["needs_approval"])
    for key in ("created_at", "updated_at", "claimed_at", "undo_claimed_at"):
        data[key] = parse_ts(data[key])
    return ActionRecord.model_validate(data)


def insert_action(conn: Db, record: ActionRecord) -> None:
    try:
        conn.execute(
            "INSERT INTO actions (action_id, incident_id, tier, plan, requester, needs_approval, "
            "state, created_at, updated_at, claimed_by, claimed_at, result, message_ts, cluster) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                record.action_id,
                record.incident_id,
                record.tier,
                dumps(record.plan),
                record.requester,
                int(record.needs_approval),
                record.state,
                ts(record.created_at),
                ts(record.updated_at),
                record.claimed_by,
                ts(record.claimed_at) if record.claimed_at else None,
                dumps(record.result) if record.result is not None else None,
                record.message_ts,
                record.cluster,
            ),
        )
    except DbIntegrityError as exc:
        raise StoreError(
            f"action {record.action_id} could not be recorded ({exc}); plan the action again"
        ) from exc


def get_action(conn: Db, action_id: str) -> ActionRecord | None:
    row = conn.execute(_SELECT_ACTIONS + " WHERE action_id=?", (action_id,)).fetchone()
    return _action(row) if row else None


def claim_action(conn: Db, action_id: str, replica_id: str, *, at: datetime) -> bool:
    """True for exactly one caller: approved actions, or requested ones needing no approval."""
    cur = conn.execute(
        "UPDATE actions SET state='claimed', claimed_by=?, claimed_at=?, updated_at=? "
        "WHERE action_id=? AND (state='approved' OR (state='requested' AND needs_approval=0))",
        (replica_id, ts(at), ts(at), action_id),
    )
    return cur.rowcount == 1


def claim_undo(conn: Db, action_id: str, replica_id: str, *, at: datetime) -> bool:
    """True for exactly one caller: a succeeded action, or a failed one that changed part of
    the cluster, whose undo nobody has claimed yet. The winner runs the undo, then moves the
    action to ``undone``."""
    cur = conn.execute(
        "UPDATE actions SET undo_claimed_by=?, undo_claimed_at=?, updated_at=? "
        "WHERE action_id=? AND state IN ('succeeded', 'failed') AND undo_claimed_by IS NULL",
        (replica_id, ts(at), ts(at), action_id),
    )
    return cur.rowcount == 1


def transition_action(
    conn: Db,
    action_id: str,
    to: ActionState,
    *,
    at: datetime,
    result: dict[str, Any] | None = None,
) -> bool:
    """Move an action along ``ACTION_TRANSITIONS``; False when it was not in a from-state."""
    if to not in ACTION_TRANSITIONS:
        raise StoreError(f"actions enter {to!r} only through claim_action")
    sources = ACTION_TRANSITIONS[to]
    marks = ", ".join("?" * len(sources))
    cur = conn.execute(
        "UPDATE actions SET state=?, updated_at=?, result=COALESCE(?, result) "  # noqa: S608
        f"WHERE action_id=? AND state IN ({marks})",
        (to, ts(at), dumps(result) if result is not None else None, action_id, *sources),
    )
    return cur.rowcount == 1


def set_message_ts(conn: Db, action_id: str, message_ts: str) -> None:
    conn.execute("UPDATE actions SET message_ts=? WHERE action_id=?", (message_ts, action_id))


def actions_for_incident(conn: Db, incident_id: str) -> list[ActionRecord]:
    rows = conn.execute(
        _SELECT_ACTIONS + " WHERE incident_id=? ORDER BY created_at, action_id",
        (incident_id,),
    ).fetchall()
    return [_action(r) for r in rows]


def interrupted_actions(conn: Db, orphaned_before: datetime | None = None) -> list[ActionRecord]:
    """Claimed or running actions: a replica stopped mid-way; reconcile them.

    ``orphaned_before``: only those whose claimer has not said it is alive (``replicas``)
    since then; an action another live replica is running right now is not interrupted."""
    sql = _SELECT_ACTIONS + " WHERE state IN (?, ?)"
    params: list[Any] = list(INTERRUPTED_STATES)
    if orphaned_before is not None:
        sql += (
            " AND (claimed_by IS NULL OR claimed_by NOT IN "
            "(SELECT replica_id FROM replicas WHERE seen_at >= ?))"
        )
        params.append(ts(orphaned_before))
    rows = conn.execute(sql + " ORDER BY claimed_at, action_id", params).fetchall()
    return [_action(r) for r in rows]


def _write_approval(conn: Db, req: ApprovalRequest) -> None:
    conn.execute(
        "INSERT INTO approvals (id, action_id, state, expires_at, body) VALUES (?,?,?,?,?) "
        "ON CONFLICT(id) DO UPDATE SET state=excluded.state, body=excluded.body",
        (req.id, req.action_id, req.state, ts(req.expires_at), req.model_dump_json()),
    )


def save_approval(conn: Db, req: ApprovalRequest) -> None:
    _write_approval(conn, req)


def get_approval(conn: Db, approval_id: str) -> ApprovalRequest | None:
    row = conn.execute("SELECT body FROM approvals WHERE id=?", (approval_id,)).fetchone()
    return ApprovalRequest.model_validate_json(row["body"]) if row else None


def approval_for_action(conn: Db, action_id: str) -> ApprovalRequest | None:
    row = conn.execute(
        "SELECT body FROM approvals WHERE action_id=? ORDER BY rowid DESC LIMIT 1", (action_id,)
    ).fetchone()
    return ApprovalRequest.model_validate_json(row["body"]) if row else None


def pending_approvals(conn: Db) -> list[ApprovalRequest]:
    rows = conn.execute(
        "SELECT body FROM approvals WHERE state='pending' ORDER BY expires_at"
    ).fetchall()
    return [ApprovalRequest.model_validate_json(r["body"]) for r in rows]


def update_approval(
    conn: Db,
    approval_id: str,
    change: Callable[[ApprovalRequest], tuple[ApprovalRequest, T]],
) -> tuple[ApprovalRequest, T]:
    """Read, apply a pure function (e.g. ``approvals.approve``), write: one transaction, so
    two approvers clicking at once on two replicas are both counted."""
    with conn.transaction(lock=f"approval:{approval_id}"):
        current = get_approval(conn, approval_id)
        if current is None:
            raise StoreError(f"no approval {approval_id}; request the action again")
        updated, outcome = change(current)
        if updated != current:
            _write_approval(conn, updated)
        return updated, outcome
