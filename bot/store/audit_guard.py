"""What keeps the audit log append-only, as shipped, and the check that it still is (sync).

The guards are triggers on ``audit`` and ``audit_head`` (schema step 7 creates them from the
definitions here, on both engines):

- ``audit`` rows are never updated, deleted or truncated, and only inserted with their hashes;
  on SQLite an INSERT whose id already exists is refused, because ``INSERT OR REPLACE``
  deletes the old row without firing delete triggers (unless the writer's connection turned
  on ``recursive_triggers``, which a forger would not);
- ``audit_head`` is moved by the database itself: an AFTER INSERT trigger on ``audit`` sets
  it to the new row, and a guard refuses any update that does not leave it on, or move it
  forward onto, the newest row, every delete, every second row and (PostgreSQL) TRUNCATE.
  (Setting it again to what it already holds is allowed: a replica of the previous release,
  still running during a rolling upgrade, upserts the head after each append itself.)
  So the tail cannot be cut and the head "fixed to match" without lifting a trigger.

``check`` compares what the database holds with these definitions, not only their names: a
trigger recreated as a no-op under the same name, a PostgreSQL trigger switched to
``ENABLE REPLICA``/``ALWAYS``/``DISABLE``, and a trigger function replaced with ``CREATE OR
REPLACE FUNCTION`` are each named. A change to a definition here needs a new migration step
that recreates the triggers (step 7 reads these constants).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.store.db import Db

APPEND_ONLY = "audit rows are append-only"
CHAINED = "audit rows are hash-chained; only gpunode writes them"
HEAD_FORWARD = "the audit head only moves forward, onto the newest audit row"

#: SQLite: trigger name -> its CREATE TRIGGER statement (as stored in sqlite_master)
SQLITE_TRIGGERS: dict[str, str] = {
    "audit_no_update": f"""CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
        BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}'); END""",
    "audit_no_delete": f"""CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
        BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}'); END""",
    "audit_chained": f"""CREATE TRIGGER audit_chained BEFORE INSERT ON audit
        WHEN NEW.prev_hash IS NULL OR NEW.row_hash IS NULL
        BEGIN SELECT RAISE(ABORT, '{CHAINED}'); END""",
    "audit_no_replace": f"""CREATE TRIGGER audit_no_replace BEFORE INSERT ON audit
        WHEN EXISTS (SELECT 1 FROM audit WHERE id = NEW.id)
        BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}'); END""",  # noqa: S608
    "audit_head_advance": """CREATE TRIGGER audit_head_advance AFTER INSERT ON audit
        BEGIN UPDATE audit_head SET last_id = NEW.id, last_hash = NEW.row_hash WHERE id = 1;
        END""",
    "audit_head_forward": f"""CREATE TRIGGER audit_head_forward BEFORE UPDATE ON audit_head
        WHEN NEW.id IS NOT 1 OR NEW.last_id < OLD.last_id
            OR (NEW.last_id = OLD.last_id AND NEW.last_hash IS NOT OLD.last_hash)
            OR NEW.last_id IS NOT (SELECT MAX(id) FROM audit)
            OR NEW.last_hash IS NOT (SELECT row_hash FROM audit WHERE id = NEW.last_id)
        BEGIN SELECT RAISE(ABORT, '{HEAD_FORWARD}'); END""",  # noqa: S608
    "audit_head_no_delete": f"""CREATE TRIGGER audit_head_no_delete BEFORE DELETE ON audit_head
        BEGIN SELECT RAISE(ABORT, '{HEAD_FORWARD}'); END""",
    "audit_head_one": f"""CREATE TRIGGER audit_head_one BEFORE INSERT ON audit_head
        WHEN EXISTS (SELECT 1 FROM audit_head)
        BEGIN SELECT RAISE(ABORT, '{HEAD_FORWARD}'); END""",  # noqa: S608
}


@dataclass(frozen=True)
class PgFunction:
    body: str
    security_definer: bool = False


