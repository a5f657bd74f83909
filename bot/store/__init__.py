"""The incident store: SQLite (WAL) behind a small async interface. Incidents, timeline, audit.

``Store`` (in ``storing``) is the interface the services use; ``sqlite`` opens and migrates a
connection; the ``*_rows`` modules hold the SQL. Only this package imports ``sqlite3``.
"""

from bot.store.models import (
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
