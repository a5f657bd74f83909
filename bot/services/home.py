"""The Home tab's use case: what one person sees when they open gpunode's Home (issue #23
§1). Open incidents with their latest verdict, the approvals that person may decide (their
role in the incident's cluster, never their own request, never one they already approved),
and the newest diagnoses, open or resolved. Each list is bounded (``bot.core.reporting.home``); the
presenter words it in the person's language (``bot.render.home`` via ``bot.slack.home``).
The same Home is pushed to the people who may decide an approval when it is requested or
closed (``bot.services.publishing.push_homes``).
"""

from __future__ import annotations

from bot.core.reporting.home import HomeSummary
from bot.services.chatops import BotServices
from bot.services.publishing import HomeSources, gather


async def home_summary(s: BotServices, user: str) -> HomeSummary:
    """``user``'s Home as it is now (``bot.services.publishing.gather``)."""
    src = HomeSources(
        store=s.store,
        clock=s.clock,
        multi=s.clusters.multi,
        act=s.act.deps if s.act is not None else None,
    )
    return await gather(src, user)
