"""Roles, bindings and the authorisation decision (pure; the YAML is read elsewhere).

A policy maps Slack identities (user ids and user-group ids) to roles; a role says which
action tiers its members may request, which tiers they may approve, and whether they may
diagnose, undo and resolve. ``decide`` answers one question per click:
``Allow | Deny(reason) | NeedsApproval(quorum, approver_roles)``. Nothing is allowed without a
binding (default deny). Deny reasons are shown to the user as they are, so they say what to
do. ``parse_policy`` validates the whole file at start and names the bad key (and line, when
the reader passes a ``line_of`` lookup).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from bot.core.validation import ErrorDetail, validation_message
from bot.errors import PolicyError

Tier = Literal[1, 2, 3]
TIERS: tuple[Tier, ...] = (1, 2, 3)
Permission = Literal["diagnose", "undo", "resolve", "view"]
_USER_ID = r"^[UW][A-Z0-9_]{2,}$"  # "_": the stand-in's readable ids (U_ALICE)
_GROUP_ID = r"^S[A-Z0-9]{2,}$"
_CHANNEL_ID = r"^[CGD][A-Z0-9]{2,}$"
_PATTERN_HINTS = {
    _USER_ID: "is not a Slack user id (they look like U0123ABCD: profile -> Copy member ID)",
    _GROUP_ID: "is not a Slack user-group id (they look like S0123ABCD)",
    _CHANNEL_ID: "is not a Slack channel id (they look like C0123ABCD)",
}


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Role(_Model):
    allows: tuple[Tier, ...] = Field((), description="action tiers members may request")
    can_approve: tuple[Tier, ...] = Field((), description="tiers members may approve")
    can_diagnose: bool = False
    can_undo: bool = False
    can_resolve: bool = False


class Binding(_Model):
    users: tuple[Annotated[str, Field(pattern=_USER_ID)], ...] = ()
    usergroups: tuple[Annotated[str, Field(pattern=_GROUP_ID)], ...] = ()


class TierApproval(_Model):
    quorum: int = Field(ge=0, le=10, description="approvers needed besides the requester")


def _default_approvals() -> dict[Tier, TierApproval]:
    # Tier 1 (cordon + evict) is the widest blast radius: a second person must agree.
    return {1: TierApproval(quorum=1), 2: TierApproval(quorum=0), 3: TierApproval(quorum=0)}


class Policy(_Model):
    roles: dict[str, Role] = Field(default_factory=dict)
    bindings: dict[str, Binding] = Field(default_factory=dict)
    channels: tuple[Annotated[str, Field(pattern=_CHANNEL_ID)], ...] = Field(
        (), description="channel ids gpunode serves; empty = all"
    )
    approvals: dict[Tier, TierApproval] = Field(default_factory=_default_approvals)
    approval_ttl_s: int = Field(900, ge=30, le=86400)

    @field_validator("approvals", mode="before")
    @classmethod
    def _tier_keys(cls, value: Any) -> Any:
        # JSON and quoted YAML keys arrive as "1"; tiers are integers.
        if isinstance(value, Mapping):
            return {
                int(k) if isinstance(k, str) and k.strip().isdecimal() else k: v
                for k, v in value.items()
            }
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Policy:
        for role in self.bindings:
            if role not in self.roles:
                known = ", ".join(sorted(self.roles)) or "none defined"
                raise ValueError(f"bindings.{role}: no such role (roles: {known})")
        merged = {**_default_approvals(), **self.approvals}
        for tier, rule in merged.items():
            if rule.quorum and not any(tier in r.can_approve for r in self.roles.values()):
                raise ValueError(
                    f"approvals.{tier}.quorum is {rule.quorum} but no role has {tier} in "
                    "can_approve; add it to a role or set the quorum to 0"
                )
        return self

    def quorum(self, tier: Tier) -> int:
        rule = self.approvals.get(tier) or _default_approvals()[tier]
        return rule.quorum


class Principal(_Model):
    """Who clicked, with user groups already resolved by the caller, and where."""

    user_id: str
    usergroup_ids: frozenset[str] = frozenset()
    channel_id: str = ""


class ActionRequestInfo(_Model):
    tier: Tier
    undo: bool = Field(False, description="reverting an earlier action rather than acting")
    action_id: str = ""


class Allow(_Model):
    kind: Literal["allow"] = "allow"


class Deny(_Model):
    kind: Literal["deny"] = "deny"
    reason: str


class NeedsApproval(_Model):
    kind: Literal["needs_approval"] = "needs_approval"
    quorum: int = Field(ge=1)
    approver_roles: tuple[str, ...]


Decision = Annotated[Allow | Deny | NeedsApproval, Field(discriminator="kind")]


def roles_of(principal: Principal, policy: Policy) -> list[str]:
    """Roles bound to the user directly or through any of their user groups (sorted)."""
    return sorted(
        role
        for role, binding in policy.bindings.items()
        if principal.user_id in binding.users
        or principal.usergroup_ids.intersection(binding.usergroups)
    )


def _channel_denied(principal: Principal, policy: Policy) -> Deny | None:
    if policy.channels and principal.channel_id not in policy.channels:
        return Deny(
            reason="gpunode is not enabled in this channel; use one of its incident channels "
            "or ask an admin to add this channel to the policy file"
        )
    return None


def _roles_with(policy: Policy, test: Callable[[Role], bool]) -> list[str]:
    return sorted(name for name, role in policy.roles.items() if test(role))


def _need_role(roles: list[str], what: str) -> Deny:
    if not roles:
        return Deny(reason=f"no role in the policy file allows {what}; ask an admin to add one")
    names = " or ".join(roles)
    plural = "role" if len(roles) == 1 else "roles"
    return Deny(
        reason=f"you need the {names} {plural} for {what}; ask an admin to add you to it in "
        "the policy file"
    )


def decide(
    principal: Principal, request: ActionRequestInfo, policy: Policy
) -> Allow | Deny | NeedsApproval:
    """May ``principal`` request this action here, and does it need approvals first?"""
    denied = _channel_denied(principal, policy)
    if denied:
        return denied
    mine = [policy.roles[name] for name in roles_of(principal, policy)]
    if request.undo:
        if any(role.can_undo for role in mine):
            return Allow()
        return _need_role(_roles_with(policy, lambda r: r.can_undo), "undo")
    if not any(request.tier in role.allows for role in mine):
        return _need_role(
            _roles_with(policy, lambda r: request.tier in r.allows), f"tier {request.tier}"
        )
    quorum = policy.quorum(request.tier)
    if quorum == 0:
        return Allow()
    approvers = _roles_with(policy, lambda r: request.tier in r.can_approve)
    return NeedsApproval(quorum=quorum, approver_roles=tuple(approvers))


def can_approve(principal: Principal, tier: Tier, policy: Policy) -> bool:
    """True when one of the principal's roles may approve ``tier`` in this channel."""
    if _channel_denied(principal, policy):
        return False
    return any(tier in policy.roles[name].can_approve for name in roles_of(principal, policy))


