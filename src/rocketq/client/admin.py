"""Administration client (the parts of Java ``DefaultMQAdminExt`` that ``mqadmin`` uses most).

::

    async with AdminClient(namesrv_addr="127.0.0.1:9876") as admin:
        await admin.create_topic("Orders", cluster="DefaultCluster", read_queue_nums=8, write_queue_nums=8)
        for q in await admin.consume_progress("order-service"):
            print(q.message_queue, q.lag)

Topic creation and deletion go to every master of a cluster (or one broker address); everything that needs a
broker finds it through the name server. Broker replies in fastjson's non-standard JSON (object map keys) are
understood.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from rocketq.client._instance import ClientInstance, unique_instance_name
from rocketq.client._offset_id import check_message_id, decode_offset_msg_id
from rocketq.client._uniq_id import id_time_ms
from rocketq.client.acl import AclAccount, AclConfig, AclVersionInfo
from rocketq.client.config import ClientConfig
from rocketq.client.errors import InvalidMessageIdError, NoRouteError
from rocketq.client.ha import ElectResult, ReplicaGroup, controller_error, parse_sync_state_data
from rocketq.client.message import MessageExt, SendResult
from rocketq.codes import ControllerRequestCode, ControllerResponseCode, RequestCode, ResponseCode
from rocketq.errors import BrokerError, ClientError, ProtocolError, RemotingError, error_for_code
from rocketq.protocol import fastjson
from rocketq.protocol.bodies import PERM_READ, PERM_WRITE, MessageQueue, TopicConfig
from rocketq.protocol.headers import SendMessageRequestHeader
from rocketq.protocol.message import PROP_DELAY, decode_record, encode_properties, iter_records
from rocketq.protocol.route import MASTER_ID, TopicRouteData
from rocketq.protocol.topics import AUTO_CREATE_TOPIC, dlq_topic, retry_topic

__all__ = [
    "AdminClient",
    "BrokerInfo",
    "ConsumerConnection",
    "QueueProgress",
    "TopicQueueStatus",
]

log = logging.getLogger("rocketq.client.admin")

LONG_MAX = 2**63 - 1


@dataclass(frozen=True, slots=True)
class TopicQueueStatus:
    """One queue of GET_TOPIC_STATS_INFO."""

    message_queue: MessageQueue
    min_offset: int
    max_offset: int
    last_update_timestamp: int


@dataclass(frozen=True, slots=True)
class QueueProgress:
    """One queue of GET_CONSUME_STATS; ``lag`` = broker offset − consumer offset."""

    message_queue: MessageQueue
    broker_offset: int
    consumer_offset: int
    last_timestamp: int

    @property
    def lag(self) -> int:
        return max(0, self.broker_offset - max(self.consumer_offset, 0))


@dataclass(frozen=True, slots=True)
class ConnectionInfo:
    client_id: str
    client_addr: str
    language: str
    version: int


@dataclass(slots=True)
class ConsumerConnection:
    """GET_CONSUMER_CONNECTION_LIST."""

    connections: list[ConnectionInfo]
    consume_type: str = ""
    message_model: str = ""
    consume_from_where: str = ""
    subscriptions: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class GroupSummary:
    """One consumer group at a glance (mqadmin consumerProgress without ``-g``)."""

    group: str
    count: int = 0  #: clients connected
    min_version: int | None = None  #: the lowest MQVersion ordinal among them
    consume_type: str = ""
    message_model: str = ""
    consume_tps: float = 0.0
    diff_total: int = 0  #: broker offset − consumer offset, summed over the group's queues


@dataclass(slots=True)
class BrokerInfo:
    cluster: str
    broker_name: str
    broker_id: int
    addr: str
    runtime: dict[str, str] = field(default_factory=dict)


class AdminClient:
    def __init__(self, *, namesrv_addr: str | None = None, config: ClientConfig | None = None,
                 timeout: float = 5.0) -> None:  # fmt: skip
        # A private copy: start() may set instance_name, which must not leak into other clients sharing the config.
        self.config = dataclasses.replace(config) if config is not None else ClientConfig()
        if namesrv_addr is not None:
            self.config.namesrv_addr = namesrv_addr
        if self.config.instance_name == "DEFAULT":
            self.config.instance_name = unique_instance_name()
        self.timeout = timeout
        self._instance: ClientInstance | None = None

    @property
    def instance(self) -> ClientInstance:
        if self._instance is None:
            self._instance = ClientInstance(self.config)
        return self._instance

    async def start(self) -> None:
        self.instance  # noqa: B018 - connections are opened lazily

    async def close(self) -> None:
        if self._instance is not None:
            await self._instance.shutdown()
            self._instance = None

    async def __aenter__(self) -> AdminClient:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    @property
    def _api(self) -> Any:
        return self.instance.api

    # -- cluster ------------------------------------------------------------------------------------------

    async def cluster_info(self) -> dict[str, Any]:
        """GET_BROKER_CLUSTER_INFO: ``{"brokerAddrTable": {...}, "clusterAddrTable": {...}}``."""
        return dict(await self._api.get_broker_cluster_info(self.timeout))

    async def brokers(self, cluster: str | None = None, *, runtime: bool = False) -> list[BrokerInfo]:
        """Every broker address known to the name server (optionally of one cluster), with runtime stats."""
        info = await self.cluster_info()
        by_name: dict[str, Any] = info.get("brokerAddrTable") or {}
        clusters: dict[str, list[str]] = info.get("clusterAddrTable") or {}
        out: list[BrokerInfo] = []
        for cl, names in sorted(clusters.items()):
            if cluster is not None and cl != cluster:
                continue
            for name in sorted(names):
                bd = by_name.get(name) or {}
                for bid, addr in sorted((bd.get("brokerAddrs") or {}).items(), key=lambda kv: int(kv[0])):
                    out.append(BrokerInfo(cl, name, int(bid), str(addr)))
        if runtime:

            async def fill(b: BrokerInfo) -> None:
                try:
                    b.runtime = await self.broker_runtime_info(b.addr)
                except (RemotingError, BrokerError) as exc:
                    b.runtime = {"error": str(exc)}

            await asyncio.gather(*(fill(b) for b in out))
        return out

    async def master_addrs(self, cluster: str) -> list[str]:
        addrs = [b.addr for b in await self.brokers(cluster) if b.broker_id == MASTER_ID]
        if not addrs:
            raise ClientError(f"no master broker in cluster {cluster!r}")
        return addrs

    async def broker_runtime_info(self, broker_addr: str) -> dict[str, str]:
        """GET_BROKER_RUNTIME_INFO: the broker's KV table of counters and settings."""
        obj = await self._api.broker_json(broker_addr, RequestCode.GET_BROKER_RUNTIME_INFO, None, self.timeout)
        table = (obj or {}).get("table") or {}
        return {str(k): str(v) for k, v in table.items()}

    # -- topics -------------------------------------------------------------------------------------------

    async def topic_list(self) -> list[str]:
        return sorted(await self._api.get_all_topic_list(self.timeout))

    async def topic_route(self, topic: str) -> TopicRouteData:
        try:
            return await self._api.get_topic_route(topic, self.timeout)  # type: ignore[no-any-return]
        except BrokerError as exc:
            if exc.code == ResponseCode.TOPIC_NOT_EXIST:
                raise await self._api.no_route_error(topic, self.timeout, exc.remark) from exc
            raise

    async def create_topic(
        self,
        topic: str,
        *,
        cluster: str | None = None,
        broker_addr: str | None = None,
        read_queue_nums: int = 8,
        write_queue_nums: int = 8,
        perm: int = PERM_READ | PERM_WRITE,
        order: bool = False,
        topic_filter_type: str = "SINGLE_TAG",
        topic_sys_flag: int = 0,
        wait_for_route: float = 5.0,
    ) -> list[str]:
        """UPDATE_AND_CREATE_TOPIC on one broker or every master of ``cluster``; returns the addresses used.

        Creating an existing topic updates it (Java ``updateTopic`` is the same request). Then waits up to
        ``wait_for_route`` seconds (0: not at all) until the name server routes the topic to those brokers, since
        a broker may register the new topic after answering.
        """
        addrs = await self._targets(cluster, broker_addr)
        tc = TopicConfig(topic, read_queue_nums, write_queue_nums, perm, topic_filter_type, topic_sys_flag, order)
        ext = {
            "defaultTopic": AUTO_CREATE_TOPIC,
            "order": "true" if tc.order else "false",
            "perm": str(tc.perm),
            "readQueueNums": str(tc.read_queue_nums),
            "topic": tc.topic_name,
            "topicFilterType": tc.topic_filter_type,
            "topicSysFlag": str(tc.topic_sys_flag),
            "writeQueueNums": str(tc.write_queue_nums),
        }
        for addr in addrs:
            await self._api.create_topic(addr, ext, self.timeout)
        if wait_for_route > 0:
            await self._wait_for_route(topic, addrs, wait_for_route)
        return addrs

    # -- replication (Java 5's haStatus / getSyncStateSet / electMaster; rocketq.client.ha) ------------------

    async def broker_ha_status(self, broker_addr: str) -> dict[str, Any]:
        """GET_BROKER_HA_STATUS (907): the broker's ``HARuntimeInfo`` (role, connections, offsets)."""
        obj = await self._api.broker_json(broker_addr, RequestCode.GET_BROKER_HA_STATUS, None, self.timeout)
        if not isinstance(obj, dict):
            raise ProtocolError(f"{broker_addr}: GET_BROKER_HA_STATUS answered no HARuntimeInfo")
        return obj

    async def _controller(self, controller: str, code: int, ext: dict[str, str], body: bytes = b"") -> Any:
        resp = await self._api.invoke(controller, self._api.request(code, ext, body), self.timeout)
        if resp.code != ResponseCode.SUCCESS:
            raise controller_error(resp.code, resp.remark, controller)
        return resp

    async def controller_sync_state(self, controller: str, broker_names: list[str]) -> dict[str, ReplicaGroup]:
        """CONTROLLER_GET_SYNC_STATE_DATA: each named group's master, epochs and in-sync set (unknown ones
        are left out)."""
        resp = await self._controller(controller, ControllerRequestCode.CONTROLLER_GET_SYNC_STATE_DATA, {},
                                      json.dumps(broker_names).encode())  # fmt: skip
        return parse_sync_state_data(bytes(resp.body))

    async def controller_elect_master(
        self, controller: str, broker_name: str, broker_id: int, cluster: str = ""
    ) -> ElectResult:
        """CONTROLLER_ELECT_MASTER with ``designateElect=true``: make ``broker_id`` the group's master. A master
        that stays (CONTROLLER_MASTER_STILL_EXIST: it is already ``broker_id``) is ``changed=False``."""
        ext = {"clusterName": cluster, "brokerName": broker_name, "brokerId": str(broker_id),
               "designateElect": "true", "invokeTime": str(int(time.time() * 1000))}  # fmt: skip
        resp = await self._api.invoke(
            controller, self._api.request(ControllerRequestCode.CONTROLLER_ELECT_MASTER, ext), self.timeout
        )
        kept = resp.code == ControllerResponseCode.CONTROLLER_MASTER_STILL_EXIST  # names the master that stays
        if resp.code != ResponseCode.SUCCESS and not kept:
            raise controller_error(resp.code, resp.remark, controller)
        h = resp.ext_fields
        try:
            master = h.get("masterBrokerId")
            return ElectResult(None if master in (None, "") else int(master), h.get("masterAddress") or None,
                               int(h.get("masterEpoch") or 0), int(h.get("syncStateSetEpoch") or 0),
                               changed=not kept)  # fmt: skip
        except ValueError as exc:
            raise ProtocolError(f"bad CONTROLLER_ELECT_MASTER answer from {controller}: {exc}") from None

    # -- ACL (codes 50–54 of a broker with aclEnable=true; rocketq.client.acl) -------------------------------

    async def acl_config(self, broker_addr: str) -> AclConfig:
        """GET_BROKER_CLUSTER_ACL_CONFIG: the broker's global white list and accounts."""
        resp = await self._api.call(broker_addr, RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG, None, self.timeout)
        return AclConfig.decode(bytes(resp.body))

    async def acl_version(self, broker_addr: str) -> AclVersionInfo:
        """GET_BROKER_CLUSTER_ACL_INFO: the broker's ACL data version (and each file's)."""
        resp = await self._api.call(broker_addr, RequestCode.GET_BROKER_CLUSTER_ACL_INFO, None, self.timeout)
        return AclVersionInfo.from_ext(resp.ext_fields)

    async def update_acl_account(self, broker_addr: str, account: AclAccount) -> None:
        """UPDATE_AND_CREATE_ACL_CONFIG: create the account, or update the fields given of an existing one."""
        await self._api.call(broker_addr, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, account.update_header(),
                             self.timeout)  # fmt: skip

    async def delete_acl_account(self, broker_addr: str, access_key: str) -> None:
        """DELETE_ACL_CONFIG."""
        await self._api.call(broker_addr, RequestCode.DELETE_ACL_CONFIG, {"accessKey": access_key}, self.timeout)

    async def update_global_white_addrs(
        self, broker_addr: str, addrs: list[str], acl_file: str | None = None
    ) -> None:
        """UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: replace the global white list (of ``acl_file``, default file)."""
        ext = {"globalWhiteAddrs": ",".join(addrs)}
        if acl_file:
            ext["aclFileFullPath"] = acl_file
        await self._api.call(broker_addr, RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, ext, self.timeout)

    async def acl_targets(self, cluster: str | None = None, broker_addr: str | None = None) -> list[str]:
        """One broker, or every broker (slaves too: each keeps its own ACL file, as mqadmin's ``-c`` reaches
        them) of ``cluster`` or of the only cluster there is."""
        if broker_addr:
            return [broker_addr]
        if cluster is None:
            clusters = (await self.cluster_info()).get("clusterAddrTable") or {}
            if len(clusters) != 1:
                raise ClientError("specify a cluster (-c) or a broker address (-b)")
            cluster = str(next(iter(clusters)))
        addrs = [b.addr for b in await self.brokers(cluster)]
        if not addrs:
            raise ClientError(f"no broker in cluster {cluster!r}")
        return addrs

    async def _wait_for_route(self, topic: str, addrs: list[str], timeout: float) -> None:
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            try:
                route = await self._api.get_topic_route(topic, self.timeout)
                routed = {a for bd in route.broker_datas for a in bd.broker_addrs.values()}
                names = {q.broker_name for q in route.queue_datas}
                if all(a in routed for a in addrs) and names:
                    return
            except BrokerError:
                pass
            if asyncio.get_running_loop().time() >= deadline:
                log.warning("create_topic.route_not_seen topic=%s after=%.1fs", topic, timeout)
                return
            await asyncio.sleep(0.05)

    async def delete_topic(self, topic: str, *, cluster: str | None = None, broker_addr: str | None = None) -> None:
        """DELETE_TOPIC_IN_BROKER on the brokers, then DELETE_TOPIC_IN_NAMESRV on every name server."""
        for addr in await self._targets(cluster, broker_addr):
            await self._api.delete_topic_in_broker(addr, topic, self.timeout)
        for ns in self.config.namesrv_list():
            cmd = self._api.request(RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": topic})
            resp = await self._api.invoke(ns, cmd, self.timeout)
            if resp.code != ResponseCode.SUCCESS:
                raise error_for_code(resp.code, resp.remark)

    async def _targets(self, cluster: str | None, broker_addr: str | None) -> list[str]:
        if broker_addr:
            return [broker_addr]
        if cluster:
            return await self.master_addrs(cluster)
        clusters = (await self.cluster_info()).get("clusterAddrTable") or {}
        if len(clusters) == 1:
            return await self.master_addrs(next(iter(clusters)))
        raise ClientError("specify a cluster (-c) or a broker address (-b)")

    async def topic_status(self, topic: str) -> list[TopicQueueStatus]:
        """GET_TOPIC_STATS_INFO from every broker of the topic's route."""
        route = await self.topic_route(topic)
        out: list[TopicQueueStatus] = []
        for bd in route.broker_datas:
            addr = bd.select_broker_addr()
            if addr is None:
                continue
            obj = await self._api.broker_json(addr, RequestCode.GET_TOPIC_STATS_INFO, {"topic": topic}, self.timeout)
            for mq, v in _mq_table((obj or {}).get("offsetTable")):
                out.append(TopicQueueStatus(mq, int(v.get("minOffset", 0)), int(v.get("maxOffset", 0)),
                                            int(v.get("lastUpdateTimestamp", 0))))  # fmt: skip
        return sorted(out, key=lambda s: s.message_queue)

    # -- groups -------------------------------------------------------------------------------------------

    async def _group_brokers(self, group: str, topic: str | None) -> list[str]:
        """Brokers to ask about a group: those of its retry topic (as Java's examineConsumeStats does), else of
        ``topic``, else every master the name server knows."""
        for t in (retry_topic(group), topic):
            if t is None:
                continue
            try:
                route = await self._api.get_topic_route(t, self.timeout)
            except BrokerError:
                continue
            addrs = [a for bd in route.broker_datas if (a := bd.select_broker_addr())]
            if addrs:
                return addrs
        masters = [b.addr for b in await self.brokers() if b.broker_id == MASTER_ID]
        if not masters:
            raise NoRouteError(retry_topic(group), "no broker to ask about the group")
        return masters

    async def consume_progress(self, group: str, topic: str | None = None) -> list[QueueProgress]:
        """GET_CONSUME_STATS on every broker the group consumes from: per-queue broker / consumer offsets."""
        return (await self._consume_stats(group, topic))[0]

    async def _consume_stats(self, group: str, topic: str | None) -> tuple[list[QueueProgress], float]:
        """GET_CONSUME_STATS of every broker the group consumes from: the queues, and the consume TPS summed."""
        out: list[QueueProgress] = []
        tps = 0.0
        addrs = await self._group_brokers(group, topic)
        failures: list[BrokerError] = []
        for addr in addrs:
            ext = {"consumerGroup": group}
            if topic:
                ext["topic"] = topic
            try:
                obj = await self._api.broker_json(addr, RequestCode.GET_CONSUME_STATS, ext, self.timeout)
            except BrokerError as exc:
                failures.append(exc)
                continue
            tps += float((obj or {}).get("consumeTps", 0) or 0)
            for mq, v in _mq_table((obj or {}).get("offsetTable")):
                out.append(QueueProgress(mq, int(v.get("brokerOffset", 0)), int(v.get("consumerOffset", 0)),
                                         int(v.get("lastTimestamp", 0))))  # fmt: skip
        if failures and len(failures) == len(addrs):
            raise failures[0]
        return sorted(out, key=lambda p: p.message_queue), tps

    async def consumer_groups(self) -> list[str]:
        """Every consumer group the name servers know of, found as Java's mqadmin consumerProgress finds them:
        by the retry topics (``%RETRY%group``) in the topic list."""
        prefix = retry_topic("")
        topics = await self.topic_list()
        return sorted({t[len(prefix) :] for t in topics if t.startswith(prefix) and len(t) > len(prefix)})

    async def group_summary(self, group: str) -> GroupSummary:
        """One row of consumerProgress without ``-g`` (Java's GroupConsumeInfo): connections, consume type,
        model and lowest client version from GET_CONSUMER_CONNECTION_LIST, TPS and total lag from
        GET_CONSUME_STATS. Either may fail (a group offline, a group without offsets): its fields stay empty."""
        summary = GroupSummary(group)
        try:
            progress, summary.consume_tps = await self._consume_stats(group, None)
            summary.diff_total = sum(p.broker_offset - p.consumer_offset for p in progress)
        except (BrokerError, NoRouteError) as exc:
            log.debug("admin.group_summary consume stats of %s: %s", group, exc)
        try:
            cc = await self.consumer_connections(group)
        except (BrokerError, NoRouteError) as exc:
            log.debug("admin.group_summary connections of %s: %s", group, exc)
            return summary
        summary.count = len(cc.connections)
        summary.consume_type = cc.consume_type
        summary.message_model = cc.message_model
        summary.min_version = min((c.version for c in cc.connections), default=None)
        return summary

    async def consumer_connections(self, group: str) -> ConsumerConnection:
        """GET_CONSUMER_CONNECTION_LIST (ConsumerNotOnlineError when nobody of the group is connected)."""
        last: BrokerError | None = None
        obj: Any = None
        for addr in await self._group_brokers(group, None):
            try:
                obj = await self._api.broker_json(addr, RequestCode.GET_CONSUMER_CONNECTION_LIST,
                                                  {"consumerGroup": group}, self.timeout)  # fmt: skip
                break
            except BrokerError as exc:
                last = exc
        if obj is None:
            if last is not None:
                raise last
            obj = {}
        conns = [
            ConnectionInfo(
                str(c.get("clientId", "")),
                str(c.get("clientAddr", "")),
                str(c.get("language", "")),
                int(c.get("version", 0)),
            )
            for c in obj.get("connectionSet") or []
        ]
        subs = {str(t): str((s or {}).get("subString", "")) for t, s in (obj.get("subscriptionTable") or {}).items()}
        return ConsumerConnection(
            sorted(conns, key=lambda c: c.client_id), str(obj.get("consumeType", "")),
            str(obj.get("messageModel", "")), str(obj.get("consumeFromWhere", "")), subs,
        )  # fmt: skip

    async def reset_offset_by_timestamp(
        self, group: str, topic: str, timestamp_ms: int, *, force: bool = True
    ) -> dict[MessageQueue, int]:
        """Move ``group``'s offsets of ``topic`` to the first message stored at or after ``timestamp_ms``.

        Uses INVOKE_BROKER_TO_RESET_OFFSET (the broker resets and tells online consumers). When a broker does
        not support it or the group is offline, falls back to SEARCH_OFFSET_BY_TIMESTAMP + UPDATE_CONSUMER_OFFSET
        per queue (Java's ``resetOffsetByTimestampOld``; only safe while the group's consumers are stopped).
        """
        route = await self.topic_route(topic)
        result: dict[MessageQueue, int] = {}
        for bd in route.broker_datas:
            addr = bd.select_broker_addr()
            if addr is None:
                continue
            ext = {"topic": topic, "group": group, "timestamp": str(timestamp_ms)}
            ext["isForce"] = "true" if force else "false"
            resp = await self._api.invoke(addr, self._api.request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ext),
                                          self.timeout)  # fmt: skip
            if resp.code == ResponseCode.SUCCESS:
                obj = fastjson.loads(resp.body) if resp.body else {}
                for mq, off in _mq_table((obj or {}).get("offsetTable")):
                    result[mq] = int(off)
                continue
            if resp.code not in (ResponseCode.REQUEST_CODE_NOT_SUPPORTED, ResponseCode.CONSUMER_NOT_ONLINE):
                raise error_for_code(resp.code, resp.remark)
            log.info("reset_offset.fallback broker=%s code=%s", bd.broker_name, resp.code)
            for qd in route.queue_datas:
                if qd.broker_name != bd.broker_name:
                    continue
                for qid in range(qd.read_queue_nums):
                    mq = MessageQueue(topic, bd.broker_name, qid)
                    offset = await self._api.search_offset(addr, mq, timestamp_ms, self.timeout)
                    await self._api.update_consumer_offset(addr, group, mq, offset, self.timeout, oneway=False)
                    result[mq] = offset
        return result

    # -- messages -----------------------------------------------------------------------------------------

    async def view_message(self, offset_msg_id: str) -> MessageExt:
        """VIEW_MESSAGE_BY_ID: the message at the commit-log offset encoded in a broker (offset) message id."""
        addr, offset = decode_offset_msg_id(offset_msg_id)  # InvalidMessageIdError says what else it is
        body = await self._api.view_message(addr, offset, self.timeout)
        return MessageExt.from_record(decode_record(body))

    async def query_message_by_key(
        self, topic: str, key: str, *, max_num: int = 64, begin_ms: int = 0, end_ms: int = LONG_MAX,
        uniq_key: bool = False,
    ) -> list[MessageExt]:  # fmt: skip
        """QUERY_MESSAGE on every broker of the topic; keeps the messages whose key (or msg id) really matches."""
        route = await self.topic_route(topic)
        found: list[MessageExt] = []
        for bd in route.broker_datas:
            addr = bd.select_broker_addr()
            if addr is None:
                continue
            try:
                _, body = await self._api.query_message(addr, topic, key, max_num, begin_ms, end_ms, self.timeout * 3,
                                                        uniq_key=uniq_key)  # fmt: skip
            except BrokerError as exc:
                if exc.code == ResponseCode.QUERY_NOT_FOUND:
                    continue
                raise
            for rec in iter_records(body):
                msg = MessageExt.from_record(rec, bd.broker_name)
                if uniq_key:
                    if msg.msg_id == key:
                        found.append(msg)
                elif msg.topic == topic and key in msg.keys:
                    found.append(msg)
        if uniq_key and len(found) > 1:
            found = [min(found, key=lambda m: m.store_timestamp)]
        return found

    async def query_message_by_id(self, msg_id: str, topic: str | None = None) -> list[MessageExt]:
        """A broker offset id is looked up directly; otherwise ``msg_id`` is a UNIQ_KEY searched in ``topic``.

        Without ``topic`` a client id is refused (InvalidMessageIdError, a ValueError), as is anything that is not a
        message id at all (with or without ``topic``)."""
        check_message_id(msg_id)
        try:
            return [await self.view_message(msg_id)]
        except InvalidMessageIdError:
            if topic is None:
                raise
        except (ProtocolError, BrokerError, RemotingError) as exc:
            if topic is None:
                raise ClientError(
                    f"{msg_id} is not a readable offset message id ({exc}); give the topic to search it as a client "
                    "message id"
                ) from exc
        try:
            begin = max(0, id_time_ms(msg_id) - 1000)
        except ValueError:
            begin = 0
        return await self.query_message_by_key(topic, msg_id, max_num=32, begin_ms=begin, uniq_key=True)

    async def resend_dead_letter(self, group: str, msg_id: str) -> SendResult:
        """Send a message of ``%DLQ%{group}`` back to its group.

        It is stored again under ``%RETRY%{group}`` (on the broker that holds the dead letter) with its
        reconsume count reset, so the group's consumers receive it once more — with its original topic,
        which they restore from ``RETRY_TOPIC``. ``msg_id`` is the client message id or the offset id.
        """
        dlq = dlq_topic(group)
        found = [m for m in await self.query_message_by_id(msg_id, topic=dlq) if m.topic == dlq]
        if not found:
            raise ClientError(f"message {msg_id} is not a dead letter of group {group!r} ({dlq})")
        msg = found[0]
        props = dict(msg.properties)
        props.pop(PROP_DELAY, None)
        topic = retry_topic(group)
        header = SendMessageRequestHeader(
            producer_group="CLIENT_INNER_PRODUCER",
            topic=topic,
            default_topic=AUTO_CREATE_TOPIC,
            default_topic_queue_nums=1,
            queue_id=0,
            sys_flag=0,
            born_timestamp=int(time.time() * 1000),
            flag=msg.flag,
            properties=encode_properties(props),
            reconsume_times=0,
        )
        addr = f"{msg.store_host[0]}:{msg.store_host[1]}"
        resp = await self._api.invoke(addr, self._api.send_request(header, msg.broker_name, msg.body), self.timeout)
        mq = MessageQueue(topic, msg.broker_name, 0)
        result: SendResult = self._api.process_send_response(resp, addr, mq, msg.msg_id)
        return result


def _mq_table(table: Any) -> list[tuple[MessageQueue, Any]]:
    """A MessageQueue-keyed table in fastjson's object-key form, or as a list of ``{"mq": …, …}`` entries."""
    out: list[tuple[MessageQueue, Any]] = []
    if isinstance(table, dict):
        for k, v in table.items():
            try:
                out.append((fastjson.mq_from_key(k), v))
            except (ProtocolError, ValueError) as exc:
                log.debug("mq_table.bad_key key=%r error=%s", k, exc)
    elif isinstance(table, list):
        for e in table:
            if isinstance(e, dict) and "mq" in e:
                out.append((MessageQueue.from_json(e["mq"]), e))
            elif isinstance(e, list | tuple) and len(e) == 2:
                out.append((MessageQueue.from_json(e[0]), e[1]))
    return out
