"""The ``gpunode`` command line.

Each subcommand's implementation lives in its own module and is imported only when that
subcommand runs, so ``gpunode collect`` (run on every diagnosed node) never imports the
Kubernetes client, Slack or Jinja2 and starts fast. Handlers take the parsed namespace and
return an exit status.
"""

from __future__ import annotations

import os
import sys

from bot import __version__
from bot.collectors.options import COLLECT_DEFAULTS, COLLECT_OPTIONS
from bot.collectors.options import parse_fast as _collect_fast
from bot.errors import GpunodeError, UsageError

TYPE_CHECKING = False  # typing and argparse cost ~5 ms of `gpunode collect`'s start-up
if TYPE_CHECKING:  # and collections.abc (it imports collections), importlib, types: ~2 ms
    import argparse
    from collections.abc import Callable, Sequence

    Handler = Callable[[argparse.Namespace], int]


def _cluster_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("cluster access (default: in-cluster, else ~/.kube/config)")
    g.add_argument("--kubeconfig", help="kubeconfig file")
    g.add_argument("--context", help="kubeconfig context")
    g.add_argument("--server", help="API server URL, e.g. the stand-in's")
    g.add_argument("--token", help="bearer token for --server (or GPUNODE_KUBE__TOKEN)")
    g.add_argument("--config", help="gpunode settings YAML")


def _lang(value: str) -> str:
    import argparse

    from bot.core.model.locales import UnsupportedLocaleError, parse_locale

    try:
        return parse_locale(value)
    except UnsupportedLocaleError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


LANG_HELP = "language of the output (default en; timeline: the thread's; zh_CN, en-US accepted)"


def _lang_arg(p: argparse.ArgumentParser, says: str = LANG_HELP) -> None:
    """``--lang``: the language of what the subcommand prints (``says``, its help). Unset:
    ``en`` (``timeline``: the incident thread's own language), whatever ``LANG`` says --
    output is pasted into tickets and diffed by scripts, and a server's ``LANG`` is the
    host's, not the reader's."""
    p.add_argument(
        "--lang",
        type=_lang,
        default=None,
        metavar="en|zh-CN",
        help=says,
    )


COLLECT_HELP = "collect node memory evidence (runs inside the Job)"


def _collect_args(p: argparse.ArgumentParser) -> None:
    """``gpunode collect``'s options on an argparse parser (the full parser's subcommand, and
    the fallback of ``_collect_fast``)."""
    for flag, kind, choices, default, metavar, helptext in COLLECT_OPTIONS:
        p.add_argument(
            flag,
            type=kind,
            choices=list(choices) or None,
            default=default,
            metavar=metavar,
            help=helptext,
        )
    p.set_defaults(**COLLECT_DEFAULTS)


def _agent_args(p: argparse.ArgumentParser) -> None:
    """``gpunode agent``'s options (here, so ``gpunode collect`` never imports the agent)."""
    sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount"
    p.add_argument("--root", default="/", help="host root to read (default /)")
    p.add_argument("--listen", default="0.0.0.0", help="address to listen on")
    p.add_argument(
        "--port", type=int, default=8443, help="HTTPS port (default 8443; 0: any free port)"
    )
    p.add_argument("--tls-cert", required=True, help="the agent's certificate (PEM)")
    p.add_argument("--tls-key", required=True, help="its private key (PEM)")
    p.add_argument(
        "--allow",
        required=True,
        metavar="USER",
        help="the only identity answered: the bot's system:serviceaccount:NS:NAME",
    )
    p.add_argument("--audience", default="gpunode-agent", help="the tokens' audience")
    p.add_argument("--api-server", help="API server URL (default: in-cluster)")
    p.add_argument("--api-token-file", default=f"{sa_dir}/token", help="the agent's own token")
    p.add_argument("--api-ca-file", default=f"{sa_dir}/ca.crt", help="the API server's CA")
    p.add_argument("--node-name", help="node name to record (default $NODE_NAME)")
    p.add_argument("--top", type=int, default=20, help="top N processes by RSS (default 20)")
    p.add_argument("--kernel-log-window", type=int, default=86400, metavar="SECONDS")
    p.add_argument("--max-response-bytes", type=int, default=16 * 1024 * 1024)
    p.add_argument("--fake-nvml", metavar="FILE", help="read GPUs from a fake-NVML JSON spec")


