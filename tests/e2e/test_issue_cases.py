"""Three incidents, staged in the stand-ins and judged end to end in Slack.

Each case runs the real bot between the Slack and Kubernetes stand-ins: ``/gpunode diagnose``
over signed HTTP, the diagnostic Job runs the real collector on the generated host tree, and
the incident thread is read back from the Slack stand-in. Expectations come from the issue
text: the verdict names the consumer, the consumer is never offered a higher priority, each
plan states its relief against the shortage, and a process outside Kubernetes gets a manual
step instead of an API action.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pytest

from bot.render.blocks import DETAILS_ACTION
from gpunode_sandbox.demo import running_demo
from gpunode_sandbox.kubesim.defaults import stable_uid
from tests.e2e.conftest import diagnose, press, text_of, thread

pytestmark = pytest.mark.slow

RELIEF = re.compile(r"[Ff]rees (?:about [\d.]+ [KMGT]iB|no memory)")


@dataclass(frozen=True)
class Case:
    scenario: str
    node: str
    names: list[str] = field(default_factory=list)  # all must be in the verdict line
    consumer_pod: str | None = None  # must never get a higher priority
    short: bool = True  # the node is short: plans state relief against it
    runbook: list[str] = field(default_factory=list)  # the manual step's words
    fix: int | None = None  # the tier that relieves the shortage (not "not the fix")


CASES = [
    Case(
        "issue-gpu-trainer-host-ram",
        "gpu-node-07",
        names=["ml-train/llm-pretrain-0"],
        consumer_pod="ml-train/llm-pretrain-0",
        fix=3,
    ),
    Case(
        "issue-host-daemon",
        "gpu-node-08",
        names=["nvidia-dcgm.service"],
        runbook=["systemctl", "nvidia-dcgm.service"],
    ),
    Case(
        "issue-gpu-orphan",
        "gpu-node-09",
        # the stand-in's GPU uuids are stable_uid("gpu", node, index): GPU 4 is the one held
        names=["1102", "GPU-" + stable_uid("gpu", "gpu-node-09", "4")],
        short=False,
        runbook=["kill", "1102"],
    ),
]


def _sections(messages: list[dict[str, object]]) -> list[str]:
    """The text of every section block in the thread (tier sections among them)."""
    out = []
    for msg in messages:
        for block in msg.get("blocks") or []:  # type: ignore[attr-defined]
            text = (block.get("text") or {}).get("text")
            if block.get("type") == "section" and text:
                out.append(str(text))
    return out


def _buttons(messages: list[dict[str, object]]) -> set[str]:
    return {
        str(el.get("action_id"))
        for msg in messages
        for block in msg.get("blocks") or []  # type: ignore[attr-defined]
        if block.get("type") == "actions"
        for el in block.get("elements", [])
    }


#: case -> why the bot gets it wrong today (strict: fails once fixed, then remove the entry)
DISAGREES: dict[str, str] = {}


def _params() -> list[object]:
    return [
        pytest.param(
            c,
            id=c.scenario,
            marks=[pytest.mark.xfail(reason=DISAGREES[c.scenario], strict=True)]
            if c.scenario in DISAGREES
            else [],
        )
        for c in CASES
    ]


@pytest.mark.parametrize("case", _params())
async def test_an_issue_case_is_judged_right_end_to_end_in_the_thread(case: Case) -> None:
    async with running_demo(case.scenario) as demo:
        root_ts = await diagnose(demo, case.node)
        messages = thread(demo, root_ts)
        # the tiers' steps and every talking point are behind the brief message's Details
        await press(demo, root_ts, "U0ALICE", DETAILS_ACTION)
        details = demo.slack.open_views("U0ALICE")[-1]
        errors = list(demo.runtime.services.bg.errors)
    verdict = text_of(messages[0])
    sections = _sections([*messages, details])
    tiers = [s for s in sections if s.startswith("*Tier ")]
    everything = "\n".join(text_of(m) for m in [*messages, details])

    assert errors == []
    missing = [name for name in case.names if name not in verdict]
    assert missing == [], verdict
    if case.consumer_pod is not None:
        name = case.consumer_pod.split("/", 1)[1]
        tier2 = [t for t in tiers if t.startswith("*Tier 2")]
        assert all(name not in t or "Not available" in t for t in tier2), tier2
        offers = [s for s in sections if "PriorityClass" in s and name in s]
        assert offers == [], offers  # no talking point proposes protecting the consumer
    if case.short:
        offered = [t for t in tiers if "→" in t and "Not available" not in t]
        assert offered, tiers
        assert all(RELIEF.search(t) and "short of about" in t for t in offered), offered
    if case.fix is not None:
        fix = [t for t in tiers if t.startswith(f"*Tier {case.fix}")]
        assert fix and all("→" in t and "not the fix" not in t for t in fix), fix
    if case.runbook:
        assert all(word in everything for word in case.runbook), tiers
        assert "gpunode_tier3" not in _buttons(messages)  # no API action for it
