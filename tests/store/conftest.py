"""The store's contract runs on both engines: ``target`` is a fresh SQLite file or a fresh
PostgreSQL database (tests/pgserver.py), and ``tamper`` writes to it behind the store's back,
as someone with direct database access would."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest

from bot.store import audit_guard

ENGINES = ["sqlite", "postgres"]
#: what the raw drivers raise when a trigger or constraint refuses a statement
RAW_ERRORS = (sqlite3.Error, psycopg.Error)


@pytest.fixture(params=ENGINES)
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        return str(request.getfixturevalue("pg_dsn"))
    return str(tmp_path / "state" / "gpunode.db")


def is_pg(target: str) -> bool:
    return target.startswith("postgresql://")


def tamper(target: str, *statements: str) -> None:
    """Run ``statements`` directly on the database, each in its own transaction."""
    if is_pg(target):
        with psycopg.connect(target, autocommit=True) as pg:
            for statement in statements:
                pg.execute(statement.encode())
        return
    conn = sqlite3.connect(target, isolation_level=None)
    try:
        for statement in statements:
            conn.execute(statement)
    finally:
        conn.close()


def lift(target: str, names: list[str], *statements: str) -> None:
    """Tamper as someone who may lift the guards: take the named triggers off (SQLite: drop
    them; PostgreSQL: disable them), run ``statements``, then put each back exactly as
    shipped, so a check of the triggers alone finds nothing."""
    if is_pg(target):
        tables = {n: audit_guard.PG_TRIGGERS[n].table for n in names}
        tamper(
            target,
            *(f"ALTER TABLE {tables[n]} DISABLE TRIGGER {n}" for n in names),
            *statements,
            *(f"ALTER TABLE {tables[n]} ENABLE TRIGGER {n}" for n in names),
        )
        return
    tamper(
        target,
        *(f"DROP TRIGGER {n}" for n in names),
        *statements,
        *(audit_guard.SQLITE_TRIGGERS[n] for n in names),
    )


def query(target: str, sql: str) -> list[tuple[object, ...]]:
    if is_pg(target):
        with psycopg.connect(target) as pg:
            return [tuple(r) for r in pg.execute(sql.encode()).fetchall()]
    conn = sqlite3.connect(target)
    try:
        return [tuple(r) for r in conn.execute(sql).fetchall()]
    finally:
        conn.close()