def build_parser() -> argparse.ArgumentParser:
    import argparse

    parser = argparse.ArgumentParser(
        prog="gpunode",
        description="Diagnose and mitigate memory incidents on Kubernetes GPU nodes.",
    )
    parser.add_argument("--version", action="version", version=f"gpunode {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("collect", help=COLLECT_HELP)
    _collect_args(p)

    p = sub.add_parser(
        "agent", help="serve this node's evidence to the bot (DaemonSet collector mode)"
    )
    _agent_args(p)
    p.set_defaults(handler="bot.collectors.agent:main")

    p = sub.add_parser("diagnose", help="diagnose a node against a cluster and print the report")
    p.add_argument("node")
    p.add_argument("--format", choices=["text", "markdown", "json", "blocks"], default="text")
    p.add_argument("--chart", metavar="PNG", help="also write the memory chart to this PNG file")
    p.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="no progress on stderr while the diagnostic Job runs (none when not a terminal)",
    )
    _lang_arg(p)
    _cluster_args(p)
    p.set_defaults(handler="bot.cli.diagnose:diagnose_main")

    p = sub.add_parser(
        "prevent", help="the prevention kit for a node: print it, or write its files (--out)"
    )
    p.add_argument("node")
    p.add_argument(
        "--out", metavar="DIR", help="write each manifest and README.md into DIR (created)"
    )
    p.add_argument(
        "--force", action="store_true", help="with --out: overwrite an earlier kit's files"
    )
    _lang_arg(p)
    _cluster_args(p)
    p.set_defaults(handler="bot.cli.prevent:main")

    p = sub.add_parser("analyze", help="analyze a saved evidence bundle offline")
    p.add_argument("evidence", help="EvidenceBundle JSON file (from `gpunode collect`)")
    p.add_argument("--cluster", help="ClusterView JSON file")
    p.add_argument("--format", choices=["text", "markdown", "json", "blocks"], default="text")
    _lang_arg(p)
    p.set_defaults(handler="bot.cli.diagnose:analyze_main")

    for name, helptext in (
        ("status", "open incidents (optionally for one node)"),
        ("top", "GPU nodes ranked by memory pressure"),
        ("timeline", "an incident's postmortem draft (Markdown)"),
        ("resolve", "resolve an incident"),
        ("help", "the slash command's help (same grammar as /gpunode)"),
    ):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("words", nargs="*", help="same arguments as the slash command")
        _lang_arg(p)
        _cluster_args(p)
        p.set_defaults(handler="bot.cli.ops:main")

    p = sub.add_parser("audit", help="print the audit log")
    p.add_argument("--since", help="e.g. 30m, 4h, 7d")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.add_argument(
        "--verify",
        action="store_true",
        help="check the audit hash chain; exit 1 naming the first bad row",
    )
    p.add_argument(
        "--anchors",
        action="store_true",
        help="with --verify: also compare the log with the heads anchored as Events on the "
        "bot's Deployment (store.anchor_deployment, in kube.namespace)",
    )
    _lang_arg(p)
    _cluster_args(p)
    p.set_defaults(handler="bot.cli.audit:main")

    p = sub.add_parser(
        "doctor", help="check the bot's rights, admission policies, collector and store"
    )
    _lang_arg(p)
    _cluster_args(p)
    p.set_defaults(handler="bot.cli.doctor:main")

    p = sub.add_parser("migrate", help="bring the store's schema up to date, as its owner")
    p.add_argument("--dsn", help="the store owner's DSN (default: store.dsn or store.path)")
    p.add_argument(
        "--app-role",
        help="PostgreSQL: the bot's role, granted only what it needs (INSERT, SELECT on audit)",
    )
    p.add_argument("--config", help="gpunode settings YAML")
    _lang_arg(p)
    p.set_defaults(handler="bot.cli.migrate:main")

    p = sub.add_parser("serve", help="run the Slack bot (HTTP or Socket Mode)")
    p.add_argument("--config", help="gpunode settings YAML")
    _lang_arg(p, "language of a refusal to start (default en; the log stays English)")
    p.set_defaults(handler="bot.wiring.serve:main")

    p = sub.add_parser("demo", help="run gpunode with stand-ins for Slack and Kubernetes")
    p.add_argument("--scenario", default="seed")
    p.add_argument("--port", type=int, default=8700, help="console port (default 8700)")
    p.add_argument("--script", action="store_true", help="run the story headless, print it")
    p.add_argument(
        "--second",
        default="slab-leak",
        help="scenario of the second cluster, prod-us (the first, --scenario, is prod-eu)",
    )
    p.add_argument("--one-cluster", action="store_true", help="serve one cluster only")
    p.add_argument(
        "--metrics-out",
        metavar="FILE",
        help="with --script: write the bot's /metrics scrape after the story to FILE",
    )
    p.set_defaults(handler="gpunode_sandbox.demo:main")

    p = sub.add_parser("sandbox", help="run one stand-in on its own")
    ss = p.add_subparsers(dest="sandbox", metavar="WHICH", required=True)
    k = ss.add_parser("kube", help="the Kubernetes API stand-in")
    k.add_argument("--scenario", default="seed")
    k.add_argument("--port", type=int, default=0, help="0 = any free port")
    k.add_argument("--version", dest="kube_version", default="1.35")
    k.set_defaults(handler="gpunode_sandbox.kubesim.cli:main")
    return parser


