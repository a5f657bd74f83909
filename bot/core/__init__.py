"""The pure core: no I/O, no SDK imports, no clock, no randomness.

Time and identifiers are arguments. Everything here is deterministic over its inputs.
"""
