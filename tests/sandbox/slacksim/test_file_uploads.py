"""The stand-in's upload flow is as strict as Slack's (files.getUploadURLExternal, the POST to
the upload URL, files.completeUploadExternal), and serves an uploaded PNG back as a PNG."""

from __future__ import annotations

import aiohttp
import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from gpunode_sandbox.slacksim import SlackSim

CH = "C0INCIDENT"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({"filename": "chart.png"}, "missing_argument"),  # no length
        ({"filename": "chart.png", "length": 0}, "missing_argument"),  # Slack: length 0
        ({"length": 72}, "missing_argument"),  # no filename
        ({"filename": "chart.png", "length": "many"}, "invalid_arguments"),
        ({"filename": "chart.png", "length": 72, "alt_txt": "x" * 1001}, "alt_txt_too_large"),
    ],
)
async def test_get_upload_url_rejects_what_slack_rejects(
    client: AsyncWebClient, args: dict[str, object], error: str
) -> None:
    with pytest.raises(SlackApiError) as err:
        await client.api_call("files.getUploadURLExternal", params=args)
    assert err.value.response["error"] == error


async def test_completing_an_unknown_or_never_uploaded_file_is_file_not_found(
    client: AsyncWebClient,
) -> None:
    parent = (await client.chat_postMessage(channel=CH, text="incident"))["ts"]
    with pytest.raises(SlackApiError) as err:
        await client.files_completeUploadExternal(
            files=[{"id": "F0NOPE", "title": "x"}], channel_id=CH, thread_ts=parent
        )
    assert err.value.response["error"] == "file_not_found"
    got = await client.files_getUploadURLExternal(filename="chart.png", length=len(PNG))
    with pytest.raises(SlackApiError) as err:  # the bytes were never POSTed
        await client.files_completeUploadExternal(
            files=[{"id": got["file_id"]}], channel_id=CH, thread_ts=parent
        )
    assert err.value.response["error"] == "file_not_found"


async def test_posting_bytes_to_an_upload_url_never_handed_out_is_404(sim: SlackSim) -> None:
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{sim.base_url}/upload/v1/F0NOPE", data=PNG) as resp,
    ):
        assert resp.status == 404


async def test_a_png_shared_into_a_thread_is_an_image_served_back_byte_for_byte(
    client: AsyncWebClient, sim: SlackSim
) -> None:
    parent = (await client.chat_postMessage(channel=CH, text="incident"))["ts"]
    resp = await client.files_upload_v2(
        channel=CH,
        thread_ts=parent,
        file=PNG,
        filename="chart.png",
        title="Memory",
        alt_txt="host memory over time",
    )
    f = resp["file"]
    [msg] = [m for m in sim.messages(CH, thread_ts=parent) if m.get("files")]
    shown = msg["files"][0]
    assert (shown["mimetype"], shown["filetype"], shown["alt_txt"]) == (
        "image/png",
        "png",
        "host memory over time",
    )
    async with aiohttp.ClientSession() as http, http.get(shown["url_private"]) as got:
        assert got.headers["Content-Type"] == "image/png"
        assert await got.read() == PNG
    assert f["id"] == shown["id"]
