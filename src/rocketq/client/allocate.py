"""Queue allocation strategies for clustering consumers (Java ``AllocateMessageQueueStrategy``).

Every strategy is a pure function of ``(consumer_group, current_cid, mq_all, cid_all)`` returning the queues
``current_cid`` owns. The caller sorts ``mq_all`` (topic, broker name, queue id) and ``cid_all`` first, so every
member of a group computes the same split. A client id that is not in ``cid_all`` gets nothing.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable, Sequence
from typing import Protocol

from rocketq.protocol.bodies import MessageQueue

__all__ = [
    "AllocateMachineRoomNearby",
    "AllocateMessageQueueAveragely",
    "AllocateMessageQueueAveragelyByCircle",
    "AllocateMessageQueueByConfig",
    "AllocateMessageQueueByMachineRoom",
    "AllocateMessageQueueConsistentHash",
    "AllocateMessageQueueStrategy",
    "allocate_averagely",
    "allocate_averagely_by_circle",
    "mq_java_string",
]


class AllocateMessageQueueStrategy(Protocol):
    """``strategy(group, current_cid, mq_all, cid_all)`` → the queues of ``current_cid``."""

    @property
    def name(self) -> str: ...

    def __call__(
        self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]: ...


def _check(current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]) -> bool:
    if not current_cid:
        raise ValueError("current_cid is empty")
    if not mq_all:
        raise ValueError("mq_all is empty")
    if not cid_all:
        raise ValueError("cid_all is empty")
    return current_cid in cid_all


def allocate_averagely(
    consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
) -> list[MessageQueue]:
    """Contiguous ranges, the first ``len(mq) % len(cid)`` consumers getting one extra queue.

    10 queues, 4 consumers → 3, 3, 2, 2 (queues 0-2, 3-5, 6-7, 8-9).
    """
    if not _check(current_cid, mq_all, cid_all):
        return []
    index = list(cid_all).index(current_cid)
    n_mq, n_cid = len(mq_all), len(cid_all)
    mod = n_mq % n_cid
    if n_mq <= n_cid:
        average = 1
    elif mod > 0 and index < mod:
        average = n_mq // n_cid + 1
    else:
        average = n_mq // n_cid
    start = index * average if (mod > 0 and index < mod) else index * average + mod
    count = min(average, n_mq - start)
    return [mq_all[(start + i) % n_mq] for i in range(count)]


def allocate_averagely_by_circle(
    consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
) -> list[MessageQueue]:
    """Deal queues round-robin: consumer *i* gets queues *i*, *i+n*, *i+2n*, …"""
    if not _check(current_cid, mq_all, cid_all):
        return []
    index = list(cid_all).index(current_cid)
    return [mq_all[i] for i in range(index, len(mq_all)) if i % len(cid_all) == index]


class AllocateMessageQueueAveragely:
    name = "AVG"

    def __call__(
        self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        return allocate_averagely(consumer_group, current_cid, mq_all, cid_all)


class AllocateMessageQueueAveragelyByCircle:
    name = "AVG_BY_CIRCLE"

    def __call__(
        self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        return allocate_averagely_by_circle(consumer_group, current_cid, mq_all, cid_all)


def mq_java_string(mq: MessageQueue) -> str:
    """Java ``MessageQueue.toString()``, the key the consistent-hash ring routes."""
    return f"MessageQueue [topic={mq.topic}, brokerName={mq.broker_name}, queueId={mq.queue_id}]"


def md5_hash(key: str) -> int:
    """The ring hash of Java's ``ConsistentHashRouter.MD5Hash``: the first 4 digest bytes, big-endian, unsigned."""
    return int.from_bytes(hashlib.md5(key.encode()).digest()[:4], "big")


