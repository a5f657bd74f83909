"""The **Details** button on Slack: the modal for the clicker (``views.open`` right after
the ack, within the trigger's 3 s) and, on the first click per snapshot, the full Markdown
report and the evidence JSON attached to the incident thread (Slack's upload flow:
``files.getUploadURLExternal`` then ``files.completeUploadExternal``). What may be shown is
decided by ``bot.services.details``; this module only words and shows it."""

from __future__ import annotations

import logging

from bot.core.reporting.outcomes import notice
from bot.errors import EXPIRED_TRIGGER, GpunodeError
from bot.render import environment
from bot.render.blocks import details_view
from bot.render.markdown import render_report_markdown
from bot.services.chatops import BotServices
from bot.services.details import evidence_document, load_details

log = logging.getLogger(__name__)


async def open_details(
    s: BotServices, incident_id: str, *, user: str, channel: str, trigger_id: str
) -> None:
    """Open the details of ``incident_id`` for ``user``; a failure is told to them."""
    try:
        found = await load_details(s, incident_id, user=user, channel=channel)
        if found is None:
            return  # refused: told and audited
        incident = found.incident.id
        view = details_view(
            found.diagnosis, found.bundle, incident=incident, locale=found.person_locale
        )
        await s.chat.open_view(trigger_id, view)
        if not found.attach:
            return
        locale = found.thread_locale
        t = environment.macros("slack", "evidence.j2", locale=locale)
        report = render_report_markdown(
            found.diagnosis, found.bundle, incident=incident, locale=locale
        )
        await s.chat.upload_files(
            found.incident.channel,
            found.incident.thread_ts,
            files=[
                (f"{incident}-report.md", str(t.report_title(incident)).strip(), report),
                (
                    f"{incident}-evidence.json",
                    str(t.evidence_title(incident)).strip(),
                    evidence_document(found),
                ),
            ],
            comment=str(t.details_files_comment(incident)).strip(),
        )
    except GpunodeError as err:
        told = (
            notice("form_expired")  # Slack's 3 s after the click ran out: press again
            if err.code == EXPIRED_TRIGGER
            else notice("command_failed", message=err.message, code=err.code)
        )
        try:
            await s.thread.tell(channel, user, told)
        except GpunodeError:
            log.warning("could not tell %s the details failed: %s", user, err.code)
