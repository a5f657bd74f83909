"""SQLite plumbing: open a connection (WAL, busy timeout), migrate, run a transaction.

Synchronous on purpose: each connection belongs to one thread. ``storing.Store`` runs all
of its calls on one dedicated thread; tests and tools may open their own connections (one per
thread or process) on the same file, which is how the atomic claim is proven.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bot.errors import StoreError
from bot.store.migrations import MIGRATIONS, SCHEMA_VERSION

MEMORY = ":memory:"
#: how long a writer waits for another connection's write lock before giving up; claims and
#: appends hold it for milliseconds, so 10 s only trips on a wedged process
BUSY_TIMEOUT_MS = 10_000


def connect(path: str, *, migrate: bool = True) -> sqlite3.Connection:
    """Open ``path`` (creating its folder), set WAL and the busy timeout, apply migrations."""
    if path != MEMORY:
        Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(
        path if path == MEMORY else str(Path(path).expanduser()),
        timeout=BUSY_TIMEOUT_MS / 1000,
        isolation_level=None,  # autocommit; transactions are explicit (BEGIN IMMEDIATE)
    )
    try:
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if path != MEMORY:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")  # WAL + NORMAL: durable at checkpoints
        conn.execute("PRAGMA foreign_keys = ON")
        if migrate:
            apply_migrations(conn, path=path)
    except BaseException:
        conn.close()
        raise
    return conn


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` takes the write lock up front, so a read-modify-write is atomic."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def schema_version(conn: sqlite3.Connection) -> int:
    row = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
    ).fetchone()
    if row is None:
        return 0
    found = conn.execute("SELECT version FROM schema_version").fetchone()
    return int(found[0]) if found else 0


def apply_migrations(conn: sqlite3.Connection, *, path: str) -> int:
    """Bring the schema up to ``SCHEMA_VERSION``; refuse a file from a newer gpunode."""
    with transaction(conn):
        conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        current = schema_version(conn)
        if current > SCHEMA_VERSION:
            raise StoreError(
                f"the incident store {path} has schema version {current} but this gpunode "
                f"knows only up to {SCHEMA_VERSION}; upgrade gpunode, or point store.path "
                "(GPUNODE_STORE__PATH) at a new file"
            )
        for statements in MIGRATIONS[current:]:
            for statement in statements:
                if callable(statement):
                    statement(conn)
                else:
                    conn.execute(statement)
        if current == 0:
            conn.execute("DELETE FROM schema_version")
            conn.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
        elif current < SCHEMA_VERSION:
            conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
    return SCHEMA_VERSION


def ts(at: datetime) -> str:
    """A sortable UTC text form; naive datetimes are refused (callers pass aware times)."""
    if at.tzinfo is None or at.utcoffset() is None:
        raise StoreError("the store needs timezone-aware times; pass datetime.now(UTC)")
    return at.astimezone(UTC).isoformat(timespec="microseconds")


def parse_ts(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def dumps(value: Any) -> str:
    """Canonical JSON: sorted keys, no spaces, so equal data hashes equally."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def loads(text: str | None) -> Any:
    return json.loads(text) if text is not None else None
