"""A small world for the use-case tests: real Store on a temp file, FakeKube, FakeChat,
the real services, a clock the test moves, and the policy below.

Users: REQ and REQ2 are responders (may request tiers 1-3 and undo); APPROVER approves
tier 1 (bound directly), GROUP_APPROVER through the ops user group; VIEWER may only
diagnose; STRANGER has no binding at all. Tier 1 needs one approval (the default).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bot.core.governance.policy import Policy, parse_policy
from bot.core.model.clusters import DEFAULT_CLUSTER, NodeRef
from bot.core.model.thresholds import DEFAULT
from bot.services.act import ActService
from bot.services.background import Background
from bot.services.chatops import BotServices
from bot.services.clusters import ClusterRegistry
from bot.services.diagnose import DiagnoseOutcome, DiagnoseService
from bot.services.operations import IncidentOps
from bot.store.storing import Store
from bot.wiring.runtime import verdict_sentence
from tests.services.fakes import FakeChat, FakeKube, load_scenario
from tests.services.presenting import RecordingPresenter

CHANNEL = "C0INCIDENT"
NODE = "gpu-node-01"
#: the node the scenarios diagnose, in the one cluster of a one-cluster bot
AT = NodeRef(cluster=DEFAULT_CLUSTER, node=NODE)
REQ, REQ2, APPROVER, GROUP_APPROVER = "UREQ", "UREQ2", "UAPPROVER", "UGROUPAPP"
VIEWER, STRANGER = "UVIEWER", "USTRANGER"
OPS_GROUP = "SOPS"
T0 = datetime(2026, 3, 14, 9, 30, tzinfo=UTC)
MAX_AGE_S = 900
TTL_S = 600

POLICY: dict[str, Any] = {
    "roles": {
        "responder": {"allows": [1, 2, 3], "can_undo": True, "can_diagnose": True},
        "approver": {"can_approve": [1], "can_diagnose": True},
        "viewer": {"can_diagnose": True},
    },
    "bindings": {
        "responder": {"users": [REQ, REQ2]},
        "approver": {"users": [APPROVER], "usergroups": [OPS_GROUP]},
        "viewer": {"users": [VIEWER]},
    },
}


@dataclass
class Clock:
    now: datetime = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@dataclass
class World:
    store: Store
    kube: FakeKube
    chat: FakeChat
    clock: Clock
    bg: Background
    diagnose: DiagnoseService
    act: ActService
    policy: Policy
    extra: list[Store] = field(default_factory=list)
    #: every outcome the use cases handed their presenter (assert these, not English)
    thread: RecordingPresenter = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.thread is None:
            self.thread = RecordingPresenter(self.chat)

    async def diagnosed(self, user: str = REQ) -> DiagnoseOutcome:
        outcome = await self.diagnose.diagnose(AT, channel=CHANNEL, user=user)
        assert outcome.diagnosis is not None, outcome.error
        return outcome

    async def request(
        self, tier: int, user: str = REQ, act: ActService | None = None, **values: Any
    ) -> str:
        """Diagnose (if needed), press the tier button, submit the modal; the action id."""
        act = act or self.act
        incidents = await self.store.open_incidents(node=NODE)
        if not incidents or await self.store.latest_snapshot(incidents[0].id) is None:
            await self.diagnosed(user)
            incidents = await self.store.open_incidents(node=NODE)
        snap = await self.store.latest_snapshot(incidents[0].id)
        assert snap is not None
        plans = json.loads(snap.diagnosis_json)["plans"]
        plan_id = next(p["plan_id"] for p in plans if p["tier"] == tier)
        views_before = len(self.chat.views)
        await act.open_confirmation(
            tier=tier,
            incident_id=incidents[0].id,
            plan_id=plan_id,
            user=user,
            channel=CHANNEL,
            trigger_id="T1",
        )
        assert len(self.chat.views) == views_before + 1, self.chat.ephemerals_for(user)
        meta = json.loads(str(self.chat.views[-1][1]["private_metadata"]))
        form = {"reason": "node is falling over", **values}
        plan, errors = await act.validate_submission(meta, form)
        assert plan is not None, errors
        return await act.submitted(meta=meta, plan=plan, reason=form["reason"], user=user)

    async def action_message(self, action_id: str) -> Any:
        record = await self.store.get_action(action_id)
        assert record is not None and record.message_ts is not None
        return self.chat.messages[record.message_ts]

    async def audit(self, action_id: str | None = None) -> list[tuple[str, str, str]]:
        rows = await self.store.audit_since(None)
        return [
            (r.actor, r.action, r.decision)
            for r in rows
            if action_id is None or r.action_id == action_id
        ]

    async def state(self, action_id: str) -> str:
        record = await self.store.get_action(action_id)
        assert record is not None
        return record.state

    def service(
        self, store: Store, *, replica: str, clusters: ClusterRegistry | None = None
    ) -> ActService:
        """Another replica: its own store connection, same file, same cluster and Slack
        (``clusters``: the clusters it serves instead of the one fake cluster)."""
        clusters = clusters or ClusterRegistry.single(self.kube)
        diagnose = DiagnoseService(
            clusters,
            store,
            self.chat,
            thread=self.thread,
            clock=self.clock,
            thresholds=DEFAULT,
            verdict_words=verdict_sentence,
        )
        return ActService(
            clusters,
            store,
            self.chat,
            diagnose,
            self.bg,
            policy=self.policy,
            thread=self.thread,
            clock=self.clock,
            new_id=lambda: uuid.uuid4().hex[:12],
            replica_id=replica,
            evidence_max_age_s=MAX_AGE_S,
            approval_ttl_s=TTL_S,
        )


async def make_world(path: Path | str, scenario: str = "seed") -> World:
    """The world on ``path``: a SQLite file, or a PostgreSQL DSN."""
    bundle, view = load_scenario(scenario)
    clock = Clock()
    kube = FakeKube(bundle, view, clock=clock)
    chat = FakeChat(usergroups={OPS_GROUP: [GROUP_APPROVER]})
    store = await Store.open(str(path))
    bg = Background()
    policy = parse_policy(POLICY)
    thread = RecordingPresenter(chat)
    diagnose = DiagnoseService(
        ClusterRegistry.single(kube),
        store,
        chat,
        thread=thread,
        clock=clock,
        thresholds=DEFAULT,
        verdict_words=verdict_sentence,
    )
    world = World(store, kube, chat, clock, bg, diagnose, None, policy, thread=thread)  # type: ignore[arg-type]
    world.act = world.service(store, replica="replica-a")
    world.diagnose = diagnose
    return world


def bot_services(world: World, *, with_actions: bool = True) -> BotServices:
    """The services a surface calls, built over ``world``'s parts (``act`` left out when
    ``with_actions`` is false: a bot that only diagnoses)."""
    return BotServices(
        clusters=world.diagnose.clusters,
        store=world.store,
        chat=world.chat,
        diagnose=world.diagnose,
        ops=IncidentOps(world.store, clock=world.clock, clusters=world.diagnose.clusters),
        bg=world.bg,
        clock=world.clock,
        act=world.act if with_actions else None,
    )
