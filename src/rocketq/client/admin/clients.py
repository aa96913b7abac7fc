"""The clients themselves: producer connections, a consumer's running info, consuming one message directly
(mqadmin producerConnection, producer, consumerStatus, queryMsgById -g -d)."""

from __future__ import annotations

import logging
from typing import Any

from rocketq.client._offset_id import decode_offset_msg_id
from rocketq.client.admin._types import ConnectionInfo, connection_set
from rocketq.client.admin.messages import MessageAdmin
from rocketq.client.errors import InvalidMessageIdError
from rocketq.codes import RequestCode
from rocketq.errors import BrokerError, ClientError, ProtocolError
from rocketq.protocol.route import MASTER_ID

log = logging.getLogger("rocketq.client.admin")


class ClientsAdmin(MessageAdmin):
    async def producer_connections(self, group: str, topic: str | None = None) -> list[ConnectionInfo]:
        """GET_PRODUCER_CONNECTION_LIST: the producers of ``group`` connected to the brokers of ``topic`` (Java
        asks the first broker of the route that answers), or to any master without a topic. An unknown group is
        the broker's refusal (BrokerError)."""
        if topic is not None:
            route = await self.topic_route(topic)
            addrs = [a for bd in route.broker_datas if (a := bd.select_broker_addr())]
        else:
            addrs = [b.addr for b in await self.brokers() if b.broker_id == MASTER_ID]
        found: dict[str, ConnectionInfo] = {}
        last: BrokerError | None = None
        for addr in addrs:
            try:
                obj = await self._api.broker_json(addr, RequestCode.GET_PRODUCER_CONNECTION_LIST,
                                                  {"producerGroup": group}, self.timeout)  # fmt: skip
            except BrokerError as exc:
                last = exc
                continue
            for c in connection_set(obj):
                found.setdefault(c.client_id + "@" + c.client_addr, c)
            if topic is not None:
                break
        if not found and last is not None:
            raise last
        return sorted(found.values(), key=lambda c: (c.client_id, c.client_addr))

    async def all_producers(self, broker_addr: str | None = None) -> dict[str, dict[str, list[dict[str, Any]]]]:
        """GET_ALL_PRODUCER_INFO of one broker or every master: broker address → producer group → its clients
        (Java's ProducerInfo fields: clientId, remoteIP, language, version, lastUpdateTimestamp)."""
        addrs = [broker_addr] if broker_addr else [b.addr for b in await self.brokers() if b.broker_id == MASTER_ID]
        out: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for addr in addrs:
            obj = await self._api.broker_json(addr, RequestCode.GET_ALL_PRODUCER_INFO, None, self.timeout)
            data = (obj or {}).get("data") or {}
            out[addr] = {str(g): [dict(p) for p in ps if isinstance(p, dict)] for g, ps in sorted(data.items())}
        return out

    async def consumer_running_info(self, group: str, client_id: str, *, jstack: bool = False) -> dict[str, Any]:
        """GET_CONSUMER_RUNNING_INFO, passed by a broker of the group to the consumer ``client_id``: its
        ConsumerRunningInfo (properties, subscriptions, per-queue process state ``mqTable``, ``statusTable`` of
        RT/TPS; with ``jstack`` the thread dump in ``jstack``) as Java's JSON (``mqTable``'s MessageQueue keys in
        fastjson's object-key form: read them with ``mq_table``)."""
        ext = {"consumerGroup": group, "clientId": client_id, "jstackEnable": "true" if jstack else "false"}
        last: BrokerError | None = None
        for addr in await self._group_brokers(group, None):
            try:
                obj = await self._api.broker_json(addr, RequestCode.GET_CONSUMER_RUNNING_INFO, ext, self.timeout * 3)
            except BrokerError as exc:
                last = exc
                continue
            if not isinstance(obj, dict):
                raise ProtocolError(f"{addr}: GET_CONSUMER_RUNNING_INFO answered no ConsumerRunningInfo")
            return obj
        if last is not None:
            raise last
        raise ClientError(f"no broker to ask about consumer {client_id} of group {group!r}")

    async def consume_message_directly(
        self, group: str, client_id: str, msg_id: str, topic: str | None = None
    ) -> dict[str, Any]:
        """CONSUME_MESSAGE_DIRECTLY: the broker holding the message hands it to consumer ``client_id``'s
        listener; its ConsumeMessageDirectlyResult (``consumeResult``, ``remark``, ``spentTimeMills``, ...).
        ``msg_id`` is the offset id, or a client id searched in ``topic``."""
        try:
            addr, _ = decode_offset_msg_id(msg_id)
            offset_id = msg_id
        except (InvalidMessageIdError, ValueError):
            if topic is None:
                raise ClientError(f"{msg_id} is not an offset message id: give the topic to find it") from None
            found = await self.query_message_by_id(msg_id, topic)
            if not found:
                raise ClientError(f"no message {msg_id} in topic {topic!r}") from None
            offset_id = found[0].offset_msg_id
            addr, _ = decode_offset_msg_id(offset_id)
        ext = {"consumerGroup": group, "clientId": client_id, "msgId": offset_id}
        obj = await self._api.broker_json(addr, RequestCode.CONSUME_MESSAGE_DIRECTLY, ext, self.timeout * 3)
        if not isinstance(obj, dict):
            raise ProtocolError(f"{addr}: CONSUME_MESSAGE_DIRECTLY answered no ConsumeMessageDirectlyResult")
        return obj
