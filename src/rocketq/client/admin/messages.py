"""Messages: by offset id, key or message id; dead letters sent back (mqadmin queryMsgById/ByKey, resendDLQ)."""

from __future__ import annotations

import logging
import time

from rocketq.client._offset_id import check_message_id, decode_offset_msg_id
from rocketq.client._uniq_id import id_time_ms
from rocketq.client.admin._base import LONG_MAX, AdminBase
from rocketq.client.errors import InvalidMessageIdError
from rocketq.client.message import MessageExt, SendResult
from rocketq.codes import ResponseCode
from rocketq.errors import BrokerError, ClientError, ProtocolError, RemotingError
from rocketq.protocol.bodies import MessageQueue
from rocketq.protocol.headers import SendMessageRequestHeader
from rocketq.protocol.message import PROP_DELAY, decode_record, encode_properties, iter_records
from rocketq.protocol.topics import AUTO_CREATE_TOPIC, dlq_topic, retry_topic

log = logging.getLogger("rocketq.client.admin")


class MessageAdmin(AdminBase):
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
