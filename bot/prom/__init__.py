"""Prometheus over its HTTP API: the only place gpunode talks to Prometheus (aiohttp)."""
