"""Who becomes master (Java ``DefaultElectPolicy``): a pure function over the candidates' last heartbeats."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from rocketq.replication.controller.liveness import BrokerLive

#: broker id → its liveness record when alive, None when dead or never heard of
LiveLookup = Callable[[int], BrokerLive | None]


def elect(
    sync_state_set: Iterable[int],
    all_replicas: Iterable[int] | None,
    old_master: int | None,
    live: LiveLookup,
    *,
    designated: int | None = None,
) -> int | None:
    """The new master: first among the alive members of the in-sync set, then — only when ``all_replicas`` is
    given (``enableElectUncleanMaster``) — among all alive replicas. ``designated`` (an admin's switch-over)
    wins if it is an alive candidate and nobody else may; otherwise a still-alive old master is kept; otherwise
    the highest epoch, then the highest max offset, then the lowest election priority value, then the lowest id."""
    choice = _choose(sync_state_set, old_master, live, designated)
    if choice is None and all_replicas is not None:
        choice = _choose(all_replicas, old_master, live, designated)
    return choice


def _choose(candidates: Iterable[int], old_master: int | None, live: LiveLookup, designated: int | None) -> int | None:
    alive = {i: rec for i in candidates if (rec := live(i)) is not None}
    if not alive:
        return None
    if designated is not None:
        return designated if designated in alive else None
    if old_master is not None and old_master in alive:
        return old_master
    best = min(alive.values(), key=lambda r: (-r.epoch, -r.max_offset, r.election_priority, r.broker_id))
    return best.broker_id
