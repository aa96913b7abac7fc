"""The arithmetic of a peer comparison (``benchmarks/peer_compare.py``): the order the peers run in, the median
over rounds, the ratios, the targets, and the markdown table. No I/O, so every rule is unit-tested.

A sample is one peer measured in one scenario of one round. Peers run one after the other within a scenario,
in an order that rotates every scenario and every round, so a noisy moment of the machine does not always land
on the same peer. Figures are the median over rounds; a ratio is rocketq's median over the peer's median, both
measured in the same run (absolute figures move with the machine, ratios measured side by side much less).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Median", "Sample", "Target", "check_targets", "markdown_table", "medians", "rotation"]


@dataclass
class Sample:
    round: int
    peer: str
    scenario: str
    msgs_per_s: float | None = None
    messages: int = 0
    server_cpu_us_per_msg: float | None = None
    client_cpu_us_per_msg: float | None = None
    latency_p50_ms: float | None = None
    latency_p99_ms: float | None = None
    errors: int = 0
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Median:
    peer: str
    scenario: str
    rounds: int  # samples with a figure
    msgs_per_s: float | None
    server_cpu_us_per_msg: float | None
    latency_p99_ms: float | None


@dataclass(frozen=True)
class Target:
    """``scenario`` of rocketq against ``peer``: the throughput ratio at least ``min_ratio``; with
    ``cpu_at_most_peer`` also rocketq's server CPU per message at most the peer's. ``rocketq_scenario`` names
    rocketq's side when it differs (auto-batching on against the peer's plain 1,000 in flight)."""

    scenario: str
    peer: str
    min_ratio: float
    cpu_at_most_peer: bool = False
    rocketq_scenario: str | None = None

    @property
    def ours(self) -> str:
        return self.rocketq_scenario or self.scenario


def rotation(peers: Sequence[str], round_no: int, scenario_index: int) -> list[str]:
    """The peers' order for one scenario of one round: rotated by one for each scenario and each round."""
    if not peers:
        return []
    k = (round_no + scenario_index) % len(peers)
    return [*peers[k:], *peers[:k]]


def _median(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def medians(samples: Iterable[Sample]) -> dict[tuple[str, str], Median]:
    """(peer, scenario) → the median of its rounds; a failed sample (no throughput) does not count."""
    groups: dict[tuple[str, str], list[Sample]] = {}
    for s in samples:
        if s.msgs_per_s is not None:
            groups.setdefault((s.peer, s.scenario), []).append(s)
    return {
        key: Median(key[0], key[1], len(group), _median(s.msgs_per_s for s in group),
                    _median(s.server_cpu_us_per_msg for s in group), _median(s.latency_p99_ms for s in group))
        for key, group in groups.items()
    }  # fmt: skip


def ratio(ours: Median | None, theirs: Median | None) -> float | None:
    if ours is None or theirs is None or not ours.msgs_per_s or not theirs.msgs_per_s:
        return None
    return ours.msgs_per_s / theirs.msgs_per_s


def check_targets(table: dict[tuple[str, str], Median], targets: Iterable[Target]) -> list[tuple[Target, bool, str]]:
    """Each target with whether this run met it and the figures that decided it (a missing figure fails)."""
    out: list[tuple[Target, bool, str]] = []
    for t in targets:
        ours, theirs = table.get(("rocketq", t.ours)), table.get((t.peer, t.scenario))
        r = ratio(ours, theirs)
        if r is None:
            out.append((t, False, "no figure for one side"))
            continue
        met = r >= t.min_ratio
        why = f"{r:.2f}× (needs ≥ {t.min_ratio:.1f}×)"
        if t.cpu_at_most_peer:
            assert ours is not None and theirs is not None
            a, b = ours.server_cpu_us_per_msg, theirs.server_cpu_us_per_msg
            cpu_met = a is not None and b is not None and a <= b
            met = met and cpu_met
            why += f"; server CPU {_fmt(a)} vs {_fmt(b)} µs/msg (needs ≤)"
        out.append((t, met, why))
    return out


def _fmt(v: float | None, digits: int = 1) -> str:
    return "–" if v is None else f"{v:,.{digits}f}"


def markdown_table(
    table: dict[tuple[str, str], Median],
    scenarios: Sequence[tuple[str, str]],
    peers: Sequence[str],
    titles: dict[str, str],
    against: dict[str, str] | None = None,
) -> str:
    """One row per scenario: each peer's msg/s and server µs/msg, then rocketq's ratio against each other peer.

    ``against`` maps a scenario only rocketq runs to the peers' scenario it is compared with (auto-batching on
    against the peers' plain 1,000 in flight): that row shows the peers' figures of that scenario."""
    against = against or {}
    others = [p for p in peers if p != "rocketq"]
    head = ["scenario"]
    for p in peers:
        head += [f"{titles.get(p, p)} msg/s", f"{titles.get(p, p)} server µs/msg"]
    head += [f"rocketq / {titles.get(p, p)}" for p in others]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for scenario, title in scenarios:
        row = [title]
        theirs = against.get(scenario, scenario)
        for p in peers:
            m = table.get((p, scenario if p == "rocketq" else theirs))
            row += [_fmt(m.msgs_per_s if m else None, 0), _fmt(m.server_cpu_us_per_msg if m else None)]
        ours = table.get(("rocketq", scenario))
        for p in others:
            r = ratio(ours, table.get((p, theirs)))
            row.append("–" if r is None else f"{r:.2f}×")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def summary_dict(table: dict[tuple[str, str], Median]) -> list[dict[str, Any]]:
    """The medians as JSON-ready rows."""
    return [dict(m.__dict__) for m in table.values()]
