"""Read the analysis thresholds YAML once at start (I/O edge of ``bot.core.model.thresholds``)."""

from __future__ import annotations

from pathlib import Path

import yaml

from bot.config import Settings
from bot.core.model.thresholds import DEFAULT, Thresholds, parse_thresholds
from bot.errors import ConfigError

#: libyaml's safe loader when built (several times faster), else the pure-Python one
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_thresholds(settings: Settings) -> Thresholds:
    """``settings.thresholds_file`` parsed and validated, or the documented defaults."""
    path = settings.thresholds_file
    if not path:
        return DEFAULT
    try:
        raw = yaml.load(Path(path).read_text(encoding="utf-8"), Loader=LOADER)  # noqa: S506
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(
            f"cannot read thresholds file {path}: {exc}; fix it or unset thresholds_file",
            key="thresholds_unreadable",
            params={"path": path, "error": str(exc)},
        ) from exc
    return parse_thresholds(raw)
