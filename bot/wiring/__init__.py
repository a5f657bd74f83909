"""Process wiring: settings -> adapters -> services -> the Slack app and HTTP server.

- ``bot.wiring.runtime``: builds every adapter and service from ``Settings`` (the only
  place that knows the concrete classes);
- ``bot.wiring.serve``: ``gpunode serve``: checks the settings and reads the policy, then
  ``bot.wiring.running`` runs the bot over HTTP or Socket Mode, with the background loops,
  until a signal (imported only then: a refused start does not import the SDKs);
- ``bot.wiring.server``: the aiohttp application: Slack's endpoints, ``/alertmanager``
  and the health checks.

Not part of ``bot.slack``: the wiring also serves Alertmanager and owns the lifecycle.
"""
