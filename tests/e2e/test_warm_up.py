"""A bot warmed up as ``gpunode serve`` does before traffic (``bot.wiring.warming``) compiles
no template during its first diagnosis (Jinja's first-use compilation held the interpreter
lock 50 ms a template while acks waited, issue #25), and its worker runs already."""

from __future__ import annotations

import os

import jinja2

from bot.render import environment
from bot.wiring.warming import warm_up
from gpunode_sandbox.demo import Demo, running_demo
from tests.e2e.conftest import diagnose, press
from tests.entering import entered

ALICE = "U0ALICE"


async def test_a_warmed_up_bot_compiles_no_template_in_its_first_diagnosis(demo: Demo) -> None:
    environment._environment.cache_clear()  # as a fresh process has them: none compiled
    await warm_up(demo.runtime)
    assert demo.runtime.services.diagnose.analyst.pid not in (None, os.getpid())

    with entered(jinja2.Environment.compile) as compiled:
        await diagnose(demo)

    assert compiled == []


async def test_without_the_warm_up_the_first_diagnosis_compiles_templates(demo: Demo) -> None:
    # the check above can fail: a fresh environment compiles on first use
    environment._environment.cache_clear()

    with entered(jinja2.Environment.compile) as compiled:
        await diagnose(demo)

    assert compiled


async def test_the_demo_bot_compiles_its_templates_before_traffic_as_serve_does() -> None:
    # a diagnosis's templates compiled on first use while a click on its thread waited for
    # views.open: 0.3 s idle, and past Slack's 3 s trigger_id lifetime under load (an e2e
    # tier-3 test failed so)
    environment._environment.cache_clear()  # as a fresh process has them: none compiled
    async with running_demo("seed") as demo:
        with entered(jinja2.Environment.compile) as compiled:
            root_ts = await diagnose(demo)
            await press(demo, root_ts, ALICE, "gpunode_tier3")

        assert demo.slack.open_views(ALICE)
    assert compiled == []