#: PostgreSQL: trigger function name -> its body (``prosrc``)
PG_FUNCTIONS: dict[str, PgFunction] = {
    "audit_refuse": PgFunction(f" BEGIN RAISE EXCEPTION '{APPEND_ONLY}'; END "),
    "audit_require_chain": PgFunction(
        f""" BEGIN
        IF NEW.prev_hash IS NULL OR NEW.row_hash IS NULL THEN
            RAISE EXCEPTION '{CHAINED}';
        END IF;
        RETURN NEW; END """
    ),
    # runs as the owner (SECURITY DEFINER), so the bot's role needs no UPDATE on audit_head
    "audit_head_advance": PgFunction(
        """ BEGIN
        UPDATE audit_head SET last_id = NEW.id, last_hash = NEW.row_hash WHERE id = 1;
        RETURN NULL; END """,
        security_definer=True,
    ),
    "audit_head_guard": PgFunction(
        f""" BEGIN
        IF TG_OP <> 'UPDATE' OR NEW.id <> 1 OR NEW.last_id < OLD.last_id
            OR (NEW.last_id = OLD.last_id AND NEW.last_hash IS DISTINCT FROM OLD.last_hash)
            OR NEW.last_id IS DISTINCT FROM (SELECT MAX(id) FROM audit)
            OR NEW.last_hash IS DISTINCT FROM (SELECT row_hash FROM audit WHERE id = NEW.last_id)
        THEN RAISE EXCEPTION '{HEAD_FORWARD}';
        END IF;
        RETURN NEW; END """,  # noqa: S608
    ),
}


@dataclass(frozen=True)
class PgTrigger:
    table: str
    #: the definition as ``pg_get_triggerdef`` prints it, the table unqualified
    definition: str


def _pg(name: str, table: str, when: str, each: str, function: str) -> PgTrigger:
    return PgTrigger(
        table,
        f"CREATE TRIGGER {name} {when} ON {table} FOR EACH {each} EXECUTE FUNCTION {function}()",
    )


PG_TRIGGERS: dict[str, PgTrigger] = {
    "audit_no_update": _pg("audit_no_update", "audit", "BEFORE UPDATE", "ROW", "audit_refuse"),
    "audit_no_delete": _pg("audit_no_delete", "audit", "BEFORE DELETE", "ROW", "audit_refuse"),
    "audit_no_truncate": _pg(
        "audit_no_truncate", "audit", "BEFORE TRUNCATE", "STATEMENT", "audit_refuse"
    ),
    "audit_chained": _pg("audit_chained", "audit", "BEFORE INSERT", "ROW", "audit_require_chain"),
    "audit_head_advance": _pg(
        "audit_head_advance", "audit", "AFTER INSERT", "ROW", "audit_head_advance"
    ),
    "audit_head_guard": _pg(
        "audit_head_guard", "audit_head", "BEFORE DELETE OR UPDATE", "ROW", "audit_head_guard"
    ),
    "audit_head_no_truncate": _pg(
        "audit_head_no_truncate", "audit_head", "BEFORE TRUNCATE", "STATEMENT", "audit_refuse"
    ),
}
#: what ``pg_trigger.tgenabled`` holds for a trigger that fires as shipped ('O': on origin
#: and local sessions); 'R' (ENABLE REPLICA), 'A' (ENABLE ALWAYS) and 'D' (DISABLE) differ
PG_ENABLED = "O"
_PG_STATES = {"D": "disabled", "R": "set to ENABLE REPLICA", "A": "set to ENABLE ALWAYS"}


def pg_function_sql(name: str) -> str:
    fn = PG_FUNCTIONS[name]
    returns = "trigger LANGUAGE plpgsql"
    if fn.security_definer:
        returns += " SECURITY DEFINER SET search_path = pg_catalog, public"
    return f"CREATE OR REPLACE FUNCTION {name}() RETURNS {returns} AS $${fn.body}$$"


