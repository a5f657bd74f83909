"""The audit chain's first columns, spelled out for the tests that write rows the way an older
gpunode hashed them, so that those tests do not borrow the code under test
(``bot.store.audit_chain``)."""

#: the columns the chain hashed before clusters existed (schema steps 1-3), in this order
OLD_COLUMNS = (
    "id",
    "at",
    "actor",
    "action",
    "channel",
    "incident_id",
    "action_id",
    "tier",
    "decision",
    "dry_run",
    "outcome",
    "changes",
    "detail",
    "prev_hash",
)
