"""What can be done and what it buys: tier plans, caps, relief, rollouts and restarts,
placement and destinations, autoscalers, safety, staleness, prevention. Imports
bot.core.model and bot.core.diagnosis.
"""
