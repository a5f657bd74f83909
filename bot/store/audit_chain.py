"""The audit log as a hash chain (sync; called on the store's thread or by a migration).

One chain whatever writes to it: ``insert`` runs inside the caller's ``transaction(lock=
"audit")``, which serialises appends across connections and processes (SQLite's write lock;
PostgreSQL's advisory lock), so two replicas never both append after the same head.

Each row stores ``prev_hash`` (the previous row's ``row_hash``; ``GENESIS`` for the first)
and ``row_hash = sha256(prev_hash || canonical JSON of the row's own columns, id included)``.
Columns added later (``LATER_COLUMNS``: the cluster, schema step 6) enter the JSON only when
non-empty: rows written before they existed hold '' there and hash exactly as they did, while
a new row's cluster is covered (blanking it, or setting one on an old row, breaks the hash).
``audit_head`` keeps the newest row's id and hash, so removing rows at the end shows too.

What ``verify`` detects, and how:
- an edited row: its recomputed hash differs from ``row_hash``;
- a deleted row: the next row's ``prev_hash`` no longer matches (or the head does);
- a forged INSERT (back-dated or not) without the chain: ``audit_chained`` refuses it, and a
  row forged with made-up hashes breaks the chain at that row;
- a dropped (or, in PostgreSQL, disabled) trigger (``audit_no_update``, ``audit_no_delete``,
  ``audit_chained``): named.
A forger who can write the file and recompute every later hash is out of reach of any check
inside the same file: the optional export of each row to the log stream keeps a copy outside.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from bot.store.models import ChainReport

if TYPE_CHECKING:
    from bot.store.db import Db

GENESIS = "0" * 64
#: the columns a row's hash covers, in this order (``row_hash`` itself excluded)
HASHED_COLUMNS = (
    "id", "at", "actor", "action", "channel", "incident_id", "action_id", "tier", "decision",
    "dry_run", "outcome", "changes", "detail", "prev_hash",
)  # fmt: skip
#: columns added after the chain began: hashed when non-empty (old rows keep their hash)
LATER_COLUMNS = ("cluster",)
#: the triggers that keep the log append-only and chained
TRIGGERS = ("audit_no_update", "audit_no_delete", "audit_chained")
# SQL built once from the constant column names above (no value is ever pasted in)
_INSERT = "INSERT INTO audit ({}) VALUES ({})".format(  # noqa: S608
    ", ".join([*HASHED_COLUMNS, *LATER_COLUMNS, "row_hash"]),
    ", ".join("?" * (len(HASHED_COLUMNS) + len(LATER_COLUMNS) + 1)),
)
_SELECT_UNCHAINED = "SELECT {} FROM audit ORDER BY id".format(  # noqa: S608
    ", ".join(c for c in HASHED_COLUMNS if c != "prev_hash")
)
_SELECT_CHAINED = "SELECT {} FROM audit ORDER BY id".format(  # noqa: S608
    ", ".join([*HASHED_COLUMNS, *LATER_COLUMNS, "row_hash"])
)


def row_digest(values: dict[str, Any]) -> str:
    """sha256 over the previous hash and the row's canonical JSON (sorted keys)."""
    hashed = {c: values.get(c) for c in HASHED_COLUMNS}
    hashed |= {c: values[c] for c in LATER_COLUMNS if values.get(c)}
    body = json.dumps(
        hashed,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(f"{values.get('prev_hash')}\n{body}".encode()).hexdigest()


def _head(conn: Db) -> tuple[int, str]:
    row = conn.execute("SELECT last_id, last_hash FROM audit_head WHERE id = 1").fetchone()
    last = conn.execute("SELECT COALESCE(MAX(id), 0) FROM audit").fetchone()[0]
    if row is None:
        return int(last), GENESIS
    return max(int(row[0]), int(last)), str(row[1])


def _set_head(conn: Db, last_id: int, last_hash: str) -> None:
    conn.execute(
        "INSERT INTO audit_head (id, last_id, last_hash) VALUES (1, ?, ?) "
        "ON CONFLICT(id) DO UPDATE SET last_id=excluded.last_id, last_hash=excluded.last_hash",
        (last_id, last_hash),
    )


def insert(conn: Db, values: dict[str, Any]) -> tuple[int, str, str]:
    """Append one row after the head; the caller holds the write transaction.

    ``values``: the row's columns except id and the hashes. Returns (id, prev, row hash)."""
    last_id, prev = _head(conn)
    row_id = last_id + 1
    if conn.dialect.next_audit_id_sql is not None:
        row_id = max(row_id, int(conn.execute(conn.dialect.next_audit_id_sql).fetchone()[0]))
    row = dict(values) | {"id": row_id, "prev_hash": prev}
    digest = row_digest(row)
    later = [row.get(c) or "" for c in LATER_COLUMNS]
    conn.execute(_INSERT, [row.get(c) for c in HASHED_COLUMNS] + later + [digest])
    _set_head(conn, row["id"], digest)
    return row["id"], prev, digest


def chain_existing(conn: Db) -> None:
    """Migration step: chain the rows written before the chain existed, oldest first.

    Runs at schema step 2, before ``LATER_COLUMNS`` exist: it reads the original columns."""
    prev = GENESIS
    last = 0
    for r in conn.execute(_SELECT_UNCHAINED).fetchall():
        values = dict(r) | {"prev_hash": prev}
        digest = row_digest(values)
        conn.execute(
            "UPDATE audit SET prev_hash=?, row_hash=? WHERE id=?", (prev, digest, values["id"])
        )
        prev, last = digest, int(values["id"])
    if last:
        _set_head(conn, last, prev)


def verify(conn: Db) -> ChainReport:
    """Walk the chain oldest first; stop at the first row that does not hold."""
    present = {str(r[0]) for r in conn.execute(conn.dialect.audit_triggers_sql).fetchall()}
    missing = [t for t in TRIGGERS if t not in present]
    if missing:
        return ChainReport(0, None, f"trigger {', '.join(missing)} was dropped")
    prev, count, last_id = GENESIS, 0, 0
    for r in conn.execute(_SELECT_CHAINED).fetchall():
        values = dict(r)
        row_id = int(values["id"])
        if values["prev_hash"] != prev:
            what = "a row before it was deleted or changed" if count else "it is not the first"
            return ChainReport(count, row_id, f"its prev_hash does not match ({what})")
        if values["row_hash"] != row_digest(values):
            return ChainReport(count, row_id, "its content does not match its hash (edited)")
        prev, count, last_id = str(values["row_hash"]), count + 1, row_id
    head = conn.execute("SELECT last_id, last_hash FROM audit_head WHERE id = 1").fetchone()
    if head is None:
        if count:
            return ChainReport(count, last_id, "the chain's head record is missing")
        return ChainReport(0)
    head_id, head_hash = int(head[0]), str(head[1])
    if head_id > last_id:
        return ChainReport(count, head_id, f"rows after row {last_id} were deleted")
    if (head_id, head_hash) != (last_id, prev):
        return ChainReport(count, last_id, "the chain's head does not match its last row")
    return ChainReport(count)
