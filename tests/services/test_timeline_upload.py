"""The postmortem draft a thread asks for names its cluster as the gateway names the one
cluster it serves (its kubeconfig context, else its server URL), else as the incident does."""

from __future__ import annotations

from typing import Any

import pytest

from bot.core.model.incidents import Incident
from bot.core.reporting.postmortem import Postmortem
from bot.services.timelines import upload_timeline
from tests.services.world import NODE, REQ, World, bot_services


class Drafts:
    """Where the drafts go (the presenter would draw and upload them): kept."""

    def __init__(self) -> None:
        self.drafts: list[Postmortem] = []

    async def postmortem(self, incident: Incident, draft: Postmortem, charts: Any) -> list[str]:
        self.drafts.append(draft)
        return ["postmortem.md"]


@pytest.mark.parametrize(("named", "shown"), [("kind-gpu-lab", "kind-gpu-lab"), ("", "default")])
async def test_the_draft_names_the_cluster_as_its_gateway_does(
    world: World, named: str, shown: str
) -> None:
    await world.diagnosed()
    [incident] = await world.store.open_incidents(node=NODE)
    drafts = Drafts()
    world.diagnose.charts = drafts  # type: ignore[assignment]  # only the postmortem is asked
    world.kube.cluster_name = named

    await upload_timeline(bot_services(world), incident, user=REQ)

    [draft] = drafts.drafts
    assert draft.cluster == shown
