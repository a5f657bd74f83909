"""The three-step file upload that ``files_upload_v2`` performs.

1. ``files.getUploadURLExternal(filename, length)`` -> an absolute sandbox ``upload_url``
   and an ``F...`` id; 2. raw bytes POSTed to that URL (see :func:`receive_upload`);
3. ``files.completeUploadExternal(files=<JSON string>, channel_id, thread_ts, ...)`` shares
the files into a channel or thread as a bot message carrying ``files``.
"""

from __future__ import annotations

import json
import mimetypes
from typing import Any

from gpunode_sandbox.slacksim.apierrors import ApiError
from gpunode_sandbox.slacksim.methods_chat import Handler, bot_message, channel_id
from gpunode_sandbox.slacksim.state import BOT_USER_ID, SharedFile, Workspace

JSON = dict[str, Any]
MAX_FILE_BYTES = 1_000_000_000  # Slack's documented upload cap is 1 GB
MAX_ALT_TXT = 1000  # files.getUploadURLExternal: alt_txt_too_large beyond 1000 characters
#: Slack's ``filetype`` for the extensions gpunode uploads (else "text")
FILETYPES = {".png": "png", ".html": "html", ".md": "markdown", ".json": "json"}


def mimetype_of(filename: str) -> str:
    """The mimetype Slack reports (and the stand-in serves) for a file name."""
    if filename.endswith(".md"):
        return "text/markdown"
    return mimetypes.guess_type(filename)[0] or "text/plain"


def file_object(ws: Workspace, f: SharedFile) -> JSON:
    url = f"{ws.base_url}/files/{f.id}/{f.filename}"
    ext = f.filename[f.filename.rfind(".") :] if "." in f.filename else ""
    return {
        "id": f.id,
        "name": f.filename,
        "title": f.title or f.filename,
        "size": f.length,
        "mimetype": mimetype_of(f.filename),
        "filetype": FILETYPES.get(ext, "text"),
        "alt_txt": f.alt_txt,
        "user": f.user,
        "url_private": url,
        "url_private_download": url,
        "permalink": url,
        "channels": list(f.channels),
    }


def get_upload_url(ws: Workspace, args: JSON) -> JSON:
    if not args.get("filename") or args.get("length") in (None, ""):
        raise ApiError("missing_argument")
    try:
        length = int(args["length"])
    except ValueError as exc:
        raise ApiError("invalid_arguments") from exc
    if length <= 0:  # Slack: missing_argument "typically only occurs when length is 0"
        raise ApiError("missing_argument")
    if length > MAX_FILE_BYTES:
        raise ApiError("file_upload_size_restricted")
    alt = str(args.get("alt_txt") or "")
    if len(alt) > MAX_ALT_TXT:
        raise ApiError("alt_txt_too_large")
    fid = ws.new_id("F")
    ws.files[fid] = SharedFile(fid, str(args["filename"]), length, BOT_USER_ID, alt_txt=alt)
    return {"upload_url": f"{ws.base_url}/upload/v1/{fid}", "file_id": fid}


def receive_upload(ws: Workspace, fid: str, content: bytes) -> bool:
    """Store the uploaded bytes; False when the id was never handed out."""
    f = ws.files.get(fid)
    if f is None:
        return False
    f.content = content
    return True


def complete_upload(ws: Workspace, args: JSON) -> JSON:
    raw = args.get("files")
    try:
        entries = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError as exc:
        raise ApiError("invalid_arguments") from exc
    if not isinstance(entries, list) or not entries:
        raise ApiError("invalid_arguments")
    chosen: list[SharedFile] = []
    for entry in entries:
        f = ws.files.get(str(entry.get("id")))
        if f is None or f.content is None:
            raise ApiError("file_not_found")
        f.title = str(entry.get("title") or f.filename)
        chosen.append(f)
    target = args.get("channel_id") or args.get("channels") or args.get("channel")
    if target:
        channel = channel_id(ws, {"channel": str(target).split(",")[0]})
        thread_ts = args.get("thread_ts") or None
        if thread_ts and thread_ts not in ws.messages[channel]:
            raise ApiError("invalid_thread_ts")
        for f in chosen:
            f.channels.append(channel)
            f.thread_ts = thread_ts
        msg = bot_message(str(args.get("initial_comment") or ""), None)
        msg["files"] = [file_object(ws, f) for f in chosen]
        msg["upload"] = True
        ws.store(channel, msg, thread_ts=thread_ts)
    ws.changed()
    return {"files": [{"id": f.id, "title": f.title} for f in chosen]}


HANDLERS: dict[str, Handler] = {
    "files.getUploadURLExternal": get_upload_url,
    "files.completeUploadExternal": complete_upload,
}
