"""The ``gpunode`` command line (argparse): one module per group of subcommands.

- ``bot.cli.main``: the parser and ``main`` (the ``gpunode`` console script and
  ``python -m bot``); each subcommand's module is imported only when it runs;
- ``bot.cli.diagnose``: ``gpunode diagnose`` (live) and ``gpunode analyze`` (offline);
- ``bot.cli.ops``: ``status | top | timeline | resolve | help``, the slash command's grammar;
- ``bot.cli.prevent``: ``gpunode prevent NODE [--out DIR]`` (the prevention kit);
- ``bot.cli.audit``: ``gpunode audit`` (print or verify the audit log);
- ``bot.cli.common``: cluster settings from the command line, shared by the above.

``gpunode collect`` lives with the collectors (``bot.collectors.cli``) and the stand-ins'
commands with the sandbox: neither imports the Kubernetes client, Slack or Jinja2.
"""

from bot.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
