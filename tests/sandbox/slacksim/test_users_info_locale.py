"""``users.info`` in the Slack stand-in answers as Slack does: ``locale`` only with
``include_locale``, ``user_not_found`` for a stranger, ``missing_scope`` without users:read."""

from __future__ import annotations

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from gpunode_sandbox.slacksim import SlackSim


@pytest.mark.parametrize(("user", "locale"), [("U0LIWEI", "zh-CN"), ("U0ALICE", "en-US")])
async def test_the_locale_is_in_the_user_object_when_asked_for(
    client: AsyncWebClient, user: str, locale: str
) -> None:
    resp = await client.users_info(user=user, include_locale=True)
    assert resp["ok"] is True
    assert resp["user"]["id"] == user
    assert resp["user"]["locale"] == locale


async def test_without_include_locale_there_is_no_locale(client: AsyncWebClient) -> None:
    resp = await client.users_info(user="U0LIWEI")
    assert "locale" not in resp["user"]
    assert resp["user"]["profile"]["display_name"] == "li.wei"


async def test_an_unknown_user_is_user_not_found(client: AsyncWebClient) -> None:
    with pytest.raises(SlackApiError) as err:
        await client.users_info(user="U0NOBODY", include_locale=True)
    assert err.value.response["error"] == "user_not_found"


async def test_without_users_read_the_call_is_missing_scope_naming_it(
    sim: SlackSim, client: AsyncWebClient
) -> None:
    sim.api.revoke_scope("users:read")
    with pytest.raises(SlackApiError) as err:
        await client.users_info(user="U0LIWEI", include_locale=True)
    body = err.value.response.data
    assert (body["ok"], body["error"], body["needed"]) == (False, "missing_scope", "users:read")
    assert "users:read" not in body["provided"].split(",")
    assert "chat:write" in body["provided"].split(",")
    scopes = (await client.auth_test()).headers["x-oauth-scopes"]
    assert "users:read" not in scopes.split(",")
