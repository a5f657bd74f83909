"""Apply the one ordered migration list (``migrations.MIGRATIONS``) to either engine.

A step is portable SQL (``{serial_pk}`` stands for the dialect's auto-numbered key,
``{rowid_column}`` for an insertion-order column where the engine lacks ``rowid``), a
mapping from engine name to that engine's SQL (triggers), or a function of the ``Db`` for
what SQL cannot do. ``schema_version`` holds one row: the number of steps applied; a
database at a higher version was written by a newer gpunode and is refused, not guessed at.
Replicas starting together migrate one at a time (the ``migrations`` transaction lock).
"""

from __future__ import annotations

from bot.errors import StoreError
from bot.store.db import Db, DbError
from bot.store.migrations import MIGRATIONS, SCHEMA_VERSION, Step


def render(step: Step, db: Db) -> str | None:
    """The SQL of ``step`` for ``db``'s engine (None: a function step, or nothing to do)."""
    if isinstance(step, str):
        return step.replace("{serial_pk}", db.dialect.serial_pk).replace(
            "{rowid_column}", db.dialect.rowid_column
        )
    if isinstance(step, dict):
        return step.get(db.dialect.name)
    return None


def schema_version(db: Db) -> int:
    found = db.execute("SELECT version FROM schema_version").fetchone()
    return int(found[0]) if found else 0


def current_version(db: Db) -> int | None:
    """The schema's version, read without writing (None: no schema yet, or unreadable)."""
    try:
        return schema_version(db)
    except DbError:
        return None


def apply_migrations(db: Db, *, where: str) -> int:
    """Bring the schema up to ``SCHEMA_VERSION``; refuse a database from a newer gpunode.

    A schema already current is left alone without a single DDL statement, so the bot may
    connect as a role that can create nothing (PostgreSQL's app role, ``bot.store.roles``);
    a schema that needs migrating when the role may not do it names ``gpunode migrate``."""
    found = current_version(db)
    if found == SCHEMA_VERSION:
        return SCHEMA_VERSION
    try:
        return _migrate(db, where=where)
    except DbError as exc:
        if "permission denied" not in str(exc) and "must be owner" not in str(exc):
            raise
        raise StoreError(
            f"the incident store {where} needs migrating (schema {found or 0} of "
            f"{SCHEMA_VERSION}) and this role may not: run `gpunode migrate` with the store "
            f"owner's DSN ({exc})"
        ) from exc


def _migrate(db: Db, *, where: str) -> int:
    with db.transaction(lock="migrations"):
        db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        current = schema_version(db)
        if current > SCHEMA_VERSION:
            raise StoreError(
                f"the incident store {where} has schema version {current} but this gpunode "
                f"knows only up to {SCHEMA_VERSION}; upgrade gpunode, or point store.path "
                "(GPUNODE_STORE__PATH) at a new database"
            )
        for steps in MIGRATIONS[current:]:
            for step in steps:
                sql = render(step, db)
                if sql is not None:
                    db.execute(sql)
                elif callable(step):
                    step(db)
        if current == 0:
            db.execute("DELETE FROM schema_version")
            db.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
        elif current < SCHEMA_VERSION:
            db.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
    return SCHEMA_VERSION
