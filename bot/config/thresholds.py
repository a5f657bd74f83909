"""Read the analysis thresholds YAML once at start (I/O edge of ``bot.core.thresholds``)."""

from __future__ import annotations

from pathlib import Path

import yaml

from bot.config import Settings
from bot.core.thresholds import DEFAULT, Thresholds, parse_thresholds
from bot.errors import ConfigError


def read_thresholds(settings: Settings) -> Thresholds:
    """``settings.thresholds_file`` parsed and validated, or the documented defaults."""
    path = settings.thresholds_file
    if not path:
        return DEFAULT
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(
            f"cannot read thresholds file {path}: {exc}; fix it or unset thresholds_file"
        ) from exc
    return parse_thresholds(raw)
