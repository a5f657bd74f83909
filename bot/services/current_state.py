"""The incident's pinned "current state" (issue #23 §1): the first diagnosis' messages are
posted in the thread and the first of them (the evidence) is pinned in the channel; every
later diagnosis of the incident (the re-diagnosis after an action, a second ``diagnose``,
the Re-diagnose button) writes over those same messages, and the thread gets only one line
of what changed ("since 14:02: `ml/trainer` +2.1 GiB, 1 new OOM kill"). The thread never
carries the evidence twice.

Which messages hold the state is kept with the incident's record (the store's
``state_messages``, one keyed read, never the whole timeline), so any replica finds them; the
``evidence`` timeline entry of each diagnosis also names them under ``state_ts``. A state
message that cannot be edited any more (deleted by someone) makes the next diagnosis post a
fresh state, pinned again, and the incident keeps the new one.
"""

from __future__ import annotations

import logging

from bot.core.model.incidents import Incident
from bot.core.reporting.outcomes import Diagnosed
from bot.core.reporting.state_change import state_change
from bot.errors import GpunodeError
from bot.services.ports import ChatPort, StorePort, ThreadPort

log = logging.getLogger(__name__)

#: the key of the ``evidence`` timeline entry's data that holds the state messages' ts
STATE_KEY = "state_ts"


async def show_state(
    thread: ThreadPort,
    chat: ChatPort,
    store: StorePort,
    incident: Incident,
    diagnosed: Diagnosed,
    *,
    thread_ts: str | None,
    quiet: bool = False,
) -> list[str]:
    """Show ``diagnosed`` (already stored as the incident's latest snapshot) as the current
    state, kept with the incident; the ts of its messages. ``quiet`` (the re-diagnosis after an
    action, whose result says what changed): the state is edited in place with no line of
    change, and nothing is posted when there is no state to edit."""
    previous = await store.state_messages(incident.id)
    if quiet and not previous:
        return []
    if previous:
        snaps = await store.snapshots(incident.id)
        earlier = snaps[-2].diagnosis if len(snaps) >= 2 else None
        change = (
            state_change(earlier, diagnosed.diagnosis)
            if earlier is not None and not quiet
            else None
        )
        try:
            edited = await thread.show_state(
                incident.channel,
                diagnosed,
                incident=incident,
                thread_ts=thread_ts,
                replace=previous,
                change=change,
            )
        except GpunodeError as err:  # a state message was deleted: start a fresh one
            log.warning("the current state of %s could not be edited: %s", incident.id, err.code)
        else:
            if edited != previous:
                await store.set_state_messages(incident.id, edited)
            return edited
    posted = await thread.show_state(
        incident.channel, diagnosed, incident=incident, thread_ts=thread_ts
    )
    if posted:
        await store.set_state_messages(incident.id, posted)
        try:
            await chat.pin(incident.channel, posted[0])
        except GpunodeError as err:  # a missing pins:write scope costs the pin, not the state
            log.warning("the current state of %s was not pinned: %s", incident.id, err.code)
    return posted
