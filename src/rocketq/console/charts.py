"""Line charts as inline SVG (no JavaScript, no chart library): series of (time, value) points scaled into a box."""

from __future__ import annotations

import time
from dataclasses import dataclass

#: a colour per series, in order (readable on white, distinct for the first few)
PALETTE = ("#1d3557", "#e63946", "#2a9d8f", "#f4a261", "#6a4c93", "#8d99ae", "#264653", "#e76f51")


@dataclass(frozen=True)
class Line:
    label: str
    colour: str
    points: str  #: the polyline's "x,y x,y ..." in the chart's coordinates
    last: float


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    top: float  #: the value at the top edge
    lines: list[Line]
    start: str  #: the first sample's time of day
    end: str


def line_chart(series: dict[str, list[tuple[float, float]]], *, width: int = 560, height: int = 180) -> Chart:
    """``series``: label → [(epoch seconds, value)], oldest first. Empty series are left out; the value axis
    starts at 0 and its top is the largest value (at least 1, so a quiet cluster draws flat lines at the foot)."""
    pts = [p for s in series.values() for p in s]
    if not pts:
        return Chart(width, height, 1.0, [], "", "")
    t0, t1 = min(t for t, _ in pts), max(t for t, _ in pts)
    top = max(1.0, max(v for _, v in pts))
    span = max(t1 - t0, 1e-9)
    lines = []
    for i, (label, s) in enumerate(sorted(series.items())):
        if not s:
            continue
        xy = " ".join(f"{(t - t0) / span * width if t1 > t0 else width:.1f},{height - v / top * height:.1f}"
                      for t, v in s)  # fmt: skip
        lines.append(Line(label, PALETTE[i % len(PALETTE)], xy, s[-1][1]))
    fmt = "%H:%M:%S"
    return Chart(
        width, height, top, lines, time.strftime(fmt, time.localtime(t0)), time.strftime(fmt, time.localtime(t1))
    )
