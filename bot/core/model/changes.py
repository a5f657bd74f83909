"""Records of what an effect did (or would do, under dry run) to the cluster.

Returned by the remedy primitives in ``bot.kube``; stored verbatim in the audit log and shown
in the thread. ``before`` holds exactly what undo needs to restore.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

#: resource quantities for a container patch; None = remove the key (used by undo)
ResourceValues = dict[str, str | None]
#: env for a container patch: literal value, a whole env entry to restore, or None = remove
EnvValues = dict[str, str | dict[str, Any] | None]


class Change(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    verb: Literal[
        "cordon",
        "uncordon",
        "evict",
        "create_priority_class",
        "set_priority_class",
        "patch_resources",
        "resize",
        "annotate_node",
    ]
    kind: str
    namespace: str | None = None
    name: str
    dry_run: bool
    patch: dict[str, Any] | list[Any] = Field(
        default_factory=dict, description="exactly what was sent (merge/SMP body or JSON patch)"
    )
    patch_type: str = Field("", description="content type of the patch, if a PATCH")
    before: dict[str, Any] = Field(default_factory=dict, description="state needed to undo")
    after: dict[str, Any] = Field(default_factory=dict, description="the server's answer, trimmed")
    noop: bool = Field(False, description="the object already had the requested state")


class EvictionOutcome(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    namespace: str
    name: str
    status: Literal["evicted", "blocked", "not_found", "failed", "dry_run"]
    reason: str = ""
    #: the reason's key and raw params (``templates/slack/errors.j2``), so each reader reads
    #: it in their language; empty: ``reason`` is shown as it is (rows stored before)
    reason_key: str = ""
    reason_params: dict[str, Any] = Field(default_factory=dict)
    pdb_name: str | None = None
    pdb_needs: int | None = None
    pdb_has: int | None = None
