"""The audit log as a hash chain (sync; called on the store's thread or by a migration).

One chain whatever writes to it: ``insert`` runs inside the caller's ``transaction(lock=
"audit")``, which serialises appends across connections and processes (SQLite's write lock;
PostgreSQL's advisory lock), so two replicas never both append after the same head.

Each row stores ``prev_hash`` (the previous row's ``row_hash``; ``GENESIS`` for the first)
and ``row_hash = sha256(prev_hash || canonical JSON of the row's own columns, id included)``.
Columns added later (``LATER_COLUMNS``: the cluster, schema step 6; the detail's code and
its parameters as canonical JSON, step 10) enter the JSON only when non-empty: rows written
before they existed hold '' there and hash exactly as they did, while a new row's values are
covered (blanking one, changing it, or setting one on an old row, breaks the hash).
``audit_head`` keeps the newest row's id and hash, so removing rows at the end shows too.

What ``verify`` detects, and how:
- an edited row: its recomputed hash differs from ``row_hash``;
- a deleted row: the next row's ``prev_hash`` no longer matches (or the head does);
- a forged INSERT (back-dated or not) without the chain: ``audit_chained`` refuses it, and a
  row forged with made-up hashes breaks the chain at that row;
- a guard trigger dropped, recreated otherwise (a no-op under the same name), disabled or set
  to REPLICA, or its function replaced (``audit_guard.check``): named;
- a log emptied or cut while the store's actions say rows existed, or (SQLite) while the
  table's AUTOINCREMENT counter remembers higher ids.
A forger who can write the file and recompute every later hash is out of reach of any check
inside the same file: the anchors (the head's hash posted to the incident thread and as a
Kubernetes Event, ``bot.services.anchoring``) and the optional export of each row to the
log stream keep copies outside.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import TYPE_CHECKING, Any

from bot.core.reporting.records import ChainReport
from bot.store import audit_guard
from bot.store.values import storable

if TYPE_CHECKING:
    from bot.store.db import Db

GENESIS = "0" * 64
#: the columns a row's hash covers, in this order (``row_hash`` itself excluded)
HASHED_COLUMNS = (
    "id",
    "at",
    "actor",
    "action",
    "channel",
    "incident_id",
    "action_id",
    "tier",
    "decision",
    "dry_run",
    "outcome",
    "changes",
    "detail",
    "prev_hash",
)
#: columns added after the chain began: hashed when non-empty (old rows keep their hash).
#: Append only, and only columns whose "none" is '': a name here enters no old row's JSON
LATER_COLUMNS = ("cluster", "detail_code", "detail_params")
#: rows ``verify`` holds in memory at once (a server-side cursor's fetch size on PostgreSQL)
VERIFY_BATCH = 200
#: action states reached only through a claim, which is audited
_RAN = "'claimed', 'running', 'succeeded', 'failed', 'undone'"
# SQL built once from the constant column names above (no value is ever pasted in)
_INSERT = "INSERT INTO audit ({}) VALUES ({})".format(  # noqa: S608
    ", ".join([*HASHED_COLUMNS, *LATER_COLUMNS, "row_hash", "row_mac"]),
    ", ".join("?" * (len(HASHED_COLUMNS) + len(LATER_COLUMNS) + 2)),
)
_SELECT_UNCHAINED = "SELECT {} FROM audit ORDER BY id".format(  # noqa: S608
    ", ".join(c for c in HASHED_COLUMNS if c != "prev_hash")
)
_SELECT_CHAINED = "SELECT {} FROM audit ORDER BY id".format(  # noqa: S608
    ", ".join([*HASHED_COLUMNS, *LATER_COLUMNS, "row_hash", "row_mac"])
)


def row_mac(key: bytes, row_hash: str) -> str:
    """HMAC-SHA256 of a row's hash under the bot's audit key (``store.audit_key``): anyone
    who can INSERT can compute a correct hash, only the key's holder a correct MAC."""
    return hmac.new(key, row_hash.encode(), hashlib.sha256).hexdigest()


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


