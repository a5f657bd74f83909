"""Fault injection: make chosen requests fail with a Status, or answer late.

A rule matches on method (``"*"`` = any) and a regex searched in the path; it fires ``times``
times (``-1`` = forever), then disappears. ``delay_s`` delays the answer (to exercise client
timeouts); ``status`` answers with a real Status object of that code instead of the handler.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

from bot.sandbox.kubesim.statuses import ApiError


@dataclass
class Fault:
    method: str
    pattern: re.Pattern[str]
    status: int | None
    delay_s: float
    times: int
    reason: str
    hits: int = 0


class Faults:
    def __init__(self) -> None:
        self.rules: list[Fault] = []

    def add(
        self,
        method: str,
        path_regex: str,
        *,
        status: int | None = None,
        delay_s: float = 0,
        times: int = 1,
        reason: str = "",
    ) -> Fault:
        rule = Fault(method.upper(), re.compile(path_regex), status, delay_s, times, reason)
        self.rules.append(rule)
        return rule

    def clear(self) -> None:
        self.rules.clear()

    async def apply(self, method: str, path: str) -> None:
        for rule in list(self.rules):
            if rule.method not in ("*", method.upper()) or not rule.pattern.search(path):
                continue
            rule.hits += 1
            if rule.times != -1 and rule.hits >= rule.times:
                self.rules.remove(rule)
            if rule.delay_s:
                await asyncio.sleep(rule.delay_s)
            if rule.status is not None:
                raise ApiError(rule.status, rule.reason or f"injected fault ({rule.status})")
            return
