"""One client process-endpoint (Java ``MQClientInstance``): connections, routes, heartbeats, scheduled work.

Each Producer / PushConsumer / LitePullConsumer owns one ``ClientInstance`` (its client id is unique, as
Java's is after ``changeInstanceNameToPID``). The instance

* keeps its ``RouteCache`` (routes by topic, broker addresses by name) fresh: on demand and every
  ``poll_name_server_interval``;
* sends HEART_BEAT every ``heartbeat_broker_interval`` — to every broker when a consumer is registered,
  to masters only otherwise — and right away after a subscription or rebalance change;
* commits consumer offsets every ``persist_consumer_offset_interval``;
* runs the rebalance loop: every ``rebalance_interval`` of its consumers, or at once on
  NOTIFY_CONSUMER_IDS_CHANGED; sooner (``rebalance_retry_interval``, doubling) while a subscribed topic is
  unsettled — no route yet, or its broker does not know the group's consumers yet;
* serves the broker → client requests (CHECK_TRANSACTION_STATE, NOTIFY_CONSUMER_IDS_CHANGED,
  RESET_CONSUMER_CLIENT_OFFSET, GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Coroutine, Iterable
from typing import Any, Protocol

from rocketq.client import _jstack
from rocketq.client._api import MQClientAPI
from rocketq.client._route import TopicPublishInfo, to_publish_info
from rocketq.client._route_cache import RouteCache
from rocketq.client._route_refresh import FailureRefresh
from rocketq.client._tasks import TaskSet
from rocketq.client.config import ClientConfig
from rocketq.client.errors import BrokerNotFoundError
from rocketq.client.message import MessageExt
from rocketq.codes import RequestCode, ResponseCode
from rocketq.errors import BrokerError, ClientError, ProtocolError, RemotingError
from rocketq.protocol import fastjson
from rocketq.protocol.bodies import (
    ConsumerData,
    HeartbeatData,
    MessageQueue,
    SubscriptionData,
    dumps,
)
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import CheckTransactionStateRequestHeader, ResetOffsetRequestHeader
from rocketq.protocol.message import decode_record
from rocketq.protocol.route import MASTER_ID, to_subscribe_info, with_default_queue_nums
from rocketq.protocol.topics import AUTO_CREATE_TOPIC, RETRY_PREFIX
from rocketq.remoting.client import RemotingClient
from rocketq.remoting.connection import Connection
from rocketq.remoting.server import RemotingDispatcher

log = logging.getLogger("rocketq.client.instance")

CLIENT_INNER_PRODUCER_GROUP = "CLIENT_INNER_PRODUCER"


class ProducerInner(Protocol):
    group: str

    def publish_topics(self) -> Iterable[str]: ...

    def is_publish_topic_need_update(self, topic: str) -> bool: ...

    def update_topic_publish_info(self, topic: str, info: TopicPublishInfo) -> None: ...

    async def check_transaction_state(
        self, addr: str, msg: MessageExt, header: CheckTransactionStateRequestHeader
    ) -> None: ...


class ConsumerInner(Protocol):
    group: str
    rebalance_interval: float

    @property
    def consume_type(self) -> str: ...

    @property
    def message_model(self) -> str: ...

    @property
    def consume_from_where(self) -> str: ...

    def subscriptions(self) -> list[SubscriptionData]: ...

    def update_topic_subscribe_info(self, topic: str, mqs: set[MessageQueue]) -> None: ...

    def is_subscribe_topic_need_update(self, topic: str) -> bool: ...

    async def do_rebalance(self) -> None: ...

    async def persist_consumer_offset(self) -> None: ...

    async def reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None: ...

    def running_info(self) -> dict[str, Any]: ...

    async def consume_message_directly(self, msg: MessageExt, broker_name: str | None) -> dict[str, Any]: ...


def unique_instance_name() -> str:
    """Java ``changeInstanceNameToPID``: ``<pid>#<nanotime>``."""
    return f"{os.getpid()}#{time.monotonic_ns()}"


