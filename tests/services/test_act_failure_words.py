"""An action that ended outside its steps (a crash after the claim, a restart mid-apply) says
why in its message in the thread's language: a Chinese thread reads no English, an English
one reads what it always read."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from bot.errors import ClusterUnreachableError
from tests.render.test_catalogs import english_words
from tests.services.world import CHANNEL, REQ, World

#: the person's own words, in the thread's language (they are shown as written)
REASON = {"zh-CN": "节点内存快耗尽了", "en": "node is falling over"}
EDITS: dict[str, Any] = {"memory_limit": "70Gi", "memory_request": "60Gi"}
#: what fails the re-read before acting, and what the English message says of it
CRASHES: dict[str, tuple[Callable[[], BaseException], str]] = {
    "keyed": (
        lambda: ClusterUnreachableError("prod-eu", waited_s=10),
        "could not carry out the action (cluster_unreachable): cluster prod-eu",
    ),
    "timeout": (
        TimeoutError,
        "could not carry out the action (timeout): the API server did not answer in time",
    ),
}


class Killed(BaseException):
    """The process dying mid-apply (not an ``Exception``: nothing records it)."""


def _texts(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _texts(v)
    elif isinstance(value, list):
        for v in value:
            yield from _texts(v)


async def _shown(world: World, action_id: str) -> str:
    msg = await world.action_message(action_id)
    return "\n".join([msg.text, *_texts(msg.blocks)])


async def _opened_in(world: World, locale: str) -> None:
    world.chat.locales[REQ] = locale  # the opener's language is the thread's
    await world.diagnosed()


@pytest.mark.parametrize("crash", sorted(CRASHES))
async def test_a_crash_before_acting_is_said_in_a_chinese_thread_without_english(
    world: World, crash: str
) -> None:
    await _opened_in(world, "zh-CN")
    world.kube.fail("read_controller", CRASHES[crash][0]())  # the re-read before acting
    action_id = await world.request(3, reason=REASON["zh-CN"], **EDITS)
    await world.act.apply(action_id=action_id, user=REQ, channel=CHANNEL)

    assert await world.state(action_id) == "failed"
    shown = await _shown(world, action_id)
    assert ("cluster_unreachable" if crash == "keyed" else "timeout") in shown
    assert english_words(shown) == [], shown


@pytest.mark.parametrize("crash", sorted(CRASHES))
async def test_a_crash_before_acting_reads_as_before_in_an_english_thread(
    world: World, crash: str
) -> None:
    await _opened_in(world, "en")
    make, english = CRASHES[crash]
    world.kube.fail("read_controller", make())
    action_id = await world.request(3, reason=REASON["en"], **EDITS)
    await world.act.apply(action_id=action_id, user=REQ, channel=CHANNEL)

    shown = await _shown(world, action_id)
    assert english in shown and "Nothing was changed" in shown


@pytest.mark.parametrize("locale", ["zh-CN", "en"])
async def test_an_action_a_restart_interrupted_is_said_in_the_threads_language(
    world: World, locale: str
) -> None:
    await _opened_in(world, locale)
    action_id = await world.request(3, reason=REASON[locale], **EDITS)
    world.kube.fail("patch_container_resources", Killed(), dry_run=False)
    with contextlib.suppress(Killed):
        await world.act.apply(action_id=action_id, user=REQ, channel=CHANNEL)

    restarted = world.service(world.store, replica="replica-b")
    assert await restarted.reconcile_interrupted() == 1

    shown = await _shown(world, action_id)
    assert "gpu-node-01" in shown and "Deployment/ml/preprocess" in shown
    if locale == "en":
        assert "Interrupted by a restart. Found: node gpu-node-01 schedulable" in shown
    else:
        assert english_words(shown) == [], shown