SANDBOX_MISSING = (
    "`gpunode {command}` needs the sandbox (the stand-ins for Kubernetes, Slack and NVML), "
    "which the production image leaves out; run it from a source checkout (`make demo`) or "
    "`pip install` gpunode from source"
)


def _resolve(ref: str, command: str) -> Handler:
    module, _, func = ref.partition(":")
    try:
        __import__(module)  # importlib.import_module's work for an absolute name, without
        handler: Handler = getattr(sys.modules[module], func)  # importing importlib
    except ModuleNotFoundError as exc:
        if (exc.name or "").startswith("gpunode_sandbox"):
            raise UsageError(
                SANDBOX_MISSING.format(command=command),
                key="sandbox_missing",
                params={"command": command},
            ) from exc
        raise
    return handler


def _worded(err: GpunodeError, lang: str | None) -> str:
    """The error in ``--lang`` (its catalog words; English, its own text, without it)."""
    if not lang or lang == "en" or not err.key:
        return str(err)
    from bot.render.errors import error_text  # only on the way out: not on collect's path

    return error_text(err.key, err.params, str(err), lang)


def _columns() -> int:
    """The terminal's width as ``shutil.get_terminal_size().columns`` gives it (``COLUMNS``,
    else the terminal of stdout, else 80), without importing shutil (and its compression
    modules): 4-10 ms of ``gpunode collect``'s start-up."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def _collect_parser() -> argparse.ArgumentParser:
    """``gpunode collect``'s own argparse parser, at argparse's default width."""
    import argparse

    class _Formatter(argparse.HelpFormatter):
        """argparse's own formatter at the same width (one per ``add_argument``)."""

        def __init__(self, prog: str) -> None:
            super().__init__(prog, width=_columns() - 2)

    parser = argparse.ArgumentParser(prog="gpunode collect", formatter_class=_Formatter)
    _collect_args(parser)
    return parser


def _parse(words: list[str]) -> tuple[argparse.ArgumentParser | None, argparse.Namespace]:
    """The parser for this command line (None when none was built), and what it parsed.
    ``collect`` (the diagnostic Job, on every diagnosed node, where start-up is most of its
    run) is parsed by ``_collect_fast`` when it can, else by its own parser alone: building
    every subcommand's parser would cost more than reading a small node's process table. Its
    usage, help and errors read as the full parser's ``gpunode collect``."""
    if words[:1] == ["collect"]:
        fast = _collect_fast(words[1:])
        if fast is not None:
            return None, fast
        parser = _collect_parser()
        return parser, parser.parse_args(words[1:])
    parser = build_parser()
    return parser, parser.parse_args(words)


def main(argv: Sequence[str] | None = None) -> int:
    parser, args = _parse(list(sys.argv[1:] if argv is None else argv))
    if not getattr(args, "handler", None):
        if parser is None:  # never: the fast path always names collect's handler
            return 2
        parser.print_help()
        return 2
    try:
        return _resolve(args.handler, args.command)(args)
    except GpunodeError as err:
        print(f"gpunode: {_worded(err, getattr(args, 'lang', None))}", file=sys.stderr)
        if isinstance(err, UsageError) and err.usage:
            print(f"usage: {err.usage}", file=sys.stderr)  # as the slash command shows it
        return 2 if isinstance(err, UsageError) else 1  # argparse's own mistakes exit 2 too
    except KeyboardInterrupt:
        return 130
