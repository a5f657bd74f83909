"""``gpunode migrate [--dsn OWNER_DSN] [--app-role ROLE] [--lang en|zh-CN]``: bring the store's
schema up to date as its owner, and (PostgreSQL) grant the bot's own role only what it needs.

Run it as the role that owns the tables (``--dsn``, default ``store.dsn``/``store.path``),
before the bot starts or after an upgrade; the bot then connects with the app role's DSN and
never migrates. See ``bot.store.roles`` for the grants. What it prints is worded in ``--lang``
(``templates/text/cli.txt.j2``'s ``migrate_*`` macros; default English).
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from bot.config import load_settings
from bot.errors import UsageError
from bot.render.checkup import finding_words
from bot.render.cli_text import line
from bot.store import engines, roles, sqlite
from bot.store.migrations import SCHEMA_VERSION


def main(args: argparse.Namespace, *, out: TextIO | None = None) -> int:
    stream = out or sys.stdout
    locale = getattr(args, "lang", None) or "en"
    target = (
        getattr(args, "dsn", None)
        or load_settings(config_file=getattr(args, "config", None)).store.target
    )
    app_role = getattr(args, "app_role", None)
    db = engines.connect(target)
    try:
        print(line("migrate_schema", SCHEMA_VERSION, locale=locale), file=stream)
        if app_role:
            if db.dialect.name != "postgres":
                raise UsageError(
                    "--app-role is for PostgreSQL; SQLite has no roles", key="app_role_sqlite"
                )
            try:
                statements = roles.grant_app_role(db, app_role)
            except ValueError as exc:
                raise UsageError(str(exc), key="app_role_name", params={"role": app_role}) from exc
            print(line("migrate_granted", app_role, len(statements), locale=locale), file=stream)
        if db.dialect.name == "sqlite":  # no roles: the file's mode is the protection
            for finding in roles.check(db, sqlite.path_of(target)):
                what, detail = finding_words(finding, locale=locale)
                print(line("migrate_finding", finding.ok, what, detail, locale=locale), file=stream)
    finally:
        db.close()
    return 0