def authorize(principal: Principal, permission: Permission, policy: Policy) -> Allow | Deny:
    """For the non-action verbs: diagnose, undo, resolve, and ``view`` (status, top,
    timeline), which any role grants: someone bound to no role sees nothing either."""
    denied = _channel_denied(principal, policy)
    if denied:
        return denied
    if permission == "view":
        if roles_of(principal, policy):
            return Allow()
        return Deny(
            reason="you are bound to no role in the policy file, so gpunode shows you nothing; "
            "ask an admin to bind you to a role (e.g. viewer)"
        )
    flag = f"can_{permission}"
    if any(getattr(policy.roles[name], flag) for name in roles_of(principal, policy)):
        return Allow()
    return _need_role(_roles_with(policy, lambda r: bool(getattr(r, flag))), permission)


def parse_policy(
    data: Any,
    *,
    source: str = "policy",
    line_of: Callable[[tuple[str | int, ...]], int | None] | None = None,
) -> Policy:
    """Validate a loaded policy document; PolicyError lists every problem with its key path."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise PolicyError(f"{source}: the policy must be a mapping with roles and bindings")
    try:
        return Policy.model_validate(data)
    except ValidationError as exc:
        problems = validation_message(exc, top=None, message=_policy_problem, line_of=line_of)
        raise PolicyError(f"{source} is invalid: {problems}") from exc


def _policy_problem(err: ErrorDetail) -> str:
    """pydantic's message without its "Value error, " prefix; a name that does not match
    its pattern says what the pattern wants."""
    ctx = err.get("ctx")
    pattern = ctx.get("pattern", "") if isinstance(ctx, dict) else ""
    hint = _PATTERN_HINTS.get(str(pattern))
    if hint:
        return f"{err['input']!r} {hint}"
    return str(err["msg"]).removeprefix("Value error, ")
