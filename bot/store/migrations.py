"""Ordered schema migrations, one list for SQLite and PostgreSQL. Append only: never edit a
released step's effect, add the next one (``migrating.apply_migrations`` applies them).

Write portable SQL: TEXT/INTEGER columns, ``{serial_pk}`` for an auto-numbered key,
``ALTER TABLE ... ADD COLUMN``, ``CREATE [UNIQUE] INDEX ... WHERE`` (partial indexes read the
same in both). Where the engines differ (triggers), a step maps engine name to its SQL.
``schema_version`` holds one row: the number of steps applied. A database whose version is
higher than ``len(MIGRATIONS)`` was written by a newer gpunode and is refused, not guessed at.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from bot.store import audit_guard
from bot.store.audit_chain import chain_existing
from bot.store.values import dumps, loads

if TYPE_CHECKING:
    from bot.store.db import Db

#: a step is portable SQL, per-engine SQL (``{"sqlite": ..., "postgres": ...}``; an engine
#: left out skips the step), or a function for what SQL cannot do (hashing existing rows)
Step = str | Mapping[str, str] | Callable[["Db"], None]

_APPEND_ONLY = "audit rows are append-only"
_CHAINED = "audit rows are hash-chained; only gpunode writes them"


def _refuse_trigger(name: str, when: str) -> dict[str, str]:
    """A trigger on ``audit`` that aborts the statement (``when``: UPDATE or DELETE)."""
    return {
        "sqlite": f"""CREATE TRIGGER {name} BEFORE {when} ON audit
            BEGIN SELECT RAISE(ABORT, '{_APPEND_ONLY}'); END""",
        "postgres": f"""CREATE TRIGGER {name} BEFORE {when} ON audit
            FOR EACH ROW EXECUTE FUNCTION audit_refuse()""",
    }


def state_ts_from_timeline(db: Db) -> None:
    """Step 9's backfill: each incident's current-state messages, as the latest ``evidence``
    timeline entry that named them (under ``state_ts``) had them."""
    latest: dict[str, list[str]] = {}
    rows = db.execute(
        "SELECT incident_id, data FROM timeline WHERE kind='evidence' ORDER BY at, seq"
    ).fetchall()
    for r in rows:
        data = loads(r["data"])
        found = data.get("state_ts") if isinstance(data, dict) else None
        if found:
            latest[str(r["incident_id"])] = [str(ts) for ts in found]
    for incident_id, state_ts in latest.items():
        db.execute("UPDATE incidents SET state_ts=? WHERE id=?", (dumps(state_ts), incident_id))


MIGRATIONS: tuple[tuple[Step, ...], ...] = (
    (
        """CREATE TABLE incidents (
            id TEXT PRIMARY KEY,
            number INTEGER NOT NULL UNIQUE,
            node TEXT NOT NULL,
            channel TEXT NOT NULL DEFAULT '',
            thread_ts TEXT,
            root_ts TEXT,
            state TEXT NOT NULL CHECK (state IN ('investigating', 'mitigating', 'resolved')),
            opened_at TEXT NOT NULL,
            resolved_at TEXT,
            opened_by TEXT NOT NULL,
            alert_fingerprint TEXT,
            resolution_note TEXT NOT NULL DEFAULT ''
        )""",
        # at most one open incident per node, whatever the callers race
        "CREATE UNIQUE INDEX incidents_open_node ON incidents(node) WHERE state != 'resolved'",
        "CREATE INDEX incidents_node ON incidents(node, number)",
        "CREATE INDEX incidents_thread ON incidents(channel, thread_ts)",
        """CREATE TABLE timeline (
            seq {serial_pk},
            incident_id TEXT NOT NULL REFERENCES incidents(id),
            at TEXT NOT NULL,
            kind TEXT NOT NULL,
            actor TEXT NOT NULL,
            text TEXT NOT NULL,
            data TEXT NOT NULL
        )""",
        "CREATE INDEX timeline_incident ON timeline(incident_id, at, seq)",
        """CREATE TABLE evidence_snapshots (
            id {serial_pk},
            incident_id TEXT NOT NULL REFERENCES incidents(id),
            at TEXT NOT NULL,
            bundle TEXT NOT NULL,
            cluster_view TEXT NOT NULL,
            diagnosis TEXT NOT NULL,
            sha256 TEXT NOT NULL
        )""",
        "CREATE INDEX evidence_incident ON evidence_snapshots(incident_id, at, id)",
        """CREATE TABLE actions (
            action_id TEXT PRIMARY KEY,
            incident_id TEXT REFERENCES incidents(id),
            tier INTEGER NOT NULL,
            plan TEXT NOT NULL,
            requester TEXT NOT NULL,
            needs_approval INTEGER NOT NULL,
            state TEXT NOT NULL CHECK (state IN ('requested', 'approved', 'claimed', 'running',
                'succeeded', 'failed', 'refused', 'undone')),
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            claimed_by TEXT,
            claimed_at TEXT,
            result TEXT,
            message_ts TEXT,
            undo_claimed_by TEXT,
            undo_claimed_at TEXT
        )""",
        "CREATE INDEX actions_incident ON actions(incident_id, created_at)",
        "CREATE INDEX actions_state ON actions(state)",
        """CREATE TABLE approvals (
            {rowid_column}id TEXT PRIMARY KEY,
            action_id TEXT NOT NULL,
            state TEXT NOT NULL,
            expires_at TEXT NOT NULL,
            body TEXT NOT NULL
        )""",
        "CREATE INDEX approvals_action ON approvals(action_id)",
        "CREATE TABLE processed_events (key TEXT PRIMARY KEY, at TEXT NOT NULL)",
        """CREATE TABLE alert_groups (
            group_key TEXT PRIMARY KEY,
            status TEXT NOT NULL,
            incident_id TEXT,
            updated_at TEXT NOT NULL
        )""",
        """CREATE TABLE audit (
            id {serial_pk},
            at TEXT NOT NULL,
            actor TEXT NOT NULL,
            action TEXT NOT NULL,
            channel TEXT NOT NULL DEFAULT '',
            incident_id TEXT,
            action_id TEXT,
            tier INTEGER,
            decision TEXT NOT NULL,
            dry_run TEXT,
            outcome TEXT NOT NULL DEFAULT '',
            changes TEXT,
            detail TEXT NOT NULL DEFAULT ''
        )""",
        "CREATE INDEX audit_at ON audit(at, id)",
        {
            "postgres": f"""CREATE FUNCTION audit_refuse() RETURNS trigger LANGUAGE plpgsql
                AS $$ BEGIN RAISE EXCEPTION '{_APPEND_ONLY}'; END $$"""
        },
        _refuse_trigger("audit_no_update", "UPDATE"),
        _refuse_trigger("audit_no_delete", "DELETE"),
    ),
    (
        # 2: the audit log becomes a hash chain (bot/store/audit_chain.py); rows written
        # before are chained here, oldest first, so `gpunode audit --verify` covers them too
        "ALTER TABLE audit ADD COLUMN prev_hash TEXT",
        "ALTER TABLE audit ADD COLUMN row_hash TEXT",
        """CREATE TABLE audit_head (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            last_id INTEGER NOT NULL,
            last_hash TEXT NOT NULL
        )""",
        {
            "sqlite": "DROP TRIGGER audit_no_update",
            "postgres": "DROP TRIGGER audit_no_update ON audit",
        },
        chain_existing,
        _refuse_trigger("audit_no_update", "UPDATE"),
        {
            "sqlite": f"""CREATE TRIGGER audit_chained BEFORE INSERT ON audit
                WHEN NEW.prev_hash IS NULL OR NEW.row_hash IS NULL
                BEGIN SELECT RAISE(ABORT, '{_CHAINED}');
                END""",
            "postgres": f"""CREATE FUNCTION audit_require_chain() RETURNS trigger
                LANGUAGE plpgsql AS $$ BEGIN
                IF NEW.prev_hash IS NULL OR NEW.row_hash IS NULL THEN
                    RAISE EXCEPTION '{_CHAINED}';
                END IF;
                RETURN NEW; END $$""",
        },
        {
            "postgres": """CREATE TRIGGER audit_chained BEFORE INSERT ON audit
                FOR EACH ROW EXECUTE FUNCTION audit_require_chain()"""
        },
    ),
    (
        # 3: the incident's root message is claimed before it is posted (claim, post, fill in
        # the ts), so concurrent diagnoses of one node post one root (incident_rows.claim_root)
        "ALTER TABLE incidents ADD COLUMN root_claimed_by TEXT",
        "ALTER TABLE incidents ADD COLUMN root_claimed_at TEXT",
    ),
    (
        # 4: replicas sharing the store say they are alive, so the leader reconciles only
        # the actions of replicas that stopped (bot/services/leading.py)
        """CREATE TABLE replicas (
            replica_id TEXT PRIMARY KEY,
            seen_at TEXT NOT NULL
        )""",
    ),
    (
        # 5: the language an incident thread keeps (bot/core/model/locales.py); one portable
        # statement (SQLite and PostgreSQL alike), existing incidents stay English
        "ALTER TABLE incidents ADD COLUMN locale TEXT NOT NULL DEFAULT 'en'",
    ),
    (
        # 6: one bot serves many clusters. Each row names its cluster; '' marks a row
        # written before clusters existed (the single cluster of that time). Portable SQL:
        # the PostgreSQL store applies the same steps. One open incident per (cluster, node).
        "ALTER TABLE incidents ADD COLUMN cluster TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE timeline ADD COLUMN cluster TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE actions ADD COLUMN cluster TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE audit ADD COLUMN cluster TEXT NOT NULL DEFAULT ''",
        "DROP INDEX incidents_open_node",
        "CREATE UNIQUE INDEX incidents_open_node ON incidents(cluster, node) "
        "WHERE state != 'resolved'",
        "DROP INDEX incidents_node",
        "CREATE INDEX incidents_node ON incidents(cluster, node, number)",
    ),
    (
        # 7: the audit guards as bot/store/audit_guard.py defines them, on both engines:
        # audit_head moved by the database (an AFTER INSERT trigger) and guarded like audit,
        # INSERT OR REPLACE refused on SQLite, TRUNCATE refused on PostgreSQL; every guard
        # recreated from one definition, which `gpunode audit --verify` compares with
        # rows are signed with the bot's audit key when one is set (audit_chain.row_mac)
        "ALTER TABLE audit ADD COLUMN row_mac TEXT",
        audit_guard.install,
    ),
    (
        # 8: evidence snapshots compressed (bot/store/packing.py): the three texts in one
        # zlib value with a format number; rows written before stay format 0 and read as
        # they are.
        {
            "sqlite": "ALTER TABLE evidence_snapshots ADD COLUMN packed BLOB",
            "postgres": "ALTER TABLE evidence_snapshots ADD COLUMN packed BYTEA",
        },
        "ALTER TABLE evidence_snapshots ADD COLUMN format INTEGER NOT NULL DEFAULT 0",
        "CREATE INDEX evidence_at ON evidence_snapshots(at, format)",
    ),
    (
        # 9: the ts of the incident's pinned current-state messages (a JSON list), kept on
        # the incident so a diagnosis reads them by key instead of the whole timeline
        # (bot/services/current_state.py); filled from the timeline's evidence entries
        "ALTER TABLE incidents ADD COLUMN state_ts TEXT NOT NULL DEFAULT '[]'",
        state_ts_from_timeline,
    ),
    (
        # 10: an audit row's detail also as a code and its raw parameters (JSON), so
        # `gpunode audit --lang` words a refusal in the reader's language; the English
        # detail stays. Rows written before hold '' in both and hash exactly as they did
        # (audit_chain.LATER_COLUMNS); a new row's code and parameters are hashed.
        "ALTER TABLE audit ADD COLUMN detail_code TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE audit ADD COLUMN detail_params TEXT NOT NULL DEFAULT ''",
    ),
)

SCHEMA_VERSION = len(MIGRATIONS)
