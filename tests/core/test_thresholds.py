"""Thresholds: defaults, overrides from a YAML mapping, typos refused."""

from __future__ import annotations

import pytest

from bot.core.model.thresholds import DEFAULT, parse_thresholds
from bot.errors import ConfigError


def test_missing_keys_keep_their_defaults() -> None:
    t = parse_thresholds({"container_near_limit_ratio": 0.9})
    assert t.container_near_limit_ratio == 0.9
    assert t.slab_unreclaim_warn_share == DEFAULT.slab_unreclaim_warn_share
    assert parse_thresholds(None) == DEFAULT


@pytest.mark.parametrize(
    "raw", [{"container_near_limit": 0.9}, {"container_near_limit_ratio": 1.5}, ["x"]]
)
def test_a_typo_or_an_out_of_range_value_is_refused(raw: object) -> None:
    with pytest.raises(ConfigError):
        parse_thresholds(raw)  # type: ignore[arg-type]
