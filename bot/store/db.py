"""One small connection interface over SQLite and PostgreSQL, so one set of SQL serves both.

The ``*_rows`` modules and the migrations talk to a :class:`Db`: ``execute(sql, params)``
with ``?`` placeholders, rows readable by name or position, ``transaction(lock=...)`` and a
:class:`Dialect` for the few places where the engines differ (identity columns, triggers,
JSON merge). Each engine module (``sqlite``, ``postgres``) implements it once, translating
its driver's errors to :class:`DbError` / :class:`DbIntegrityError`. Sync on purpose: a
connection belongs to one worker thread of the store (``storing.Store``), which keeps the
row functions plain and identical for both engines.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Literal, Protocol

EngineName = Literal["sqlite", "postgres"]


class DbError(Exception):
    """A driver error, translated once by the engine module (``StoreError`` at the store)."""


class DbIntegrityError(DbError):
    """A constraint refused the write (duplicate key, check, foreign key)."""


class Row(Protocol):
    """A result row: ``row["name"]``, ``row[0]`` and ``dict(row)`` all work."""

    def __getitem__(self, key: int | str, /) -> Any: ...

    def keys(self) -> Sequence[str]: ...


class Result(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


@dataclass(frozen=True)
class Dialect:
    """What differs between the engines, as data the portable SQL is formatted with."""

    name: EngineName
    #: an auto-numbered integer primary key column type
    serial_pk: str
    #: a column (with its trailing comma) giving rows an insertion order where the engine
    #: has none built in (SQLite's ``rowid`` is implicit; PostgreSQL gets an identity column)
    rowid_column: str
    #: SQL giving the next audit row id from the table's own sequence (None: MAX(id) + 1),
    #: so a row inserted behind gpunode's back never takes the id the chain would use next
    next_audit_id_sql: str | None
    #: an expression merging the JSON text parameter into the JSON text column ``result``
    merge_result_sql: str


class Db(Protocol):
    """One connection. ``transaction(lock=...)``: a read-modify-write that must not
    interleave with another one of the same ``lock`` name, across connections and
    processes (SQLite: the file's write lock; PostgreSQL: a transaction-scoped advisory
    lock on the name). ``readonly``: a consistent read that takes no write lock where the
    engine can offer that (SQLite's deferred ``BEGIN``)."""

    dialect: Dialect

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Result: ...

    def stream(self, sql: str, params: Sequence[Any] = (), *, size: int) -> Iterator[Any]:
        """The rows of a query, at most ``size`` of them in memory at a time (PostgreSQL: a
        server-side cursor, so call it inside ``transaction``)."""
        ...

    def transaction(
        self, lock: str | None = None, *, readonly: bool = False
    ) -> AbstractContextManager[Db]: ...

    def close(self) -> None: ...
