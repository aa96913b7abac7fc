"""Reading a topic's queues without a consumer group's offsets (mqadmin printMsg, printMsgByQueue,
queryMsgByOffset): PULL_MESSAGE as the tools group with the subscription in the request, nothing committed."""

from __future__ import annotations

import logging

from rocketq.client.admin._base import AdminBase
from rocketq.client.lowlevel import to_subscribe_info
from rocketq.client.message import MessageExt, PullStatus
from rocketq.client.subscription import build_subscription_data
from rocketq.errors import ClientError
from rocketq.protocol.bodies import MessageQueue
from rocketq.protocol.headers import PULL_FLAG_SUBSCRIPTION, PullMessageRequestHeader
from rocketq.protocol.message import iter_records

log = logging.getLogger("rocketq.client.admin")

#: the group the tools pull as (Java MixAll.TOOLS_CONSUMER_GROUP, which mqadmin's printMsg uses)
TOOLS_GROUP = "TOOLS_CONSUMER"
_PULL_BATCH = 32


class BrowseAdmin(AdminBase):
    async def readable_queues(
        self, topic: str, broker_name: str | None = None, queue_id: int | None = None
    ) -> list[tuple[MessageQueue, str]]:
        """The topic's readable queues (optionally of one broker / one queue id), each with the address to read
        it from. None of them: ClientError naming the queues there are."""
        route = await self.topic_route(topic)
        queues = sorted(to_subscribe_info(topic, route))
        chosen = [q for q in queues if broker_name in (None, q.broker_name) and queue_id in (None, q.queue_id)]
        if not chosen:
            have = ", ".join(f"{q.broker_name}:{q.queue_id}" for q in queues) or "none readable"
            raise ClientError(f"topic {topic!r} has no such queue (queues: {have})")
        out = []
        for q in chosen:
            bd = route.broker(q.broker_name)
            addr = bd.select_broker_addr() if bd else None
            if addr is None:
                raise ClientError(f"broker {q.broker_name!r} has no address in the route: {q} can not be read")
            out.append((q, addr))
        return out

    async def browse_messages(
        self,
        topic: str,
        *,
        broker_name: str | None = None,
        queue_id: int | None = None,
        from_offset: int | None = None,
        to_offset: int | None = None,
        begin_ms: int | None = None,
        end_ms: int | None = None,
        expression: str = "*",
        max_messages: int = 100,
    ) -> list[MessageExt]:
        """Messages of the chosen queues in queue order: from the min offset (or ``from_offset``, or the first
        message stored at or after ``begin_ms``) up to the max offset (or before ``to_offset``, or before the
        first message stored at or after ``end_ms``), tags filtered by ``expression``; at most ``max_messages``."""
        if max_messages <= 0:
            raise ValueError("max_messages must be positive")
        api = self._api
        sub = build_subscription_data(topic, expression)
        tags = set(sub.tags_set)
        found: list[MessageExt] = []
        for mq, addr in await self.readable_queues(topic, broker_name, queue_id):
            if len(found) >= max_messages:
                break
            lo, hi = await api.get_min_offset(addr, mq, self.timeout), await api.get_max_offset(addr, mq, self.timeout)
            start = from_offset if from_offset is not None else lo
            if begin_ms is not None:
                start = max(start, await api.search_offset(addr, mq, begin_ms, self.timeout))
            stop = min(hi, to_offset) if to_offset is not None else hi
            if end_ms is not None:
                found_at = await api.search_offset(addr, mq, end_ms, self.timeout)
                if lo <= found_at < stop:
                    # the store answers a time after its last message with that message's offset: keep the
                    # message when it was stored before ``end_ms`` (Java's printMsg loses it)
                    at, _ = await self._pull(addr, mq, found_at, 1, "*", "TAG")
                    if at and at[0].queue_offset == found_at and at[0].store_timestamp < end_ms:
                        found_at += 1
                    stop = found_at
            offset = max(start, lo)
            while offset < stop and len(found) < max_messages:
                batch, nxt = await self._pull(addr, mq, offset, min(_PULL_BATCH, stop - offset), sub.sub_string,
                                              sub.expression_type)  # fmt: skip
                found.extend(m for m in batch if offset <= m.queue_offset < stop and (not tags or m.tags in tags))
                if nxt <= offset:  # the broker moved us nowhere (an illegal offset answered with itself): stop
                    break
                offset = nxt
        del found[max_messages:]
        return found

    async def message_at_offset(self, topic: str, broker_name: str, queue_id: int, offset: int) -> MessageExt | None:
        """The message at one queue offset (mqadmin queryMsgByOffset); None when there is none."""
        ((mq, addr),) = await self.readable_queues(topic, broker_name, queue_id)
        batch, _ = await self._pull(addr, mq, offset, 1, "*", "TAG")
        return next((m for m in batch if m.queue_offset == offset), None)

    async def _pull(
        self, addr: str, mq: MessageQueue, offset: int, count: int, sub_string: str, expression_type: str
    ) -> tuple[list[MessageExt], int]:
        header = PullMessageRequestHeader(
            consumer_group=TOOLS_GROUP, topic=mq.topic, queue_id=mq.queue_id, queue_offset=offset,
            max_msg_nums=count, sys_flag=PULL_FLAG_SUBSCRIPTION, commit_offset=0, suspend_timeout_millis=0,
            subscription=sub_string, sub_version=0, expression_type=expression_type,
        )  # fmt: skip
        raw = await self._api.pull_message(addr, header, mq.broker_name, self.timeout)
        msgs = []
        if raw.status is PullStatus.FOUND:
            msgs = [MessageExt.from_record(rec, mq.broker_name) for rec in iter_records(raw.body)]
        return msgs, raw.header.next_begin_offset
