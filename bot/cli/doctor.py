"""``gpunode doctor``: check the bot's rights, admission policies, collector Job and store
(``bot.services.doctor``, ``bot.store.checkup``), print a table, exit 1 when a check fails."""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import UTC, datetime
from typing import TextIO

from bot.cli.common import cluster_settings
from bot.config import load_settings
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
    rows = asyncio.run(_run(args))
    print(doctor.table(rows), file=stream)
    bad = doctor.failed(rows)
    print(
        "\ndoctor: FAILED (fix the FAIL rows)" if bad else "\ndoctor: all required checks pass",
        file=stream,
    )
    return 1 if bad else 0
