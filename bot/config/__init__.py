"""Configuration read at start: the settings model and the two YAML files it names.

- ``bot.config.settings``: the one ``Settings`` model and ``load_settings`` (defaults < YAML
  file < ``GPUNODE_*`` environment), re-exported here so callers write
  ``from bot.config import Settings, load_settings``;
- ``bot.config.policy``: ``read_policy``, the role policy YAML (``actions.policy_file``);
- ``bot.config.thresholds``: ``read_thresholds``, the analysis thresholds YAML
  (``thresholds_file``).

Only ``settings`` is imported with the package; the two loaders are imported where used.
"""

from bot.config.settings import (
    ENV_PREFIX,
    ActionSettings,
    AlertSettings,
    HttpSettings,
    KubeSettings,
    MetricsSettings,
    PrometheusSettings,
    Settings,
    SlackSettings,
    StoreSettings,
    alerts_enabled,
    load_settings,
)

__all__ = [
    "ENV_PREFIX",
    "ActionSettings",
    "AlertSettings",
    "HttpSettings",
    "KubeSettings",
    "MetricsSettings",
    "PrometheusSettings",
    "Settings",
    "SlackSettings",
    "StoreSettings",
    "alerts_enabled",
    "load_settings",
]
