"""``gpunode prevent [CLUSTER/]NODE [--out DIR] [--force]``: the prevention kit in a terminal.

The node name goes through ``bot.core.governance.commands.parse`` as the slash command's does, and
the command through the command table (``bot.services.commands.handle``). The kit is computed
from the node as the cluster shows it now (``bot.services.prevention``); the terminal's
presenter (``bot.cli.presenter``) prints or writes it.
Without ``--out`` the whole kit is printed as one Markdown document (the README with every
value explained, then each manifest). With ``--out DIR`` each file is written into DIR
(created with its parents); files of an earlier kit are never overwritten silently: if any
of the kit's file names already exists there, nothing is written and the command says which,
unless ``--force`` is given. Other files in DIR are left alone.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from bot.cli.presenter import Wanted, present
from bot.cli.presenter import write_kit as write_kit  # the kit's files, written safely


def main(args: argparse.Namespace) -> int:
    """``gpunode prevent [CLUSTER/]NODE``: the slash command's grammar and its command table
    (``bot.cli.ops.answer``); the terminal's presenter prints the kit or writes its files."""
    from bot.cli.common import node_command
    from bot.cli.ops import answer
    from bot.config import load_settings

    cmd, clusters = node_command(args, "prevent")
    settings = load_settings(config_file=getattr(args, "config", None))
    locale = getattr(args, "lang", None) or "en"  # --lang; default en (see bot/cli/main.py)
    outcome = asyncio.run(answer(cmd, args, settings, store_cmd=False, clusters=clusters))
    printed = present(outcome, locale=locale, wanted=Wanted(out=args.out, force=args.force))
    sys.stdout.write(printed.out)
    sys.stderr.write(printed.err + "\n" if printed.err else "")
    return printed.status
