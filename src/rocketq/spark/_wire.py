"""Async calls to the name server and brokers that the connector needs, on one event loop.

Built on the client SDK's public wire layer (``rocketq.client.lowlevel``: ``MQClientAPI``, one method per
request code, no policy; ``RouteCache``, the client's route tables) plus the rocketq-private sink codes of
``rocketq.protocol.sink``. Nothing here is picklable or long-lived: the driver and every Spark task open a
``Cluster`` inside ``asyncio`` for the duration of one call or one partition.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from types import TracebackType
from typing import TypeVar

from rocketq.client import SessionCredentials
from rocketq.client.lowlevel import (
    MQClientAPI,
    RawPullResult,
    RemotingClient,
    RouteCache,
    TopicRouteData,
    to_publish_info,
    to_subscribe_info,
    with_default_queue_nums,
)
from rocketq.codes import ResponseCode
from rocketq.errors import BrokerError, RemotingError, TopicNotExistError, error_for_code
from rocketq.protocol.bodies import MessageQueue
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import PULL_FLAG_SUBSCRIPTION, PullMessageRequestHeader
from rocketq.protocol.sink import (
    FIELD_APPLIED,
    FIELD_BATCH_ID,
    FIELD_COUNT,
    FIELD_END,
    FIELD_LAST_BATCH_ID,
    FIELD_SINK_ID,
    FIELD_START,
    SINK_COMMIT_BATCH,
    SINK_QUERY_STATE,
    SINK_STAGE_MESSAGES,
    StagedRange,
    encode_commit_body,
)
from rocketq.protocol.topics import AUTO_CREATE_TOPIC
from rocketq.spark._offsets import QueueKey

log = logging.getLogger("rocketq.spark")

#: Group used for pulls when the reader has no consumerGroup (pulls never commit offsets).
READER_GROUP = "rocketq-spark-reader"
_DEFAULT_TOPIC_QUEUE_NUMS = 4
#: Answers of a broker group between masters: the call is retried on the group's next master.
_FAILOVER_CODES = frozenset({ResponseCode.SERVICE_NOT_AVAILABLE, ResponseCode.SLAVE_NOT_AVAILABLE,
                             ResponseCode.FLUSH_SLAVE_TIMEOUT})  # fmt: skip
_FAILOVER_PAUSE = 0.2

T = TypeVar("T")


class Cluster:
    """Connections to one name server list and the brokers it names, for one event loop."""

    def __init__(self, name_server: str, timeout: float, credentials: SessionCredentials | None = None) -> None:
        self.timeout = timeout
        # with an ACL account, every request (name server and brokers) is signed as the client SDK's are
        self.rc = RemotingClient(connect_timeout=min(timeout, 5.0),
                                 before_request=credentials.sign if credentials else None)  # fmt: skip
        self.api = MQClientAPI(self.rc, [a.strip() for a in name_server.split(";") if a.strip()])
        self.routes = RouteCache()
        #: topics the name server did not know when last asked (asked again only on refresh)
        self._unknown: set[str] = set()

    async def __aenter__(self) -> Cluster:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.rc.close()

    # ------------------------------------------------------------------------------------------ routes

    async def route(self, topic: str, *, refresh: bool = False) -> TopicRouteData | None:
        """The topic's route, or None when the name server does not know the topic."""
        if refresh or (topic not in self._unknown and self.routes.route(topic) is None):
            try:
                route = await self.api.get_topic_route(topic, self.timeout)
            except TopicNotExistError:
                self._unknown.add(topic)
                self.routes.forget(topic)
                return None
            self._unknown.discard(topic)
            self.routes.put(topic, route)
        return self.routes.route(topic)

    async def broker_addr(self, topic: str, broker_name: str) -> str:
        """The master address of ``broker_name`` as a broker of ``topic``, refreshing the route once."""
        await self.route(topic)
        addr = self.routes.master_addr(broker_name, topic=topic)
        if addr is None:
            await self.route(topic, refresh=True)
            addr = self.routes.master_addr(broker_name, topic=topic)
        if addr is None:
            raise error_for_code(ResponseCode.TOPIC_NOT_EXIST,
                                 f"no master address of broker {broker_name!r} for topic {topic!r}")
        return addr

    async def read_queues(self, topic: str) -> list[QueueKey]:
        """The topic's readable queues, sorted; empty when the topic does not exist."""
        route = await self.route(topic, refresh=True)
        if route is None:
            return []
        return sorted((mq.topic, mq.broker_name, mq.queue_id) for mq in to_subscribe_info(topic, route))

    async def publish_queues(self, topic: str) -> list[tuple[QueueKey, str]]:
        """Writable queues with their broker addresses, as a producer sees them (TBW102 for a new topic)."""
        route = await self.route(topic)
        route_topic = topic  # whose cached route names the brokers
        if route is None:
            default = await self.route(AUTO_CREATE_TOPIC)
            if default is None:
                raise error_for_code(ResponseCode.TOPIC_NOT_EXIST,
                                     f"topic {topic!r} does not exist and no broker allows auto-creation")
            route = with_default_queue_nums(default, _DEFAULT_TOPIC_QUEUE_NUMS)
            route_topic = AUTO_CREATE_TOPIC
        out: list[tuple[QueueKey, str]] = []
        for mq in to_publish_info(topic, route).message_queues:
            addr = self.routes.master_addr(mq.broker_name, topic=route_topic)
            if addr is not None:
                out.append(((topic, mq.broker_name, mq.queue_id), addr))
        if not out:
            raise error_for_code(ResponseCode.TOPIC_NOT_EXIST, f"topic {topic!r} has no writable queue")
        return out

    async def on_master(
        self, topic: str, broker_name: str, call: Callable[[str], Awaitable[T]], patience: float
    ) -> T:
        """``call(address)`` on the master of ``broker_name``; when the master does not answer (connection
        failure, a slave's or an unreplicated answer), the route is asked again and the call repeated on the
        master it names, for up to ``patience`` seconds. Only for calls that are safe to repeat."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + patience
        refresh = False
        while True:
            try:
                if refresh:
                    await self.route(topic, refresh=True)
                    if topic != AUTO_CREATE_TOPIC and self.routes.route(topic) is None:
                        await self.route(AUTO_CREATE_TOPIC, refresh=True)
                addr = self.routes.master_addr(broker_name)
                if addr is None:
                    raise error_for_code(ResponseCode.SERVICE_NOT_AVAILABLE, f"broker {broker_name!r} has no master")
                return await call(addr)
            except (RemotingError, OSError, BrokerError) as exc:
                retriable = not isinstance(exc, BrokerError) or exc.code in _FAILOVER_CODES
                if not retriable or loop.time() >= deadline:
                    raise
                log.info("spark.failover_retry broker=%s error=%s", broker_name, exc)
                await asyncio.sleep(_FAILOVER_PAUSE)
                refresh = True

    async def any_replica_addr(self, topic: str, broker_name: str) -> str | None:
        """After a failure: the route asked again; the group's master, else any replica (same queue offsets)."""
        await self.route(topic, refresh=True)
        found = self.routes.subscribe_addr(broker_name, 0, False)
        return found[0] if found else None

    # ----------------------------------------------------------------------------------------- offsets

    async def _queue_call(
        self, key: QueueKey, call: Callable[[str, MessageQueue], Awaitable[T]]
    ) -> T:
        topic, broker, qid = key
        return await call(await self.broker_addr(topic, broker), MessageQueue(topic, broker, qid))

    async def max_offset(self, key: QueueKey) -> int:
        return await self._queue_call(key, lambda a, mq: self.api.get_max_offset(a, mq, self.timeout))

    async def min_offset(self, key: QueueKey) -> int:
        return await self._queue_call(key, lambda a, mq: self.api.get_min_offset(a, mq, self.timeout))

    async def search_offset(self, key: QueueKey, timestamp_ms: int) -> int:
        return await self._queue_call(key, lambda a, mq: self.api.search_offset(a, mq, timestamp_ms, self.timeout))

    async def committed(self, group: str, key: QueueKey) -> int:
        """The group's committed offset, -1 when it has none."""
        try:
            return await self._queue_call(
                key, lambda a, mq: self.api.query_consumer_offset(a, group, mq, self.timeout)
            )
        except BrokerError as exc:
            if exc.code == ResponseCode.QUERY_NOT_FOUND:
                return -1
            raise

    async def commit_offset(self, group: str, key: QueueKey, offset: int) -> None:
        await self._queue_call(
            key, lambda a, mq: self.api.update_consumer_offset(a, group, mq, offset, self.timeout, oneway=False)
        )

    async def gather(self, keys: Iterable[QueueKey], call: Callable[[QueueKey], Awaitable[T]]) -> dict[QueueKey, T]:
        keys = list(keys)
        values = await asyncio.gather(*(call(k) for k in keys))
        return dict(zip(keys, values, strict=True))

    # -------------------------------------------------------------------------------------------- pull

    async def pull_at(
        self, addr: str, key: QueueKey, offset: int, max_nums: int, group: str, expression: str,
        expression_type: str,
    ) -> RawPullResult:
        """PULL_MESSAGE without suspending or committing; the subscription travels with the request."""
        topic, broker, qid = key
        header = PullMessageRequestHeader(
            consumer_group=group,
            topic=topic,
            queue_id=qid,
            queue_offset=offset,
            max_msg_nums=max_nums,
            sys_flag=PULL_FLAG_SUBSCRIPTION,
            commit_offset=0,
            suspend_timeout_millis=0,
            subscription=expression,
            sub_version=0,
            expression_type=expression_type,
        )
        return await self.api.pull_message(addr, header, broker, self.timeout)

    # -------------------------------------------------------------------------------------- sink codes

    async def _sink_call(self, addr: str, code: int, ext: dict[str, str], body: bytes = b"") -> RemotingCommand:
        return await self.api.call(addr, code, ext, self.timeout, body)

    async def stage(self, addr: str, sink_id: str, batch_id: int, body: bytes) -> StagedRange:
        resp = await self._sink_call(addr, SINK_STAGE_MESSAGES, {FIELD_SINK_ID: sink_id,
                                                                 FIELD_BATCH_ID: str(batch_id)}, body)
        ext = resp.ext_fields
        return StagedRange(int(ext[FIELD_START]), int(ext[FIELD_END]), int(ext[FIELD_COUNT]))

    async def commit_batch(self, addr: str, sink_id: str, batch_id: int, ranges: list[StagedRange]) -> bool:
        """Apply the staged ranges as batch ``batch_id``; False when the broker had it already (a replay)."""
        resp = await self._sink_call(addr, SINK_COMMIT_BATCH, {FIELD_SINK_ID: sink_id, FIELD_BATCH_ID: str(batch_id)},
                                     encode_commit_body(ranges))
        return resp.ext_fields.get(FIELD_APPLIED) == "true"

    async def sink_last_batch(self, addr: str, sink_id: str) -> int:
        resp = await self._sink_call(addr, SINK_QUERY_STATE, {FIELD_SINK_ID: sink_id})
        return int(resp.ext_fields[FIELD_LAST_BATCH_ID])


def run(coro_fn: Callable[[], Awaitable[T]]) -> T:
    """Run one coroutine on a fresh event loop (driver-side calls; executors keep a loop per partition)."""

    async def main() -> T:
        return await coro_fn()

    return asyncio.run(main())
