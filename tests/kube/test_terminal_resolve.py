"""``gpunode resolve`` in a terminal removes the scale-down annotations tier 1 put on the
node for the incident, as Slack's resolve does, against the stand-in."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from bot.cli import main
from bot.core.remedies.planning import plan_tier1
from bot.kube.gateway import Gateway
from bot.services.applying import undo_for
from bot.services.executing import run_steps
from bot.store import ActionRecord, Store
from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim.access import BOT_TOKEN
from tests.kube.conftest import NAMESPACE

Make = Callable[..., Awaitable[tuple[Gateway, KubeSim]]]
NODE = "gpu-node-01"
AT = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
CA = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
KARPENTER = "karpenter.sh/do-not-disrupt"


def _annotations(sim: KubeSim) -> dict[str, str]:
    node = sim.get("nodes", None, NODE) or {}
    return dict(node["metadata"].get("annotations") or {})


async def test_resolve_in_a_terminal_removes_what_tier_1_added_and_keeps_the_cordon(
    make_gateway: Make,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    gw, sim = await make_gateway()
    # the ops team protected the node from Karpenter by hand before the incident
    sim.api.store.put(
        "nodes",
        {
            **(node := sim.get("nodes", None, NODE) or {}),
            "metadata": {**node["metadata"], "annotations": {KARPENTER: "true"}},
        },
    )
    plan = plan_tier1(await gw.get_cluster_view(NODE))
    assert "annotate_node" in [s.verb for s in plan.steps]
    result = await run_steps(gw, plan.steps, dry_run=False)
    assert result.ok
    assert {k: v for k, v in _annotations(sim).items() if k in (CA, KARPENTER)} == {
        CA: "true",
        KARPENTER: "true",
    }
    undo = [s.model_dump(mode="json") for s in undo_for(plan, result)]

    db = tmp_path / "gpunode.db"
    async with await Store.open(str(db)) as store:
        incident, _ = await store.open_or_join_incident(
            NODE, "C0INCIDENT", opened_by="U0ALICE", at=AT, cluster="default", locale="en"
        )
        await store.create_action(
            ActionRecord(
                action_id="A1",
                incident_id=incident.id,
                tier=1,
                requester="U0ALICE",
                created_at=AT,
                updated_at=AT,
                cluster="default",
            )
        )
        assert await store.claim_action("A1", "replica-1", at=AT)
        assert await store.set_action_state("A1", "succeeded", at=AT, result={"undo": undo})
    config = tmp_path / "gpunode.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "store": {"path": str(db)},
                "kube": {
                    "mode": "server",
                    "server": sim.url,
                    "token": BOT_TOKEN,
                    "verify_tls": False,
                    "namespace": NAMESPACE,
                },
            }
        ),
        encoding="utf-8",
    )
    for name in ("GPUNODE_STORE__PATH", "GPUNODE_STORE__DSN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GPUNODE_CONFIG", str(config))

    assert await asyncio.to_thread(main, ["resolve", incident.id, "fixed"]) == 0
    assert incident.id in capsys.readouterr().out

    after = _annotations(sim)
    assert CA not in after and after.get(KARPENTER) == "true"  # only what tier 1 added
    assert (sim.get("nodes", None, NODE) or {})["spec"].get("unschedulable")  # cordon stays
    async with await Store.open(str(db)) as store:
        notes = [e for e in await store.timeline(incident.id) if e.kind == "note"]
        assert [n.data.get("scale_down_protection") for n in notes] == ["removed"]
