"""The incident store: SQLite (WAL, the embedded default) or PostgreSQL (several replicas)
behind one small async interface. Incidents, timeline, audit.

``Store`` (in ``storing``) is the interface the services use; ``engines`` picks the engine
from the target (a path or a ``postgresql://`` DSN) and runs the calls; ``sqlite`` and
``postgres`` open, migrate and wrap a connection as a ``db.Db``; ``migrations`` is the one
ordered list both engines apply; the ``*_rows`` modules hold the SQL, the same for both.
Only this package imports ``sqlite3``, and only ``postgres`` imports ``psycopg``.
"""

from bot.core.reporting.records import (
    ActionRecord,
    ActionState,
    AuditRecord,
    EvidenceSnapshot,
)
from bot.store.storing import Store

__all__ = [
    "ActionRecord",
    "ActionState",
    "AuditRecord",
    "EvidenceSnapshot",
    "Store",
]
