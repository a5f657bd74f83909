"""Fault injection: make chosen requests fail with a Status, or answer late.

A rule matches on method (``"*"`` = any) and a regex searched in the path; it fires ``times``
times (``-1`` = forever), then disappears. ``delay_s`` delays the request before it is
handled (a client that gives up meanwhile has its request dropped: nothing is applied);
``status`` answers with a real Status object of that code instead of the handler.

``hold_s`` is the slow etcd: the request is handled (a write is stored and visible to every
later read) and only its answer is held back that long, past a client's timeout; ``drop``
handles it and then closes the connection without answering. Either way the client cannot
know whether its write landed, as with a real API server whose answer is lost. ``skip``
lets that many matching requests through untouched first; ``after`` arms a rule only once
another rule has fired (e.g. fail the re-read that follows a held write, not the reads
before it).
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

from gpunode_sandbox.kubesim.statuses import ApiError


@dataclass
class Fault:
    method: str
    pattern: re.Pattern[str]
    status: int | None
    delay_s: float
    times: int
    reason: str
    hits: int = 0
    hold_s: float = 0
    drop: bool = False
    skip: int = 0
    after: Fault | None = None


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
        hold_s: float = 0,
        drop: bool = False,
        skip: int = 0,
        after: Fault | None = None,
    ) -> Fault:
        if (hold_s or drop) and (status is not None or delay_s):
            raise ValueError("hold_s/drop answer after handling; they take no status or delay_s")
        rule = Fault(
            method.upper(),
            re.compile(path_regex),
            status,
            delay_s,
            times,
            reason,
            hold_s=hold_s,
            drop=drop,
            skip=skip,
            after=after,
        )
        self.rules.append(rule)
        return rule

    def clear(self) -> None:
        self.rules.clear()

    async def apply(self, method: str, path: str) -> Fault | None:
        """Fire the first matching rule before the handler; the rule when it acts after the
        handler too (``hold_s``, ``drop``), else None."""
        for rule in list(self.rules):
            if rule.method not in ("*", method.upper()) or not rule.pattern.search(path):
                continue
            if rule.after is not None and rule.after.hits == 0:
                continue
            if rule.skip > 0:
                rule.skip -= 1
                return None
            rule.hits += 1
            if rule.times != -1 and rule.hits >= rule.times:
                self.rules.remove(rule)
            if rule.delay_s:
                await asyncio.sleep(rule.delay_s)
            if rule.status is not None:
                raise ApiError(rule.status, rule.reason or f"injected fault ({rule.status})")
            return rule if rule.hold_s or rule.drop else None
        return None
