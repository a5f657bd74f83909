"""Acting as the person (issue 21 §2): who a tier action goes out as. Pure.

With impersonation on (the policy file's ``impersonation`` block), each Slack user who may
act is mapped to a Kubernetes identity (a user name and groups). Their tier actions (dry run,
apply, undo) are sent with the bot's token and ``Impersonate-User``/``Impersonate-Group``
headers, so the cluster's own RBAC decides, and its audit log records the bot as the
impersonator and the person as the user. Extras say what only gpunode knows, and land in the
Kubernetes audit event's ``impersonatedUser.extra``:

- ``gpunode.io/slack-user``: the requester's Slack id;
- ``gpunode.io/approved-by``: the Slack ids of the approvers (two-person rule), one value each;
- ``gpunode.io/action-id``: gpunode's action id (its own audit row).

Each extra key needs ``impersonate`` on ``userextras/<key>`` (API group
``authentication.k8s.io``) for the bot; deploy/overlays/impersonation grants exactly these.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field, field_validator

from bot.core.model.validation import KeyedValueError

EXTRA_SLACK_USER = "gpunode.io/slack-user"
EXTRA_APPROVED_BY = "gpunode.io/approved-by"
EXTRA_ACTION = "gpunode.io/action-id"
EXTRA_KEYS = (EXTRA_SLACK_USER, EXTRA_APPROVED_BY, EXTRA_ACTION)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _name_problem(name: str, *, what: str) -> KeyedValueError | None:
    """What is wrong with a user or group name, keyed ``kube_identity_name``: ``what``
    (user|group), ``name`` (as Python quotes it: control characters escaped) and ``fault``
    (blank|control|system); None when it is fine."""
    if not name.strip() or name != name.strip():
        fault, text = "blank", f"{what} {name!r} is empty or has surrounding spaces"
    elif _CONTROL.search(name):
        fault, text = "control", f"{what} {name!r} holds a control character"
    elif name.startswith("system:") and not (
        what == "user" and name.startswith("system:serviceaccount:")
    ):
        fault = "system"
        text = (
            f"{what} {name!r} is a Kubernetes system identity; map people to their own "
            "user and groups (a ServiceAccount user is allowed)"
        )
    else:
        return None
    return KeyedValueError(
        text, key="kube_identity_name", params={"what": what, "name": repr(name), "fault": fault}
    )


class KubeIdentity(BaseModel):
    """The Kubernetes user (and groups) one Slack user acts as."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    user: str = Field(max_length=253, description="the Kubernetes user name (Impersonate-User)")
    groups: tuple[str, ...] = Field((), description="Kubernetes groups (Impersonate-Group)")

    @field_validator("user")
    @classmethod
    def _user(cls, value: str) -> str:
        if problem := _name_problem(value, what="user"):
            raise problem
        return value

    @field_validator("groups")
    @classmethod
    def _groups(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for group in value:
            if problem := _name_problem(group, what="group"):
                raise problem
        return value


class ActingAs(BaseModel):
    """What one tier action is sent as: the person's identity and gpunode's extras."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    user: str
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def extra_values(self, key: str) -> tuple[str, ...]:
        return next((values for k, values in self.extra if k == key), ())


def acting_as(
    identity: KubeIdentity,
    *,
    slack_user: str,
    approvers: Sequence[str] = (),
    action_id: str = "",
) -> ActingAs:
    """The impersonation of ``identity`` for one action requested by ``slack_user`` and
    approved by ``approvers`` (Slack ids, in the order they voted)."""
    extra: list[tuple[str, tuple[str, ...]]] = [(EXTRA_SLACK_USER, (slack_user,))]
    if approvers:
        extra.append((EXTRA_APPROVED_BY, tuple(dict.fromkeys(approvers))))
    if action_id:
        extra.append((EXTRA_ACTION, (action_id,)))
    return ActingAs(user=identity.user, groups=identity.groups, extra=tuple(extra))
