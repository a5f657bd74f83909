"""Evidence from another schema major version is refused before it is validated."""

from __future__ import annotations

import pytest

from bot.core.model.evidence import SCHEMA_MAJOR, foreign_schema


@pytest.mark.parametrize(
    ("data", "foreign"),
    [
        ({"schema_version": f"{SCHEMA_MAJOR}.0"}, None),
        ({"schema_version": f"{SCHEMA_MAJOR}.7"}, None),
        ({"schema_version": "0.9"}, "0.9"),
        ({"schema_version": f"{int(SCHEMA_MAJOR) + 1}.0"}, f"{int(SCHEMA_MAJOR) + 1}.0"),
        ({}, ""),
    ],
)
def test_only_another_major_version_is_foreign(
    data: dict[str, object], foreign: str | None
) -> None:
    assert foreign_schema(data) == foreign
