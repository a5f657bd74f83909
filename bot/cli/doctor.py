"""``gpunode doctor [--lang en|zh-CN]``: check the bot's rights, admission policies, collector
Job and store (``bot.services.doctor``, ``bot.store.checkup``), print a table in ``--lang``
(``bot.render.checkup``; default English), exit 1 when a check fails."""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import UTC, datetime
from typing import TextIO

from bot.cli.common import cluster_settings
from bot.config import load_settings
from bot.render import checkup
from bot.services import doctor
from bot.store.checkup import check_store


async def _run(args: argparse.Namespace) -> list[doctor.Row]:
    settings = load_settings(config_file=getattr(args, "config", None))
    from bot.kube.gateway import Gateway  # lazily: other verbs never load the client

    cluster = cluster_settings(args)  # the cluster the command names (namespace, mode)
    namespace = cluster.namespace
    gateway = Gateway.from_settings(cluster)
    try:
        rows = await doctor.check_cluster(
            gateway,
            namespace,
            lease=bool(settings.leader.lease_name),
            collector_mode=cluster.collector_mode,
        )
    finally:
        gateway.close()
    return rows + await check_store(settings, clock=lambda: datetime.now(UTC))


def main(args: argparse.Namespace, *, out: TextIO | None = None) -> int:
    stream = out or sys.stdout
    locale = getattr(args, "lang", None) or "en"
    rows = asyncio.run(_run(args))
    print(checkup.table(rows, locale=locale), file=stream)
    print("\n" + checkup.verdict(rows, locale=locale), file=stream)
    return 1 if doctor.failed(rows) else 0
