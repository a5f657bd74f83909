"""``gpunode serve``: the bot against a real Slack workspace and a real cluster.

Fails fast, before opening any port, on a missing or malformed setting, naming the variable
to set. Secrets are never printed: only which ones are present. What serving needs
(``bot.wiring.running``: the SDKs, the runtime) is imported once the settings, the policy and
the thresholds are known good, so a refused start does not pay for it.
"""

from __future__ import annotations

import argparse
import asyncio
import logging

from bot.config import Settings, alerts_enabled, load_settings
from bot.config.policy import read_policy
from bot.config.thresholds import read_thresholds
from bot.core.governance.policy import Policy, parse_policy
from bot.errors import ConfigError
from bot.logs import configure_logging
from bot.wiring.heap import tune_malloc

log = logging.getLogger("gpunode")


#: each setting ``serve`` may miss, and how its English error names it
MISSING_SETTINGS = {
    "bot_token": "GPUNODE_SLACK__BOT_TOKEN (xoxb-...)",
    "app_token": "GPUNODE_SLACK__APP_TOKEN (xapp-..., Socket Mode)",
    "signing_secret": "GPUNODE_SLACK__SIGNING_SECRET (HTTP mode)",
    "incident_channel": (
        "GPUNODE_SLACK__INCIDENT_CHANNEL (channel ID for alert incidents; the alert "
        "intake is enabled)"
    ),
}


def check_settings(settings: Settings) -> None:
    """Raise ConfigError listing every missing setting for the chosen mode (keyed
    ``settings_missing`` with their codes, ``MISSING_SETTINGS``), or naming a token of the
    wrong kind (``bot_token_kind``, ``app_token_kind``): ``serve --lang`` words them."""
    missing = []
    s = settings.slack
    if s.bot_token is None:
        missing.append("bot_token")
    if s.socket_mode and s.app_token is None:
        missing.append("app_token")
    if not s.socket_mode and s.signing_secret is None:
        missing.append("signing_secret")
    if alerts_enabled(settings) and not s.incident_channel.strip():
        missing.append("incident_channel")
    if missing:
        raise ConfigError(
            "missing settings: " + ", ".join(MISSING_SETTINGS[m] for m in missing),
            key="settings_missing",
            params={"missing": missing},
        )
    token = s.bot_token.get_secret_value() if s.bot_token else ""
    if not token.startswith("xoxb-"):
        raise ConfigError(
            "GPUNODE_SLACK__BOT_TOKEN must be a bot token starting with xoxb-",
            key="bot_token_kind",
        )
    if s.socket_mode and s.app_token and not s.app_token.get_secret_value().startswith("xapp-"):
        raise ConfigError(
            "GPUNODE_SLACK__APP_TOKEN must be an app-level token starting with xapp-",
            key="app_token_kind",
        )


def load_policy(settings: Settings) -> Policy:
    """The policy file's policy; without one, a policy with no roles (every action denied).
    Its tier 1 asks no approval: the default quorum of 1 needs a role that approves, and a
    policy with no roles has none (it would be refused as invalid)."""
    if settings.actions.policy_file:
        return read_policy(settings.actions.policy_file)
    log.warning("no policy file (GPUNODE_ACTIONS__POLICY_FILE): every action is denied")
    return parse_policy({"approvals": {1: {"quorum": 0}}})


def main(args: argparse.Namespace) -> int:
    tune_malloc()  # before any thread allocates (bot/wiring/heap.py)
    settings = load_settings(config_file=getattr(args, "config", None))
    configure_logging(settings.log_level)
    check_settings(settings)
    present = [
        k
        for k in ("bot_token", "signing_secret", "app_token")
        if getattr(settings.slack, k) is not None
    ]
    log.info("starting gpunode serve; Slack secrets present: %s", ", ".join(present))
    try:
        asyncio.run(_serve(settings))
    except KeyboardInterrupt:
        return 130
    return 0


async def _serve(settings: Settings) -> None:
    policy = load_policy(settings)
    thresholds = read_thresholds(settings)
    from bot.wiring.running import run  # only now: see the module's docstring

    await run(settings, policy=policy, thresholds=thresholds)
