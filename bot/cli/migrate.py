"""``gpunode migrate [--dsn OWNER_DSN] [--app-role ROLE]``: bring the store's schema up to date
as its owner, and (PostgreSQL) grant the bot's own role only what it needs.

Run it as the role that owns the tables (``--dsn``, default ``store.dsn``/``store.path``),
before the bot starts or after an upgrade; the bot then connects with the app role's DSN and
never migrates. See ``bot.store.roles`` for the grants.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from bot.config import load_settings
from bot.errors import UsageError
from bot.store import engines, roles, sqlite
from bot.store.migrations import SCHEMA_VERSION


def main(args: argparse.Namespace, *, out: TextIO | None = None) -> int:
    stream = out or sys.stdout
    target = (
        getattr(args, "dsn", None)
        or load_settings(config_file=getattr(args, "config", None)).store.target
    )
    app_role = getattr(args, "app_role", None)
    db = engines.connect(target)
    try:
        print(f"schema at version {SCHEMA_VERSION}", file=stream)
        if app_role:
            if db.dialect.name != "postgres":
                raise UsageError(
                    "--app-role is for PostgreSQL; SQLite has no roles", key="app_role_sqlite"
                )
            try:
                statements = roles.grant_app_role(db, app_role)
            except ValueError as exc:
                raise UsageError(str(exc)) from exc
            print(
                f"granted {app_role} the bot's rights ({len(statements)} statements)", file=stream
            )
        if db.dialect.name == "sqlite":  # no roles: the file's mode is the protection
            for finding in roles.check(db, sqlite.path_of(target)):
                mark = "ok  " if finding.ok else "WARN"
                print(f"{mark} {finding.what}: {finding.detail}", file=stream)
    finally:
        db.close()
    return 0