def insert(conn: Db, values: dict[str, Any], key: bytes | None = None) -> tuple[int, str, str]:
    """Append one row after the head; the caller holds the write transaction.

    ``values``: the row's columns except id and the hashes; ``key``: the audit key, which
    signs the row (``row_mac``). Returns (id, prev, row hash)."""
    last_id, prev = _head(conn)
    row_id = last_id + 1
    if conn.dialect.next_audit_id_sql is not None:
        row_id = max(row_id, int(conn.execute(conn.dialect.next_audit_id_sql).fetchone()[0]))
    # hashed as stored: text without NUL (values.storable), the same on both engines
    row = {k: storable(v) for k, v in values.items()} | {"id": row_id, "prev_hash": prev}
    digest = row_digest(row)
    later = [row.get(c) or "" for c in LATER_COLUMNS]
    # the head follows in the database (the audit_head_advance trigger, audit_guard)
    mac = row_mac(key, digest) if key else None
    conn.execute(_INSERT, [row.get(c) for c in HASHED_COLUMNS] + later + [digest, mac])
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


def verify(conn: Db, key: bytes | None = None, *, batch: int = VERIFY_BATCH) -> ChainReport:
    """Walk the chain oldest first, ``batch`` rows in memory at a time (a server-side cursor
    on PostgreSQL); stop at the first row that does not hold. Checked first: the guards are
    the shipped ones (``audit_guard.check``); after: the head, and that the log still holds
    a row for every action the store says ran. With ``key``: every row from the first signed
    one on carries a MAC that ``key`` made (rows from before a key was set carry none)."""
    guard = audit_guard.check(conn)
    if guard:
        return ChainReport(0, None, guard)
    prev, count, last_id, signed = GENESIS, 0, 0, 0
    for r in conn.stream(_SELECT_CHAINED, size=batch):
        values = dict(r)
        row_id = int(values["id"])
        if values["prev_hash"] != prev:
            what = "a row before it was deleted or changed" if count else "it is not the first"
            return ChainReport(count, row_id, f"its prev_hash does not match ({what})")
        if values["row_hash"] != row_digest(values):
            return ChainReport(count, row_id, "its content does not match its hash (edited)")
        mac = values.get("row_mac")
        if key is not None and (mac or signed):
            if not mac:
                return ChainReport(count, row_id, "it is not signed, unlike the rows before it")
            if not hmac.compare_digest(str(mac), row_mac(key, str(values["row_hash"]))):
                return ChainReport(
                    count, row_id, "its MAC does not match (not written with the audit key)"
                )
            signed += 1
        prev, count, last_id = str(values["row_hash"]), count + 1, row_id
    head = conn.execute("SELECT last_id, last_hash FROM audit_head WHERE id = 1").fetchone()
    if head is None:
        return ChainReport(count, last_id or None, "the chain's head record is missing")
    head_id, head_hash = int(head[0]), str(head[1])
    if head_id > last_id:
        return ChainReport(count, head_id, f"rows after row {last_id} were deleted")
    if (head_id, head_hash) != (last_id, prev):
        return ChainReport(count, last_id, "the chain's head does not match its last row")
    return _elsewhere(conn, count, last_id, signed)


def _elsewhere(conn: Db, count: int, last_id: int, signed: int) -> ChainReport:
    """What the rest of the store says the log must hold: every action that was claimed
    (and so ran, or was about to) has audit rows; SQLite's AUTOINCREMENT counter remembers
    the highest id ever inserted, so rows cut from the end show even with the head reset."""
    orphan = conn.execute(
        "SELECT action_id FROM actions WHERE state IN (" + _RAN + ") AND NOT EXISTS "  # noqa: S608
        "(SELECT 1 FROM audit WHERE audit.action_id = actions.action_id) "
        "ORDER BY created_at LIMIT 1"
    ).fetchone()
    if orphan is not None:
        return ChainReport(
            count,
            None,
            f"action {orphan[0]} ran but has no audit row (the log was emptied or cut)",
        )
    if conn.dialect.name == "sqlite":
        seq = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'audit'").fetchone()
        if seq is not None and int(seq[0]) > last_id:
            return ChainReport(
                count, last_id or None, f"rows after row {last_id} up to {seq[0]} were deleted"
            )
    return ChainReport(count, signed=signed)
