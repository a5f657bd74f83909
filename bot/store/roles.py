"""Who may write the store: the owner migrates, the bot's role appends to the audit (sync).

PostgreSQL: two roles. The owner (it owns the tables and the trigger functions) runs
``gpunode migrate --app-role ROLE``, which applies the migrations and grants ``ROLE`` what the
bot needs and no more: SELECT and INSERT on ``audit``, SELECT on ``audit_head`` (the database
moves the head, ``audit_guard``), SELECT on ``schema_version``, and read-write on the working
tables. Without ownership the bot's role cannot TRUNCATE, ALTER TABLE ... ENABLE REPLICA
TRIGGER, or CREATE OR REPLACE FUNCTION of a trigger function.

SQLite has no roles: whoever can write the file can rewrite it. ``check`` says whether the file
or its folder is writable by group or others (the bot's user is the owner role there).
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from bot.core.reporting.checkup import Finding

if TYPE_CHECKING:
    from bot.store.db import Db

#: the bot's grants per table; every other table of the schema: _WORKING
APP_GRANTS: dict[str, tuple[str, ...]] = {
    "audit": ("SELECT", "INSERT"),
    "audit_head": ("SELECT",),
    "schema_version": ("SELECT",),
}
_WORKING = ("SELECT", "INSERT", "UPDATE", "DELETE")
#: what the bot's role must not hold on the audit tables
_FORBIDDEN: dict[str, tuple[str, ...]] = {
    "audit": ("UPDATE", "DELETE", "TRUNCATE"),
    "audit_head": ("INSERT", "UPDATE", "DELETE", "TRUNCATE"),
}
_ROLE = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def _tables(db: Db) -> list[str]:
    rows = db.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename"
    ).fetchall()
    return [str(r[0]) for r in rows]


def grant_app_role(db: Db, role: str) -> list[str]:
    """PostgreSQL: give ``role`` the bot's grants (and take any other away); run as the
    owner after migrating. Returns the statements run."""
    if not _ROLE.fullmatch(role):
        raise ValueError(
            f"{role!r} is not a plain role name (lowercase letters, digits, _); "
            "create the role with such a name"
        )
    statements = []
    for table in _tables(db):
        grants = APP_GRANTS.get(table, _WORKING)
        statements += [
            f'REVOKE ALL ON "{table}" FROM "{role}"',
            f'GRANT {", ".join(grants)} ON "{table}" TO "{role}"',
        ]
    statements += [
        f'GRANT USAGE ON SCHEMA public TO "{role}"',
        f'GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO "{role}"',
    ]
    with db.transaction(lock="migrations"):
        for statement in statements:
            db.execute(statement)
    return statements


def check(db: Db, path: str = "") -> list[Finding]:
    """The store's roles as ``gpunode doctor`` reports them (``path``: the SQLite file)."""
    if db.dialect.name == "sqlite":
        return _check_file(path)
    return _check_pg(db)


def _check_pg(db: Db) -> list[Finding]:
    row = db.execute(
        "SELECT current_user, r.rolsuper, pg_get_userbyid(c.relowner) FROM pg_roles r, "
        "pg_class c WHERE r.rolname = current_user AND c.relname = 'audit' "
        "AND c.relnamespace = 'public'::regnamespace"
    ).fetchone()
    if row is None:  # a new database: the bot's first start creates the tables
        return [Finding(True, "store_role", "role_new_store")]
    me, superuser, owner = str(row[0]), bool(row[1]), str(row[2])  # by position: a PgRow
    findings = [
        Finding(
            not superuser and me != owner,
            "store_role",
            "role_owner",
            {"me": me, "owner": owner, "superuser": superuser, "same": me == owner},
        )
    ]
    for table, verbs in _FORBIDDEN.items():
        held = [
            v
            for v in verbs
            if db.execute("SELECT has_table_privilege(current_user, ?, ?)", (table, v)).fetchone()[
                0
            ]
        ]
        findings.append(
            Finding(
                not held,
                "table_grants",
                "grants_held" if held else "grants_only",
                {"me": me, "table": table, "held": held, "allowed": list(APP_GRANTS[table])},
            )
        )
    return findings


def _check_file(path: str) -> list[Finding]:
    if not path or path == ":memory:":
        return [Finding(True, "store_file", "in_memory")]
    findings = []
    file = Path(path).expanduser()
    for check, target in (("store_file", file), ("store_folder", file.parent)):
        try:
            mode = os.stat(target).st_mode
        except OSError as exc:
            findings.append(
                Finding(
                    False, check, "stat_failed", {"target": str(target), "reason": exc.strerror}
                )
            )
            continue
        loose = mode & (stat.S_IWGRP | stat.S_IWOTH)
        findings.append(
            Finding(
                not loose,
                check,
                "writable_loose" if loose else "writable_owner",
                {
                    "target": str(target),
                    "mode": stat.filemode(mode),
                    "group": bool(loose & stat.S_IWGRP),
                    "others": bool(loose & stat.S_IWOTH),
                },
            )
        )
    return findings
