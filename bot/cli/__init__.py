"""The ``gpunode`` command line (argparse): one module per group of subcommands.

- ``bot.cli.main``: the parser and ``main`` (the ``gpunode`` console script and
  ``python -m bot``); each subcommand's module is imported only when it runs;
- ``bot.cli.diagnose``: ``gpunode diagnose`` (live) and ``gpunode analyze`` (offline);
- ``bot.cli.prevent``: ``gpunode prevent NODE [--out DIR]`` (the prevention kit);
- ``bot.cli.ops``: the slash command's grammar and command table in a terminal: every verb
  (``diagnose`` and ``prevent`` too, from their subcommands) goes through ``handle`` with the
  terminal's surface;
- ``bot.cli.presenter``: the terminal's presenter of the outcomes (a diagnosis in
  ``--format``, a kit printed or written, incidents, top, help, refusals);
- ``bot.cli.audit``: ``gpunode audit`` (print or verify the audit log);
- ``bot.cli.common``: cluster settings from the command line, shared by the above.

``gpunode collect`` lives with the collectors (``bot.collectors.cli``) and the stand-ins'
commands with the sandbox: neither imports the Kubernetes client, Slack or Jinja2.
"""

from bot.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
