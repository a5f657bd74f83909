"""When did a memory series start to grow, and how fast? Pure arithmetic, no I/O.

``find_change(times_s, values)`` fits the series with two straight lines joined at one
breakpoint (least squares, every breakpoint tried in O(n) with prefix sums) and compares
that with one straight line over the whole window. The breakpoint is kept when two lines
explain clearly more (``_GAIN``) than one; otherwise the series had one regime over the
window and the "change" is the window's start.

What the second segment says (``kind``):
- ``growth``: it rises at ``rate_after`` (bytes/s) faster than ``min_rate`` and faster than the
  segment before (a slab leak from 02:10, a DataLoader that creeps from the start);
- ``step``: it jumped by ``jump`` at the breakpoint and then stayed flat (a sudden spike);
- ``decline`` / ``flat``: it shrank or held.

The caller supplies plain floats (seconds, bytes); no clock is read here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["growth", "step", "flat", "decline"]
_GAIN = 0.6  # two segments must leave < 60% of one line's squared error to count as a change
_MIN_SEGMENT = 4  # points on each side of a breakpoint (a minute of scrapes at 15 s)


@dataclass(frozen=True)
class Change:
    """The regime the series is in at the end of the window."""

    kind: Kind
    at_s: float = 0.0  # when the last regime began (the window's start when no breakpoint)
    rate_before: float = 0.0  # units per second
    rate_after: float = 0.0
    jump: float = 0.0  # level difference of the two fits at the breakpoint
    breakpoint: bool = False  # False: one regime over the whole window


class _Sums:
    """Prefix sums of 1, t, v, t*t, t*v, v*v for O(1) least-squares on any slice."""

    def __init__(self, ts: list[float], vs: list[float]) -> None:
        self.acc = [(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)]
        n = t_ = v_ = tt = tv = vv = 0.0
        for t, v in zip(ts, vs, strict=True):
            n, t_, v_ = n + 1, t_ + t, v_ + v
            tt, tv, vv = tt + t * t, tv + t * v, vv + v * v
            self.acc.append((n, t_, v_, tt, tv, vv))

    def fit(self, i: int, j: int) -> tuple[float, float, float]:
        """(intercept, slope, squared error) of the points [i, j)."""
        a, b = self.acc[j], self.acc[i]
        n, st, sv, stt, stv, svv = (a[k] - b[k] for k in range(6))
        den = n * stt - st * st
        slope = (n * stv - st * sv) / den if den > 1e-12 else 0.0
        icpt = (sv - slope * st) / n if n else 0.0
        sse = svv - 2 * icpt * sv - 2 * slope * stv + icpt * icpt * n
        sse += 2 * icpt * slope * st + slope * slope * stt
        return icpt, slope, max(sse, 0.0)


def find_change(times_s: list[float], values: list[float], *, min_rate: float) -> Change | None:
    """The last regime of the series, or None with fewer than ``2 * _MIN_SEGMENT`` points.

    ``min_rate``: the slope (units/s) below which a segment counts as flat.
    """
    n = len(times_s)
    if n != len(values) or n < 2 * _MIN_SEGMENT:
        return None
    origin = times_s[0]
    ts = [t - origin for t in times_s]  # small numbers keep the sums precise
    sums = _Sums(ts, values)
    _, slope_all, sse_all = sums.fit(0, n)
    best: tuple[float, int] | None = None
    for k in range(_MIN_SEGMENT, n - _MIN_SEGMENT + 1):
        sse = sums.fit(0, k)[2] + sums.fit(k, n)[2]
        if best is None or sse < best[0]:
            best = (sse, k)
    if best is None or best[0] >= _GAIN * sse_all:
        return Change(kind=_kind(slope_all, 0.0, min_rate), at_s=times_s[0], rate_after=slope_all)
    k = best[1]
    icpt1, slope1, _ = sums.fit(0, k)
    icpt2, slope2, _ = sums.fit(k, n)
    t_k = (ts[k - 1] + ts[k]) / 2  # the break lies between the last old and first new point
    jump = (icpt2 + slope2 * t_k) - (icpt1 + slope1 * t_k)
    return Change(
        kind=_kind(slope2, jump, min_rate, before=slope1, span=ts[-1] - t_k),
        at_s=origin + t_k,
        rate_before=slope1,
        rate_after=slope2,
        jump=jump,
        breakpoint=True,
    )


def _kind(
    slope: float, jump: float, min_rate: float, *, before: float = 0.0, span: float = 0.0
) -> Kind:
    if slope >= min_rate and slope > before:
        return "growth"
    if jump > 0 and jump > abs(slope) * span:
        return "step"
    if slope <= -min_rate:
        return "decline"
    return "flat"
