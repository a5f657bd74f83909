"""The bot's own metrics (Prometheus): the only ``import prometheus_client``.

``metrics.Metrics`` is the typed facade the services, the edges and the wiring call; each
bot instance owns one, with its own registry (never the client's global one), so two bots
in one process (tests, replicas in one test) count separately. ``serving`` exposes it.
``bot/core`` never imports this package: the core stays pure.
"""
