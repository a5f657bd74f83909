"""The store's target names its engine: a DSN for PostgreSQL, anything else for SQLite."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.errors import StoreError
from bot.store.engines import is_postgres, require_existing
from bot.store.sqlite import path_of
from bot.store.storing import redact


@pytest.mark.parametrize(
    ("target", "postgres"),
    [
        ("postgresql://gpunode:pw@db:5432/gpunode", True),
        ("postgres://gpunode@db/gpunode", True),
        ("sqlite:///var/lib/gpunode/gpunode.db", False),
        ("/var/lib/gpunode/gpunode.db", False),
        (".gpunode/gpunode.db", False),
        (":memory:", False),
    ],
)
def test_a_postgresql_dsn_selects_postgresql_and_anything_else_sqlite(
    target: str, postgres: bool
) -> None:
    assert is_postgres(target) is postgres


@pytest.mark.parametrize(
    ("target", "path"),
    [
        ("sqlite:///relative/g.db", "relative/g.db"),
        ("sqlite:////abs/g.db", "/abs/g.db"),
        ("sqlite:///", ":memory:"),
        ("/abs/g.db", "/abs/g.db"),
    ],
)
def test_a_sqlite_url_names_its_file(target: str, path: str) -> None:
    assert path_of(target) == path


def test_a_dsn_in_a_message_loses_its_password() -> None:
    assert redact("postgresql://gpunode:s3cret@db:5432/g") == "postgresql://gpunode:***@db:5432/g"
    assert redact("postgresql://gpunode@db/g") == "postgresql://gpunode@db/g"


def test_the_cli_refuses_a_missing_sqlite_file_but_not_a_dsn(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="GPUNODE_STORE__DSN"):
        require_existing(str(tmp_path / "absent.db"))
    assert require_existing("postgresql://u@h/d") == "postgresql://u@h/d"
