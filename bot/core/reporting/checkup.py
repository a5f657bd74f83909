"""A checkup's rows (``gpunode doctor``, and ``serve`` at start): one finding each, with its
level (pure data). The checks are the edge's: the cluster's in ``bot.services.doctor``, the
store's in ``bot.store.checkup`` (its roles: ``bot.store.roles``, as ``Finding``).

A row says what was found as a ``code`` and raw ``params``, never as a sentence: the words
are the presenter's (``bot.render.checkup``, ``templates/text/cli.txt.j2``), per language;
``serve`` logs them in English through the same presenter. Text a server or an exception
wrote is a param (``reason``) and is shown as it is."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Level = Literal["ok", "warn", "FAIL"]


@dataclass(frozen=True)
class Row:
    """``area``: the check's name (grants, admission, collector, store, replicas);
    ``code``: what was found (``doctor_what``/``doctor_detail`` in ``cli.txt.j2``)."""

    area: str
    level: Level
    code: str
    params: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Finding:
    """One line of the store's roles check (``bot.store.roles``): ``ok`` or not, the ``check``
    (store_role, table_grants, store_file, store_folder) and what was found (``code``,
    ``params``), worded by the same presenter as a ``Row``."""

    ok: bool
    check: str
    code: str
    params: Mapping[str, object] = field(default_factory=dict)


def failed(rows: list[Row]) -> bool:
    return any(r.level == "FAIL" for r in rows)
