"""The health section's charts, drawn on the server as SVG: per hour over 24 hours and per day
over 7 days, deliveries as stacked bars (succeeded, failed) on the left scale and the p95
response time as a line of points on the right one.

Only geometry is computed here; templates/_health.html writes the elements, and the colours
come from the stylesheet (the page's CSP allows no inline style). The drawing has a fixed
coordinate system (a viewBox) scaled to the width it is given: 360 units wide keeps 13-unit
labels near 12 px on a 390 px phone and, with the figure's width capped by the stylesheet,
under 18 px on a desktop. No script and no charting library: two small bar charts do not
need one.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from hangar.webhooks.service import BucketView, HealthView, SeriesView, duration_words

WIDTH, HEIGHT = 360, 190
LEFT, RIGHT, TOP, BOTTOM = 34, 306, 14, 160  # the plot area; labels go around it
MINUS = "\u2212"  # the hyphen is too short to read as a minus sign
_CAPTIONS = {
    "24h": ("Deliveries per hour, last 24 hours", "hour", "h"),
    "7d": ("Deliveries per day, last 7 days", "day", "d"),
}
# A label under every 6th hour boundary, and under every day's.
_LABEL_EVERY = {"24h": 6, "7d": 1}


@dataclass(frozen=True)
class Bar:
    x: float
    width: float
    ok_y: float  # succeeded: from ok_y down to the axis
    ok_height: float
    failed_y: float  # failed: stacked on top
    failed_height: float
    tip: str  # the bucket in words, for a pointer's hover


@dataclass(frozen=True)
class Tick:
    at: float  # y for a scale, x for the time axis
    label: str


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    tip: str


@dataclass(frozen=True)
class Chart:
    id: str
    title: str
    description: str
    width: int
    height: int
    left: int
    right: int
    top: int
    bottom: int
    bars: list[Bar]
    count_ticks: list[Tick]
    time_ticks: list[Tick]  # the right scale: response time
    x_ticks: list[Tick]
    lines: list[list[Point]]  # p95, broken where a bucket has no attempt
    empty: bool
    buckets: list[BucketView]  # the numbers behind it, for the table that repeats them


def charts(health: HealthView) -> list[Chart]:
    return [_chart(series) for series in health["series"]]


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2 or 5 times a power of ten that is at least `value` (1 for 0)."""
    if value <= 1:
        return 1
    power = 10.0 ** math.floor(math.log10(value))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= value)


def _chart(series: SeriesView) -> Chart:
    window, buckets = series["window"], series["buckets"]
    title, unit, short = _CAPTIONS[window]
    most = nice_ceiling(max(b["succeeded"] + b["failed"] for b in buckets))
    slowest = nice_ceiling(max(b["response_ms"]["p95"] or 0 for b in buckets))
    slot = (RIGHT - LEFT) / len(buckets)

    def y_count(n: float) -> float:
        return BOTTOM - (BOTTOM - TOP) * n / most

    def y_ms(ms: float) -> float:
        return BOTTOM - (BOTTOM - TOP) * ms / slowest

    return Chart(
        id=f"chart-{window}",
        title=title,
        description=_description(buckets, unit),
        width=WIDTH,
        height=HEIGHT,
        left=LEFT,
        right=RIGHT,
        top=TOP,
        bottom=BOTTOM,
        bars=[_bar(b, LEFT + i * slot, slot, y_count) for i, b in enumerate(buckets)],
        count_ticks=[Tick(round(y_count(n), 2), _count_tick(n)) for n in _ticks(most)],
        time_ticks=[Tick(round(y_ms(ms), 2), _ms_tick(ms)) for ms in _ticks(slowest)],
        x_ticks=_x_ticks(len(buckets), slot, _LABEL_EVERY[window], short),
        lines=_p95_lines(buckets, slot, y_ms),
        empty=not any(b["succeeded"] or b["failed"] or b["attempts"] for b in buckets),
        buckets=buckets,
    )


def _bar(b: BucketView, x: float, slot: float, y_count: Callable[[float], float]) -> Bar:
    """The bucket's stacked bar, in its slot at `x`: succeeded below, failed on top."""
    ok_y, failed_y = y_count(b["succeeded"]), y_count(b["succeeded"] + b["failed"])
    return Bar(
        x=round(x + slot * 0.15, 2),
        width=round(slot * 0.7, 2),
        ok_y=round(ok_y, 2),
        ok_height=round(BOTTOM - ok_y, 2),
        failed_y=round(failed_y, 2),
        failed_height=round(ok_y - failed_y, 2),
        tip=_tip(b),
    )


def _p95_lines(
    buckets: list[BucketView], slot: float, y_ms: Callable[[float], float]
) -> list[list[Point]]:
    """The p95 line's points, at the middle of each slot, broken where a bucket has none."""
    lines: list[list[Point]] = []
    line: list[Point] = []
    for i, b in enumerate(buckets):
        p95 = b["response_ms"]["p95"]
        if p95 is None:
            if line:
                lines.append(line)
            line = []
            continue
        line.append(Point(round(LEFT + i * slot + slot / 2, 2), round(y_ms(p95), 2), _tip(b)))
    if line:
        lines.append(line)
    return lines


def _x_ticks(count: int, slot: float, step: int, short: str) -> list[Tick]:
    """The time axis's labels: every `step`th boundary of the `count` buckets, ending now."""
    return [
        Tick(round(LEFT + i * slot, 2), "now" if i == count else f"{MINUS}{count - i} {short}")
        for i in range(0, count + 1, step)
    ]


def _ticks(top: float) -> list[float]:
    """0, half way (when it is a whole number) and the top of a scale."""
    half = top / 2
    return [0, half, top] if half == int(half) else [0, top]


def _count_tick(n: float) -> str:
    # Five digits would not fit left of the plot: 20000 is 20k.
    return f"{n / 1000:g}k" if n >= 10_000 else f"{n:g}"


def _ms_tick(ms: float) -> str:
    return "0" if ms == 0 else f"{ms / 1000:g} s" if ms >= 1000 else f"{ms:g} ms"


def _when(moment: datetime) -> str:
    return moment.strftime("%a %H:%M UTC")


def _tip(b: BucketView) -> str:
    times = b["response_ms"]
    answered = (
        f"; p50 {duration_words(times['p50'])}, p95 {duration_words(times['p95'])}"
        if times["p50"] is not None and times["p95"] is not None
        else ""
    )
    return (
        f"{_when(b['since'])} to {_when(b['until'])}: {b['succeeded']} succeeded, "
        f"{b['failed']} failed{answered}"
    )


def _description(buckets: list[BucketView], unit: str) -> str:
    succeeded = sum(b["succeeded"] for b in buckets)
    failed = sum(b["failed"] for b in buckets)
    slowest = max((b["response_ms"]["p95"] or 0 for b in buckets), default=0)
    times = (
        f" The slowest {unit}'s p95 response time was {duration_words(slowest)}." if slowest else ""
    )
    return (
        f"{succeeded:,} succeeded and {failed:,} failed, per {unit}.{times} "
        f"The table below the chart has each {unit}'s numbers."
    )
