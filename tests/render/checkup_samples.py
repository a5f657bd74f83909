"""One ``gpunode doctor`` row of every code and variant the checks write (the cluster's in
``bot.services.doctor``, the store's in ``bot.store.checkup`` and ``bot.store.roles``), each
beside the English the table printed for it before rows carried codes: ``(row, (check,
detail))``. Text a server or an exception wrote (``reason``) is quoted as it is in every
language; ``QUOTED_REASONS`` lists the samples' own, for the leak checks to leave out."""

from __future__ import annotations

from bot.core.reporting.checkup import Row

CLUSTER = "cluster"
OWN = "own_namespace"
_CORE_EVICTION = {"api_group": "", "resource": "pods/eviction", "verb": "create", "scope": CLUSTER}
_BATCH_JOBS = {"api_group": "batch", "resource": "jobs", "verb": "create", "scope": OWN}
_SECRETS = {"api_group": "", "resource": "secrets", "verb": "get", "scope": CLUSTER}
_LEASES = {"api_group": "coordination.k8s.io", "resource": "leases", "verb": "get", "scope": OWN}
_ROLE = {"check": "store_role", "me": "gpunode_app", "owner": "gpunode_owner"}
_AUDIT = {"check": "table_grants", "me": "gpunode_app", "table": "audit"}
_FILE = {"check": "store_file", "target": "/var/lib/gpunode/gpunode.db"}
_FOLDER = {"check": "store_folder", "target": "/var/lib/gpunode"}
#: what a server or the OS said, quoted verbatim (not the catalog's words)
QUOTED_REASONS = (
    "selfsubjectrulesreviews is forbidden: User cannot create it",
    "webhook denied the request",
    "Permission denied",
    "store schema 9 is newer than this version",
)
_FORBIDDEN, _DENIED, _OS, _STORE = QUOTED_REASONS