class AllocateMessageQueueConsistentHash:
    """A hash ring with ``virtual_node_cnt`` virtual nodes per client (``"<cid>-<i>"``), MD5 by default.

    Each queue (keyed by its Java ``toString()``) goes to the first node at or after its hash, wrapping around.
    """

    name = "CONSISTENT_HASH"

    def __init__(self, virtual_node_cnt: int = 10, hash_function: Callable[[str], int] | None = None) -> None:
        if virtual_node_cnt < 0:
            raise ValueError(f"illegal virtual_node_cnt: {virtual_node_cnt}")
        self.virtual_node_cnt = virtual_node_cnt
        self.hash_function = hash_function or md5_hash

    def __call__(
        self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        if not _check(current_cid, mq_all, cid_all):
            return []
        ring: dict[int, str] = {}
        for cid in cid_all:
            # Java counts replicas already on the ring for this client id, so duplicate ids extend the range.
            existing = sum(1 for node in ring.values() if node == cid)
            for i in range(self.virtual_node_cnt):
                ring[self.hash_function(f"{cid}-{i + existing}")] = cid
        if not ring:
            return []
        keys = sorted(ring)
        result = []
        for mq in mq_all:
            pos = bisect.bisect_left(keys, self.hash_function(mq_java_string(mq)))
            node = ring[keys[pos] if pos < len(keys) else keys[0]]
            if node == current_cid:
                result.append(mq)
        return result


class AllocateMessageQueueByConfig:
    """Always the configured queues, whatever the group looks like."""

    name = "CONFIG"

    def __init__(self, message_queues: Sequence[MessageQueue]) -> None:
        self.message_queues = list(message_queues)

    def __call__(
        self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        return list(self.message_queues)


class AllocateMessageQueueByMachineRoom:
    """Only queues of brokers named ``"<idc>@<name>"`` whose idc is in ``consumer_idcs``, split averagely."""

    name = "MACHINE_ROOM"

    def __init__(self, consumer_idcs: set[str] | frozenset[str]) -> None:
        self.consumer_idcs = frozenset(consumer_idcs)

    def __call__(
        self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        if not _check(current_cid, mq_all, cid_all):
            return []
        index = list(cid_all).index(current_cid)
        pre = []
        for mq in mq_all:
            parts = mq.broker_name.split("@")
            if len(parts) == 2 and parts[0] in self.consumer_idcs:
                pre.append(mq)
        mod, rem = divmod(len(pre), len(cid_all))
        result = pre[mod * index : mod * index + mod]
        if rem > index:
            result.append(pre[index + mod * len(cid_all)])
        return result


class MachineRoomResolver(Protocol):
    def broker_deploy_in(self, mq: MessageQueue) -> str: ...

    def consumer_deploy_in(self, client_id: str) -> str: ...


class AllocateMachineRoomNearby:
    """Prefer queues in the consumer's own machine room; rooms without consumers are shared by everybody.

    ``strategy`` does the actual split inside each room; ``resolver`` maps queues and client ids to rooms.
    """

    def __init__(self, strategy: AllocateMessageQueueStrategy, resolver: MachineRoomResolver) -> None:
        self.strategy = strategy
        self.resolver = resolver

    @property
    def name(self) -> str:
        return f"MACHINE_ROOM_NEARBY-{self.strategy.name}"

    def __call__(
        self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        if not _check(current_cid, mq_all, cid_all):
            return []
        mr2mq: dict[str, list[MessageQueue]] = {}
        for mq in mq_all:
            room = self.resolver.broker_deploy_in(mq)
            if not room:
                raise ValueError(f"machine room is empty for {mq}")
            mr2mq.setdefault(room, []).append(mq)
        mr2c: dict[str, list[str]] = {}
        for cid in cid_all:
            room = self.resolver.consumer_deploy_in(cid)
            if not room:
                raise ValueError(f"machine room is empty for consumer {cid}")
            mr2c.setdefault(room, []).append(cid)
        result: list[MessageQueue] = []
        current_room = self.resolver.consumer_deploy_in(current_cid)
        mine = mr2mq.pop(current_room, None)
        if mine:
            result.extend(self.strategy(consumer_group, current_cid, mine, mr2c.get(current_room, [])))
        for room in sorted(mr2mq):  # Java iterates a TreeMap
            if room not in mr2c:
                result.extend(self.strategy(consumer_group, current_cid, mr2mq[room], cid_all))
        return result
