"""Talking-point builders, one module per topic family (gpu, culprits, training, ops, tiers).

Pure: no I/O. ``bot.core.reporting.talking_points.build_talking_points`` runs them in a fixed order
and its module docstring is the table of every key, stance and params (templates and tests read
it); a builder that emits a new key must add its row there.
"""