CHECKUP_SAMPLES: tuple[tuple[Row, tuple[str, str]], ...] = (
    (
        Row("grants", "warn", "review_incomplete", {"namespace": None, "reason": _FORBIDDEN}),
        ("the rules review (cluster-wide) is incomplete", _FORBIDDEN),
    ),
    (
        Row("grants", "warn", "review_incomplete", {"namespace": "gpunode", "reason": ""}),
        ("the rules review (namespace gpunode) is incomplete", "no reason given"),
    ),
    (
        Row("grants", "FAIL", "grant_missing", _CORE_EVICTION),
        ("missing: create pods/eviction (core) cluster-wide", "the bot needs it"),
    ),
    (
        Row("grants", "FAIL", "grant_missing", _BATCH_JOBS),
        ("missing: create jobs (batch) in its namespace", "the bot needs it"),
    ),
    (
        Row("grants", "warn", "grant_extra", _SECRETS),
        ("extra: get secrets (core) cluster-wide", "no call of the bot needs it"),
    ),
    (
        Row("grants", "warn", "grant_extra", _LEASES),
        ("extra: get leases (coordination.k8s.io) in its namespace", "no call of the bot needs it"),
    ),
    (
        Row("grants", "ok", "grants_ok", {"calls": 31, "mode": "daemonset"}),
        ("all 31 calls the bot makes (daemonset mode)", ""),
    ),
    (
        Row("grants", "FAIL", "review_failed", {"reason": _FORBIDDEN}),
        ("cannot review the token's rules", _FORBIDDEN),
    ),
    (
        Row("admission", "FAIL", "policy_missing", {"policy": "gpunode-node-cordon"}),
        ("policy gpunode-node-cordon is not installed", ""),
    ),
    (
        Row("admission", "FAIL", "policy_unbound", {"policy": "gpunode-node-cordon"}),
        ("policy gpunode-node-cordon is installed but not bound", ""),
    ),
    (
        Row("admission", "ok", "policy_ok", {"policy": "gpunode-node-cordon"}),
        ("policy gpunode-node-cordon installed and bound", ""),
    ),
    (
        Row("admission", "FAIL", "policies_unreadable", {"reason": _FORBIDDEN}),
        ("cannot list the admission policies", _FORBIDDEN),
    ),
    (
        Row("collector", "warn", "no_gpu_node", {"agent": False}),
        ("no GPU node to check the collector Job on", ""),
    ),
    (
        Row("collector", "warn", "no_gpu_node", {"agent": True}),
        ("no GPU node to check the collector agent on", ""),
    ),
    (
        Row("collector", "ok", "collector_ok", {"agent": False, "node": "gpu-node-01"}),
        ("the collector Job is admitted", "dry run on gpu-node-01"),
    ),
    (
        Row("collector", "ok", "collector_ok", {"agent": True, "node": "gpu-node-01"}),
        ("the collector agent runs", "found on gpu-node-01"),
    ),
    (
        Row("collector", "FAIL", "collector_failed", {"agent": False, "reason": _DENIED}),
        ("the collector Job is not admitted", _DENIED),
    ),
    (
        Row("collector", "FAIL", "collector_failed", {"agent": True, "reason": _DENIED}),
        ("the collector agent is not found", _DENIED),
    ),
    (
        Row("store", "ok", "store_new", {"reason": _STORE}),
        ("a new store", _STORE),
    ),
    (
        Row("store", "FAIL", "store_unreadable", {"reason": _STORE}),
        ("cannot read the store's roles", _STORE),
    ),
    (
        Row("store", "warn", "audit_unsigned"),
        (
            "audit rows are not signed",
            "set store.audit_key: a row forged with a correct hash passes --verify without it",
        ),
    ),
    (Row("store", "ok", "audit_signed"), ("audit rows are signed (store.audit_key)", "")),
    (
        Row("replicas", "ok", "lease", {"lease": "gpunode-leader"}),
        ("leader elected with Lease gpunode-leader", ""),
    ),
    (
        Row("replicas", "FAIL", "replicas_shared", {"replicas": ["gpunode-a", "gpunode-b"]}),
        (
            "replicas share this store without a Lease",
            "gpunode-a, gpunode-b alive: set leader.lease_name (each replica would mark the "
            "other's running actions interrupted)",
        ),
    ),
    (
        Row("replicas", "warn", "no_lease"),
        (
            "no Lease configured",
            "a PostgreSQL store is for several replicas: set leader.lease_name before running "
            "a second one",
        ),
    ),
    (Row("replicas", "ok", "one_replica"), ("one replica on this store", "")),
    (
        Row("store", "ok", "role_new_store", {"check": "store_role"}),
        (
            "store role",
            "a new store (no audit table yet): run gpunode doctor again after the first start",
        ),
    ),
    (
        Row("store", "ok", "role_owner", {**_ROLE, "superuser": False, "same": False}),
        ("store role", "the bot connects as gpunode_app; the audit tables belong to gpunode_owner"),
    ),
    (
        Row(
            "store",
            "FAIL",
            "role_owner",
            {"check": "store_role", "me": "postgres", "owner": "postgres"}
            | {"superuser": True, "same": True},
        ),
        (
            "store role",
            "the bot connects as postgres; the audit tables belong to postgres (a superuser: it "
            "can lift every guard) (the same role: it can drop or replace the guards; run "
            "`gpunode migrate --app-role` as the owner and give the bot the app role's DSN)",
        ),
    ),
    (
        Row(
            "store",
            "FAIL",
            "grants_held",
            {**_AUDIT, "held": ["UPDATE", "DELETE"], "allowed": ["SELECT", "INSERT"]},
        ),
        ("audit grants", "gpunode_app may UPDATE, DELETE on audit; revoke it"),
    ),
    (
        Row("store", "ok", "grants_only", {**_AUDIT, "held": [], "allowed": ["SELECT", "INSERT"]}),
        ("audit grants", "gpunode_app may only SELECT and INSERT on audit"),
    ),
    (
        Row("store", "ok", "in_memory", {"check": "store_file"}),
        ("store file", "in memory (nothing on disk to protect)"),
    ),
    (
        Row("store", "warn", "stat_failed", {**_FOLDER, "reason": _OS}),
        ("store folder", f"cannot stat /var/lib/gpunode: {_OS}"),
    ),
    *(
        (
            Row(
                "store",
                "warn",
                "writable_loose",
                {**_FILE, "mode": mode, "group": group, "others": others},
            ),
            (
                "store file",
                f"/var/lib/gpunode/gpunode.db is writable by {who} (mode {mode}): they can "
                "rewrite the audit log; chmod go-w /var/lib/gpunode/gpunode.db",
            ),
        )
        for mode, group, others, who in (
            ("-rw-rw-rw-", True, True, "its group and others"),
            ("-rw-rw----", True, False, "its group"),
            ("-rw----rw-", False, True, "others"),
        )
    ),
    (
        Row("store", "ok", "writable_owner", {**_FOLDER, "mode": "drwx------"}),
        ("store folder", "/var/lib/gpunode is writable by its owner only (mode drwx------)"),
    ),
)