def install(db: Db) -> None:
    """Migration step 7: (re)create every guard from the definitions above, and the head row
    (the head trigger moves an existing row; it never creates one)."""
    db.execute(
        "INSERT INTO audit_head (id, last_id, last_hash) "
        "SELECT 1, 0, ? WHERE NOT EXISTS (SELECT 1 FROM audit_head)",
        ("0" * 64,),
    )
    if db.dialect.name == "sqlite":
        for name, sql in SQLITE_TRIGGERS.items():
            db.execute(f"DROP TRIGGER IF EXISTS {name}")
            db.execute(sql)
        return
    for name in PG_FUNCTIONS:
        db.execute(pg_function_sql(name))
    for name, trigger in PG_TRIGGERS.items():
        db.execute(f"DROP TRIGGER IF EXISTS {name} ON {trigger.table}")
        db.execute(trigger.definition)


def _squash(sql: str) -> str:
    return re.sub(r"\s+", " ", sql).strip()


def check(db: Db) -> str:
    """'' when every guard is in place as shipped, else what differs (first found)."""
    if db.dialect.name == "sqlite":
        return _check_sqlite(db)
    return _check_pg(db)


def _check_sqlite(db: Db) -> str:
    rows = db.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' "
        "AND tbl_name IN ('audit', 'audit_head') ORDER BY name"
    ).fetchall()
    found = {str(r[0]): _squash(str(r[1] or "")) for r in rows}
    missing = [n for n in SQLITE_TRIGGERS if n not in found]
    if missing:
        return f"trigger {', '.join(missing)} was dropped"
    changed = [n for n, sql in SQLITE_TRIGGERS.items() if found[n] != _squash(sql)]
    if changed:
        return f"trigger {', '.join(changed)} was changed (its definition is not the shipped one)"
    extra = sorted(set(found) - set(SQLITE_TRIGGERS))
    if extra:
        return f"trigger {', '.join(extra)} is not gpunode's (added on the audit tables)"
    return ""


def _unqualified(definition: str) -> str:
    return _squash(
        definition.replace(" ON public.", " ON ").replace("FUNCTION public.", "FUNCTION ")
    )


def _check_pg(db: Db) -> str:
    rows = db.execute(
        "SELECT t.tgname, c.relname, t.tgenabled, pg_get_triggerdef(t.oid) "
        "FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
        "WHERE c.relname IN ('audit', 'audit_head') AND NOT t.tgisinternal "
        "AND c.relnamespace = 'public'::regnamespace ORDER BY t.tgname"
    ).fetchall()
    found = {str(r[0]): (str(r[1]), str(r[2]), _unqualified(str(r[3]))) for r in rows}
    missing = [n for n in PG_TRIGGERS if n not in found]
    if missing:
        return f"trigger {', '.join(missing)} was dropped"
    for name, trigger in PG_TRIGGERS.items():
        table, enabled, definition = found[name]
        if enabled != PG_ENABLED:
            return f"trigger {name} was {_PG_STATES.get(enabled, f'set to state {enabled}')}"
        if (table, definition) != (trigger.table, _squash(trigger.definition)):
            return f"trigger {name} was changed (its definition is not the shipped one)"
    extra = sorted(set(found) - set(PG_TRIGGERS))
    if extra:
        return f"trigger {', '.join(extra)} is not gpunode's (added on the audit tables)"
    functions = db.execute(
        "SELECT p.proname, p.prosrc, p.prosecdef, p.proowner = c.relowner "
        "FROM pg_proc p, pg_class c WHERE c.relname = 'audit' "
        "AND c.relnamespace = 'public'::regnamespace "
        "AND p.pronamespace = 'public'::regnamespace AND p.proname = ANY(?)",
        (list(PG_FUNCTIONS),),
    ).fetchall()
    bodies = {str(r[0]): (_squash(str(r[1])), bool(r[2]), bool(r[3])) for r in functions}
    for name, fn in PG_FUNCTIONS.items():
        if name not in bodies:
            return f"trigger function {name}() was dropped"
        body, definer, owned = bodies[name]
        if (body, definer) != (_squash(fn.body), fn.security_definer):
            return f"trigger function {name}() was replaced (its body is not the shipped one)"
        if not owned:
            return f"trigger function {name}() is not owned by the audit table's owner"
    return ""
