"""The vocabulary every other part speaks: quantities, the evidence bundle, the cluster
view, workloads and their kinds, actions and plans as data, thresholds, incidents, locales.
Imports nothing else from bot.core.
"""
