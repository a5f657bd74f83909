"""Use-cases (diagnose, act, approve, alert intake). Async; they talk to ports only."""