class ClientInstance:
    def __init__(self, config: ClientConfig) -> None:
        self.config = config
        self.client_id = config.build_client_id()
        self.dispatcher = RemotingDispatcher("client")
        tls = config.tls.context() if config.tls is not None else None
        credentials = config.credentials()
        self.remoting = RemotingClient(self.dispatcher, connect_timeout=config.connect_timeout, tls=tls,
                                       before_request=credentials.sign if credentials else None)  # fmt: skip
        self.api = MQClientAPI(self.remoting, config.namesrv_list(), config.language)
        self.routes = RouteCache()
        self.broker_version_table: dict[str, dict[str, int]] = {}
        self.producers: dict[str, ProducerInner] = {}
        self.consumers: dict[str, ConsumerInner] = {}
        self.tasks = TaskSet(log)
        self._namesrv_lock = asyncio.Lock()
        self._heartbeat_lock = asyncio.Lock()
        self._rebalance_wakeup = asyncio.Event()
        self._unsettled: set[str] = set()  # subscribed topics the last rebalance could not assign
        self._started = False
        self.start_timestamp = int(time.time() * 1000)
        self._register_processors()
        #: routes fetched again when a broker cannot be reached (a dead master), debounced per topic
        self.failure_refresh = FailureRefresh(
            self.update_topic_route, self._spawn_refresh, config.failure_route_refresh_interval
        )
        if config.failure_route_refresh_interval > 0:
            self.remoting.on_connect_failed = self.broker_unreachable
            self.dispatcher.close_listeners.append(lambda conn: self.broker_unreachable(conn.remote))

    @property
    def timeout(self) -> float:
        return self.config.mq_client_api_timeout

    # -- lifecycle ----------------------------------------------------------------------------------------

    async def start(self) -> None:
        if self._started:
            return
        self._started = True
        cfg = self.config
        t = self.tasks
        t.every(lambda: cfg.poll_name_server_interval, self._update_all_routes, "route-refresh", 0.01)
        t.every(lambda: cfg.heartbeat_broker_interval, self._heartbeat_round, "heartbeat", 1.0)
        t.every(lambda: cfg.persist_consumer_offset_interval, self.persist_all_consumer_offsets, "offset-persist",
                cfg.persist_consumer_offset_interval)  # fmt: skip
        t.spawn(self._rebalance_loop(), "rebalance")

    async def shutdown(self) -> None:
        if not self._started:
            await self.remoting.close()
            return
        await self.tasks.aclose()
        await self.remoting.close()
        self._started = False

    # -- registration -------------------------------------------------------------------------------------

    def register_producer(self, producer: ProducerInner) -> None:
        if producer.group in self.producers:
            raise ClientError(f"the producer group {producer.group!r} is already registered in this client")
        self.producers[producer.group] = producer

    def register_consumer(self, consumer: ConsumerInner) -> None:
        if consumer.group in self.consumers:
            raise ClientError(f"the consumer group {consumer.group!r} is already registered in this client")
        self.consumers[consumer.group] = consumer

    async def unregister_producer(self, group: str) -> None:
        self.producers.pop(group, None)
        await self._unregister_client(group, None)

    async def unregister_consumer(self, group: str) -> None:
        self.consumers.pop(group, None)
        await self._unregister_client(None, group)

    async def _unregister_client(self, producer_group: str | None, consumer_group: str | None) -> None:
        async def one(addr: str) -> None:
            try:
                await self.api.unregister_client(addr, self.client_id, producer_group, consumer_group, self.timeout)
                log.info("unregister.complete addr=%s producer=%s consumer=%s", addr, producer_group, consumer_group)
            except (RemotingError, BrokerError) as exc:
                log.warning("unregister.failed addr=%s error=%s", addr, exc)

        await asyncio.gather(*(one(addr) for _, _, addr in self.routes.all_broker_addrs()))

    # -- routes -------------------------------------------------------------------------------------------

    async def _update_all_routes(self) -> None:
        topics: set[str] = set()
        for c in list(self.consumers.values()):
            topics.update(s.topic for s in c.subscriptions())
        for p in list(self.producers.values()):
            topics.update(p.publish_topics())
        for topic in topics:
            try:
                await self.update_topic_route(topic)
            except (RemotingError, BrokerError, ClientError, ProtocolError) as exc:
                log.warning("route.refresh_failed topic=%s error=%s", topic, exc)

    async def update_topic_route(
        self, topic: str, *, is_default: bool = False, create_topic_key: str = AUTO_CREATE_TOPIC,
        default_topic_queue_nums: int = 4,
    ) -> bool:
        """Fetch the route of ``topic`` (or, ``is_default``, of ``create_topic_key`` shaped for ``topic``).

        Returns True when the tables changed. A topic the name server does not know returns False; transport
        errors propagate.
        """
        async with self._namesrv_lock:
            try:
                if is_default:
                    route = await self.api.get_topic_route(create_topic_key, self.timeout)
                    route = with_default_queue_nums(route, default_topic_queue_nums)
                else:
                    route = await self.api.get_topic_route(topic, self.timeout)
            except BrokerError as exc:
                if not topic.startswith(RETRY_PREFIX) and topic != AUTO_CREATE_TOPIC:
                    log.debug("route.missing topic=%s error=%s", topic, exc)
                return False
            old = self.routes.route(topic)
            changed = old != route or self._need_update_route(topic)
            if not changed:
                return False
            self.routes.learn_brokers(route)
            if self.producers:
                info = to_publish_info(topic, route)
                info.have_topic_router_info = True
                for p in list(self.producers.values()):
                    p.update_topic_publish_info(topic, info)
            if self.consumers:
                mqs = to_subscribe_info(topic, route)
                for c in list(self.consumers.values()):
                    c.update_topic_subscribe_info(topic, mqs)
            self.routes.remember(topic, route)
            log.info("route.changed topic=%s queues=%s", topic, [q.to_json() for q in route.queue_datas])
            return True

    def broker_unreachable(self, addr: str) -> None:
        """A connection to ``addr`` failed or was lost: refresh every route that names it."""
        topics = [
            topic for topic, route in list(self.routes.topic_route_table.items())
            if any(addr in bd.broker_addrs.values() for bd in route.broker_datas)
        ]  # fmt: skip
        if topics:
            self.failure_refresh.trigger(topics)

    def _spawn_refresh(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        if not self._started or self.tasks.closed:  # a shutdown closes every connection: nothing to refresh
            coro.close()
            return
        self.tasks.spawn(coro, name)

    def _need_update_route(self, topic: str) -> bool:
        return any(p.is_publish_topic_need_update(topic) for p in self.producers.values()) or any(
            c.is_subscribe_topic_need_update(topic) for c in self.consumers.values()
        )

    def find_broker_address_in_publish(self, broker_name: str) -> str | None:
        return self.routes.master_addr(broker_name)

    def find_broker_address_in_subscribe(
        self, broker_name: str, broker_id: int = MASTER_ID, only_this_broker: bool = False
    ) -> tuple[str, bool] | None:
        """(address, is_slave) of ``broker_id`` (or the next slave id, or any when not ``only_this_broker``)."""
        return self.routes.subscribe_addr(broker_name, broker_id, only_this_broker)

    async def find_broker_address_or_update(self, broker_name: str, topic: str) -> str:
        """Master address for broker ``broker_name``, refreshing ``topic``'s route once if it is unknown."""
        addr = self.find_broker_address_in_publish(broker_name)
        if addr is None:
            await self.update_topic_route(topic)
            addr = self.find_broker_address_in_publish(broker_name)
        if addr is None:
            raise BrokerNotFoundError(broker_name)
        return addr

    def find_broker_addr_by_topic(self, topic: str) -> str | None:
        return self.routes.any_broker_addr(topic)

    async def find_consumer_id_list(self, topic: str, group: str) -> list[str] | None:
        addr = self.find_broker_addr_by_topic(topic)
        if addr is None:
            await self.update_topic_route(topic)
            addr = self.find_broker_addr_by_topic(topic)
        if addr is None:
            return None
        try:
            return await self.api.get_consumer_id_list(addr, group, self.timeout)
        except (RemotingError, BrokerError) as exc:
            log.warning("consumer_ids.failed addr=%s group=%s error=%s", addr, group, exc)
            return None

    # -- heartbeat ----------------------------------------------------------------------------------------

    def prepare_heartbeat(self) -> HeartbeatData:
        consumers = [
            ConsumerData(
                group_name=c.group,
                consume_type=c.consume_type,
                message_model=c.message_model,
                consume_from_where=c.consume_from_where,
                subscriptions=list(c.subscriptions()),
            )
            for c in self.consumers.values()
        ]
        return HeartbeatData(self.client_id, list(self.producers), consumers)

    async def _heartbeat_round(self) -> None:
        self._clean_offline_brokers()
        await self.send_heartbeat_to_all_brokers()

    async def send_heartbeat_to_all_brokers(self) -> None:
        async with self._heartbeat_lock:
            data = self.prepare_heartbeat()
            if not data.producer_groups and not data.consumers:
                return
            consumer_empty = not data.consumers
            targets = [
                (name, addr)
                for name, bid, addr in self.routes.all_broker_addrs()
                if addr and not (consumer_empty and bid != MASTER_ID)
            ]

            async def one(name: str, addr: str) -> None:
                try:
                    version = await self.api.send_heartbeat(addr, data, self.timeout)
                    self.broker_version_table.setdefault(name, {})[addr] = version
                except (RemotingError, BrokerError) as exc:
                    log.info("heartbeat.failed broker=%s addr=%s error=%s", name, addr, exc)

            await asyncio.gather(*(one(n, a) for n, a in targets))

    def _clean_offline_brokers(self) -> None:
        for name in self.routes.clean_offline_brokers():
            self.broker_version_table.pop(name, None)

    async def check_client_in_broker(self) -> None:
        """CHECK_CLIENT_CONFIG for every non-TAG subscription (the broker validates the SQL92 expression)."""
        for c in list(self.consumers.values()):
            for sub in c.subscriptions():
                if sub.expression_type == "TAG":
                    continue
                addr = self.find_broker_addr_by_topic(sub.topic)
                if addr is not None:
                    await self.api.check_client_config(addr, c.group, self.client_id, sub, self.timeout)

    # -- consumers: rebalance and offsets -------------------------------------------------------------------

    def rebalance_immediately(self) -> None:
        self._rebalance_wakeup.set()

    def note_unsettled(self, topic: str) -> None:
        """A rebalance could not assign ``topic`` yet (no route, or no consumer ids): retry it soon."""
        self._unsettled.add(topic)

    async def _rebalance_loop(self) -> None:
        retry = self.config.rebalance_retry_interval
        while True:
            interval = min((c.rebalance_interval for c in self.consumers.values()), default=20.0)
            if self._unsettled:  # a topic created after the consumer started: look again soon, backing off
                interval, retry = min(interval, retry), min(retry * 2, interval)
            else:
                retry = self.config.rebalance_retry_interval
            try:
                async with asyncio.timeout(interval):
                    await self._rebalance_wakeup.wait()
            except TimeoutError:
                pass
            self._rebalance_wakeup.clear()
            await self.do_rebalance()

    async def do_rebalance(self) -> None:
        self._unsettled.clear()
        for c in list(self.consumers.values()):
            try:
                await c.do_rebalance()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("rebalance.failed group=%s", c.group)

    async def persist_all_consumer_offsets(self) -> None:
        for c in list(self.consumers.values()):
            try:
                await c.persist_consumer_offset()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("offset.persist_failed group=%s", c.group)

    # -- MQAdminImpl-style helpers ------------------------------------------------------------------------

    async def max_offset(self, mq: MessageQueue) -> int:
        addr = await self.find_broker_address_or_update(mq.broker_name, mq.topic)
        return await self.api.get_max_offset(addr, mq, self.timeout)

    async def min_offset(self, mq: MessageQueue) -> int:
        addr = await self.find_broker_address_or_update(mq.broker_name, mq.topic)
        return await self.api.get_min_offset(addr, mq, self.timeout)

    async def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        addr = await self.find_broker_address_or_update(mq.broker_name, mq.topic)
        return await self.api.search_offset(addr, mq, timestamp_ms, self.timeout)

    async def earliest_msg_store_time(self, mq: MessageQueue) -> int:
        addr = await self.find_broker_address_or_update(mq.broker_name, mq.topic)
        return await self.api.get_earliest_msg_storetime(addr, mq, self.timeout)

    async def fetch_subscribe_message_queues(self, topic: str) -> set[MessageQueue]:
        route = await self.api.get_topic_route(topic, self.timeout)
        self.routes.learn_brokers(route)
        mqs = to_subscribe_info(topic, route)
        if not mqs:
            raise ClientError(f"can not find message queue for topic {topic!r}")
        return mqs

    # -- broker → client requests -------------------------------------------------------------------------

    def _register_processors(self) -> None:
        d = self.dispatcher
        d.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, self._on_consumer_ids_changed)
        d.register(RequestCode.CHECK_TRANSACTION_STATE, self._on_check_transaction_state)
        d.register(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, self._on_reset_offset)
        d.register(RequestCode.GET_CONSUMER_RUNNING_INFO, self._on_running_info)
        d.register(RequestCode.CONSUME_MESSAGE_DIRECTLY, self._on_consume_directly)

    def _on_consumer_ids_changed(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
        log.info("consumer_ids.changed group=%s remote=%s", cmd.ext_fields.get("consumerGroup"), conn.remote)
        self.rebalance_immediately()
        return None

    async def _on_check_transaction_state(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
        try:
            header = CheckTransactionStateRequestHeader.from_ext(cmd.ext_fields)
            msg = MessageExt.from_record(decode_record(cmd.body))
        except Exception as exc:
            log.warning("check_transaction.bad_request remote=%s error=%s", conn.remote, exc)
            return None
        group = msg.properties.get("PGROUP")
        producer = self.producers.get(group) if group else None
        if producer is None:
            log.warning("check_transaction.no_producer group=%s", group)
            return None
        await producer.check_transaction_state(conn.remote, msg, header)
        return None

    async def _on_reset_offset(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
        try:
            header = ResetOffsetRequestHeader.from_ext(cmd.ext_fields)
            offsets = parse_reset_offset_body(cmd.body) if cmd.body else {}
        except Exception as exc:
            log.warning("reset_offset.bad_request remote=%s error=%s", conn.remote, exc)
            return None
        consumer = self.consumers.get(header.group)
        if consumer is not None:
            await consumer.reset_offset(header.topic, offsets)
        return None

    def _on_running_info(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        group = cmd.ext_fields.get("consumerGroup", "")
        consumer = self.consumers.get(group)
        if consumer is None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"The Consumer Group <{group}> not exist in this consumer")
        info = consumer.running_info()
        if cmd.ext_fields.get("jstackEnable", "").lower() == "true":  # Java: the stacks of every thread
            info["jstack"] = _jstack.dump()
        return cmd.response(ResponseCode.SUCCESS, body=encode_running_info(info))

    async def _on_consume_directly(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        group = cmd.ext_fields.get("consumerGroup", "")
        consumer = self.consumers.get(group)
        if consumer is None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"The Consumer Group <{group}> not exist in this consumer")
        msg = MessageExt.from_record(decode_record(cmd.body))
        result = await consumer.consume_message_directly(msg, cmd.ext_fields.get("brokerName"))
        return cmd.response(ResponseCode.SUCCESS, body=dumps(result))



def parse_reset_offset_body(body: bytes | bytearray | memoryview) -> dict[MessageQueue, int]:
    """ResetOffsetBody (Java: object-keyed ``offsetTable``) or ResetOffsetBodyForC (array of entries)."""
    obj = fastjson.loads(body)
    table = obj.get("offsetTable") if isinstance(obj, dict) else None
    out: dict[MessageQueue, int] = {}
    if isinstance(table, dict):
        for key, value in table.items():
            out[fastjson.mq_from_key(key)] = int(value)
    elif isinstance(table, list):
        for entry in table:
            out[MessageQueue.from_json(entry)] = int(entry["offset"])
    return out


def encode_running_info(info: dict[str, Any]) -> bytes:
    """ConsumerRunningInfo as fastjson writes it: ``mqTable`` keyed by MessageQueue objects."""
    mq_table: dict[MessageQueue, Any] = info.pop("mqTable", {})
    rest = dumps(info).decode()
    entries = ",".join(
        f"{dumps(mq.to_json()).decode()}:{dumps(v).decode()}" for mq, v in sorted(mq_table.items())
    )
    return (rest[:-1] + ("," if rest != "{}" else "") + f'"mqTable":{{{entries}}}}}').encode()
