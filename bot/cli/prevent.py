"""``gpunode prevent [CLUSTER/]NODE [--out DIR] [--force]``: the prevention kit in a terminal.

The node name goes through ``bot.core.governance.commands.parse`` as the slash command's does. The
kit is computed from the node as the cluster shows it now (``bot.services.prevention``).
Without ``--out`` the whole kit is printed as one Markdown document (the README with every
value explained, then each manifest). With ``--out DIR`` each file is written into DIR
(created with its parents); files of an earlier kit are never overwritten silently: if any
of the kit's file names already exists there, nothing is written and the command says which,
unless ``--force`` is given. Other files in DIR are left alone.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

from bot.cli.common import node_target
from bot.core.governance import commands
from bot.errors import UsageError
from bot.render.prevention import render_kit_markdown, render_prevention_files
from bot.services.prevention import Kit, kit_from_cluster


def _write_new(path: Path, text: str, *, replace: bool) -> None:
    """Write ``path`` itself, never through a symlink (O_NOFOLLOW); without ``replace`` only
    a file that does not exist yet (O_EXCL, so one planted meanwhile is not written either)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_TRUNC if replace else os.O_EXCL)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UsageError(
                f"{path} is a symbolic link; gpunode writes no file through one. Remove it, "
                "or choose another --out directory."
            ) from exc
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}.") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}.") from exc


def write_kit(files: dict[str, str], out: Path, *, force: bool = False) -> list[Path]:
    """Write every file of the kit into ``out``; the paths written, in kit order."""
    targets = [out / name for name in files]
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(
            f"cannot create {out}: {exc.strerror or exc}. Pass a writable --out directory."
        ) from exc
    # lexists: a symlink counts, dangling or not (it is never followed, below)
    existing = [p.name for p in targets if os.path.lexists(p)]
    if existing and not force:
        raise UsageError(
            f"{out} already holds {', '.join(existing)} (an earlier kit?); nothing was written. "
            "Pass --force to overwrite them, or choose another --out directory."
        )
    for path in targets:
        _write_new(path, files[path.name], replace=force)
    return targets


async def _kit(args: argparse.Namespace, ref: str) -> Kit:
    gateway, at = node_target(args, ref, verb="prevent")
    try:
        return await kit_from_cluster(gateway, at.node, at=datetime.now(UTC))
    finally:
        gateway.close()


def main(args: argparse.Namespace) -> int:
    cmd = commands.parse(f"prevent {args.node}", prog="gpunode")  # the slash grammar
    assert isinstance(cmd, commands.Prevent)
    locale = getattr(args, "lang", None) or "en"  # --lang; default en (see bot/cli/main.py)
    kit = asyncio.run(_kit(args, args.node))
    files = render_prevention_files(kit.params, locale=locale, source=kit.source)
    if args.out is None:
        sys.stdout.write(render_kit_markdown(files, locale=locale).rstrip("\n") + "\n")
        return 0
    written = write_kit(files, Path(args.out), force=args.force)
    lines = [f"wrote {p}" for p in written]
    lines.append(f"review {Path(args.out) / 'README.md'} before applying anything")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0
