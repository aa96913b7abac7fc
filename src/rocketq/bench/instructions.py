"""Instructions per operation, counted by valgrind: a measure that does not drift with the host.

Wall-clock and CPU-time figures on a shared VM move by a third within minutes (the same client code measured
22.8 to 33.9 µs per message in one session), which hides a change worth a few per cent. An instruction count
does not move: a scenario run under ``valgrind --tool=callgrind`` at two sizes gives its cost per operation as
the difference of the two totals over the difference of the sizes, and start-up (the interpreter, imports, the
embedded broker) cancels out. What it does not see: cache misses, system calls' kernel time, page faults
(the commit log's fresh memory). It ranks Python-level changes, not I/O ones.

``benchmarks/instructions_per_op.py`` runs the scenarios; this module holds its arithmetic (unit-tested).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["OpCost", "collected_instructions", "per_op", "valgrind_command"]

_COLLECTED = re.compile(r"Collected\s*:\s*([0-9]+)")


def valgrind_command(python: str, script: str, scenario: str, count: int) -> list[str]:
    """The command that counts ``scenario`` with ``count`` operations (callgrind's profile itself discarded)."""
    return ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", python, script, "--run", scenario,
            str(count)]  # fmt: skip


def collected_instructions(stderr: str) -> int:
    """The total callgrind prints (``==PID== Collected : N``); ValueError when the run printed none."""
    found = _COLLECTED.findall(stderr)
    if not found:
        raise ValueError("valgrind printed no 'Collected' total: did the scenario run under callgrind?")
    return int(found[-1])


@dataclass(frozen=True)
class OpCost:
    """One tree's cost of one scenario: the two runs and the instructions per operation between them."""

    small: int
    large: int
    small_total: int
    large_total: int

    @property
    def per_op(self) -> float:
        return per_op(self.small, self.small_total, self.large, self.large_total)


def per_op(small: int, small_total: int, large: int, large_total: int) -> float:
    """Instructions per operation from runs of ``small`` and ``large`` operations (what both share cancels)."""
    if large <= small:
        raise ValueError(f"the large run ({large}) must do more operations than the small one ({small})")
    if large_total < small_total:
        raise ValueError("the larger run counted fewer instructions: a run failed early (see its output)")
    return (large_total - small_total) / (large - small)
