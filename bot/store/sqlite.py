"""SQLite engine: open a connection (WAL, busy timeout), migrate, run a transaction.

Synchronous on purpose: each connection belongs to one thread. ``storing.Store`` runs all
of its calls on one dedicated thread; tests and tools may open their own connections (one per
thread or process) on the same file, which is how the atomic claim is proven. The only
module that imports ``sqlite3`` besides the audit chain's trigger check.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bot.store.db import Db, DbError, DbIntegrityError, Dialect, Result
from bot.store.migrating import apply_migrations
from bot.store.values import dumps, loads, parse_ts, storable_params, ts

__all__ = ["MEMORY", "SQLITE", "SqliteDb", "connect", "dumps", "loads", "parse_ts", "ts"]

MEMORY = ":memory:"
#: how long a writer waits for another connection's write lock before giving up; claims and
#: appends hold it for milliseconds, so 10 s only trips on a wedged process
BUSY_TIMEOUT_MS = 10_000

SQLITE = Dialect(
    name="sqlite",
    serial_pk="INTEGER PRIMARY KEY AUTOINCREMENT",
    rowid_column="",
    next_audit_id_sql=None,  # AUTOINCREMENT keys continue after MAX(id) as well
    # RFC 7396 merge patch
    merge_result_sql="json_patch(COALESCE(result, '{}'), ?)",
)


class SqliteDb:
    """A ``Db`` over one ``sqlite3`` connection (autocommit; explicit transactions)."""

    dialect = SQLITE

    def __init__(self, conn: sqlite3.Connection, path: str) -> None:
        self.conn = conn
        self.path = path

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Result:
        try:
            return self.conn.execute(sql, storable_params(params))
        except sqlite3.IntegrityError as exc:
            raise DbIntegrityError(str(exc)) from exc
        except sqlite3.Error as exc:
            raise DbError(str(exc)) from exc

    def stream(self, sql: str, params: Sequence[Any] = (), *, size: int) -> Iterator[Any]:
        cursor = self.execute(sql, params)  # params made storable there
        while batch := _fetchmany(cursor, size):
            yield from batch

    @contextmanager
    def transaction(self, lock: str | None = None, *, readonly: bool = False) -> Iterator[Db]:
        """``BEGIN IMMEDIATE`` takes the file's write lock up front, so a read-modify-write
        is atomic whatever ``lock`` names (one lock serialises them all); a ``readonly``
        one is a deferred ``BEGIN``: in WAL mode a snapshot that waits for no writer."""
        self.execute("BEGIN" if readonly else "BEGIN IMMEDIATE")
        try:
            yield self
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()


def _fetchmany(cursor: Any, size: int) -> list[Any]:
    try:
        return list(cursor.fetchmany(size))
    except sqlite3.Error as exc:
        raise DbError(str(exc)) from exc


def path_of(target: str) -> str:
    """The file of ``target``: a path, ``:memory:``, or ``sqlite:///relative/or//absolute``."""
    if target.startswith("sqlite:///"):
        return target.removeprefix("sqlite:///") or MEMORY
    return target


def _set_wal(conn: sqlite3.Connection) -> None:
    """WAL mode, waiting out another connection that is creating or switching the file: this
    pragma can answer "database is locked" at once, without calling the busy handler."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def connect(path: str, *, migrate: bool = True) -> SqliteDb:
    """Open ``path`` (creating its folder), set WAL and the busy timeout, apply migrations."""
    path = path_of(path)
    if path != MEMORY:
        Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(
        path if path == MEMORY else str(Path(path).expanduser()),
        timeout=BUSY_TIMEOUT_MS / 1000,
        isolation_level=None,  # autocommit; transactions are explicit (BEGIN IMMEDIATE)
    )
    db = SqliteDb(conn, path)
    try:
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if path != MEMORY:
            _set_wal(conn)
            conn.execute("PRAGMA synchronous = NORMAL")  # WAL + NORMAL: durable at checkpoints
        conn.execute("PRAGMA foreign_keys = ON")
        if migrate:
            apply_migrations(db, where=path)
    except BaseException:
        conn.close()
        raise
    return db
