"""The scenarios of ``rocketq bench``, and the standard set of the performance issue (``StandardSpec``,
``run_standard``).

Each scenario is a spec (a frozen dataclass whose fields are the command-line options) plus an ``async run_*``
that measures it against a ``Session``'s cluster and returns a ``ScenarioResult``; each has its module:
``produce``, ``consume``, ``e2e``, ``memory``, with what they share in ``session``. The load runs in this process
through the public client SDK (``rocketq.client``) — the client's per-message cost is part of every figure, as it
is for anyone using rocketq. ``--client raw`` on ``produce`` drives the remoting layer directly instead, to
separate the broker's cost from the SDK's.

With ``--embedded`` the broker is a child process (see ``rocketq.bench.broker``), so broker and load generator
each get a core of a 2-core machine; its CPU time is read around every measurement and reported per message.

The names the scenarios had here before they got their modules are still importable from this module.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rocketq.bench.consume import ConsumeSpec, run_consume
from rocketq.bench.e2e import E2ESpec, run_e2e
from rocketq.bench.memory import MemorySpec, run_memory
from rocketq.bench.memory import rss_drift as rss_drift
from rocketq.bench.produce import ProduceSpec, run_produce
from rocketq.bench.report import ScenarioResult
from rocketq.bench.session import ASYNC_FLUSH, SYNC_FLUSH, CommonOptions, Session, command_line
from rocketq.bench.session import Cluster as Cluster
from rocketq.bench.session import pull_frame_sizes as pull_frame_sizes
from rocketq.bench.session import send_frame_sizes as send_frame_sizes

__all__ = [
    "CommonOptions",
    "ConsumeSpec",
    "E2ESpec",
    "MemorySpec",
    "ProduceSpec",
    "Session",
    "StandardSpec",
    "run_consume",
    "run_e2e",
    "run_memory",
    "run_produce",
    "run_standard",
]

log = logging.getLogger("rocketq.bench")

_command = command_line  # the name the tests and older callers import


@dataclass(frozen=True, slots=True)
class StandardSpec:
    """The performance issue's scenario list. ``quick`` shrinks durations and sizes (a smoke run)."""

    quick: bool = False
    skip: tuple[str, ...] = ()
    soak: float | None = None  # memory scenario duration override

    def scenarios(self) -> list[tuple[str, Any]]:
        q = self.quick
        d = 3.0 if q else 10.0
        items: list[tuple[str, Any]] = [
            ("produce-sync", ProduceSpec(mode="sync", duration=d)),
            ("produce-async", ProduceSpec(mode="async", duration=d)),
            ("produce-batch", ProduceSpec(mode="batch", duration=d)),
            ("drain", ConsumeSpec(backlog=100_000 if q else 1_000_000, pull_batch=128)),
            ("produce-sync-flush", ProduceSpec(mode="async", duration=d, flush=SYNC_FLUSH)),
            ("e2e", E2ESpec(duration=5.0 if q else 30.0)),
            ("memory", MemorySpec(duration=self.soak or (20.0 if q else 600.0))),
        ]
        return [(name, spec) for name, spec in items if name not in self.skip]


async def run_standard(session: Session, spec: StandardSpec, on_result: Callable[[ScenarioResult], None]) -> None:
    """Every scenario of the performance issue, in order; ``on_result`` sees each result as it lands."""
    for name, scenario in spec.scenarios():
        try:
            if isinstance(scenario, ProduceSpec):
                result = await run_produce(session, scenario, name)
                if scenario.flush == SYNC_FLUSH:
                    await session.release(SYNC_FLUSH)
            elif isinstance(scenario, ConsumeSpec):
                result = await run_consume(session, scenario, name)
            elif isinstance(scenario, E2ESpec):
                result = await run_e2e(session, scenario, name)
            else:
                await session.release(ASYNC_FLUSH)  # the soak gets the machine to itself
                result = await run_memory(session, scenario, name)
        except Exception as exc:
            log.exception("scenario.failed name=%s", name)
            result = ScenarioResult(
                name=name, title=scenario.title(), command="", params={}, targets=scenario.targets(),
                notes=[f"failed: {type(exc).__name__}: {exc}"],
            )  # fmt: skip
        on_result(result)
