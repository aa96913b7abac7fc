"""Request-reply, transport-neutral: the rules of Java 4.9's ReplyMessageProcessor without its remoting.

A requester (``DefaultMQProducer.request``) sends an ordinary message naming itself in ``REPLY_TO_CLIENT``
(its client id) and ``CORRELATION_ID``; the responder answers with SEND_REPLY_MESSAGE(_V2) to
``<cluster>_REPLY_TOPIC``, the same properties copied over. ``ReplyService.reply``:

1. checks the reply as any send is checked (``SendService.check_target``: permissions, topic rules,
   auto-creation, queue id);
2. finds the requester's connection among the producers' heartbeats by that client id and hands it the reply
   (the transport's ``push``: PUSH_REPLY_MESSAGE_TO_CLIENT on remoting) with ``PUSH_REPLY_TIME`` added;
3. stores the reply when ``storeReplyMessageEnable`` (whether or not the push succeeded, as Java does).

The outcome is SUCCESS only when the requester got the reply (with the stored message's id, or ``"0"`` when
it was not stored); otherwise SYSTEM_ERROR naming why — the responder learns that nobody was waiting.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from rocketq.broker.context import BrokerContext
from rocketq.broker.managers.client_manager import ClientChannel
from rocketq.broker.messaging.send import STORED_CODES, Body, SendOutcome, SendService, code_of_put_status, refused
from rocketq.codes import ResponseCode
from rocketq.protocol.headers import SendMessageRequestHeader
from rocketq.protocol.message import Host, decode_properties, encode_properties
from rocketq.store import StoreMessage

PROP_REPLY_TO_CLIENT = "REPLY_TO_CLIENT"
PROP_PUSH_REPLY_TIME = "PUSH_REPLY_TIME"


@dataclass(frozen=True, slots=True)
class ReplyPush:
    """What the requester is handed: the reply as the responder sent it, with the broker's additions."""

    header: SendMessageRequestHeader
    #: the reply's properties, ``PUSH_REPLY_TIME`` included
    properties: str
    body: bytes
    born_host: Host
    store_host: Host
    store_timestamp: int


#: The transport's delivery of a reply to a client: None when the client took it, else why not.
PushReply = Callable[[ClientChannel, ReplyPush], Awaitable[str | None]]


class ReplyService:
    def __init__(self, ctx: BrokerContext, sends: SendService) -> None:
        self._ctx = ctx
        self._sends = sends

    async def reply(
        self, header: SendMessageRequestHeader, body: Body, born_host: Host, *, remote: str, push: PushReply
    ) -> SendOutcome:
        cfg = self._ctx.config
        target = self._sends.check_target(header, remote=remote)
        if isinstance(target, SendOutcome):
            return target
        if target.created is not None:
            self._ctx.registrar.kick()
        if len(body) > cfg.maxMessageSize:
            return refused(ResponseCode.MESSAGE_ILLEGAL, f"the message body size {len(body)} > {cfg.maxMessageSize}")
        payload = body if type(body) is bytes else bytes(body)
        properties = decode_properties(header.properties or "")
        failure = await self._push(header, properties, payload, born_host, push)
        outcome = SendOutcome(ResponseCode.SUCCESS, None, "0", target.queue_id, 0, topic=header.topic)
        if cfg.storeReplyMessageEnable:
            stored = self._store(header, target.queue_id, properties, payload, born_host)
            if stored is not None:
                outcome = stored
        if failure is not None:
            return SendOutcome(ResponseCode.SYSTEM_ERROR, failure, topic=header.topic)
        return outcome

    async def _push(
        self, header: SendMessageRequestHeader, properties: dict[str, str], body: bytes, born_host: Host,
        push: PushReply,
    ) -> str | None:  # fmt: skip
        client_id = properties.get(PROP_REPLY_TO_CLIENT)
        if not client_id:
            return f"reply message properties[{PROP_REPLY_TO_CLIENT}] is null"
        channel = self._ctx.producers.find_channel(client_id)
        if channel is None:
            return f"push reply message fail, channel of <{client_id}> not found."
        now = int(time.time() * 1000)
        shown = encode_properties({**properties, PROP_PUSH_REPLY_TIME: str(now)})
        return await push(channel, ReplyPush(header, shown, body, born_host, self._ctx.store_host, now))

    def _store(
        self, header: SendMessageRequestHeader, queue_id: int, properties: dict[str, str], body: bytes,
        born_host: Host,
    ) -> SendOutcome | None:  # fmt: skip
        """Store the reply as it came; the stored message's id and offset, or None when the put failed.

        The answer does not wait for a SYNC_FLUSH flush: Java answers a reply by its push alone (a flush
        timeout still counts as stored), so waiting would only delay the same answer."""
        msg = StoreMessage(
            topic=header.topic,
            queue_id=queue_id,
            body=body,
            flag=header.flag,
            properties=dict(properties),
            sys_flag=header.sys_flag,
            born_timestamp=header.born_timestamp,
            born_host=born_host,
            store_host=self._ctx.store_host,
            reconsume_times=header.reconsume_times or 0,
            prepared_transaction_offset=0,
            tags_code=None,
        )
        result = self._ctx.store.put_message(msg)
        code, _remark = code_of_put_status(result.status)
        append = result.append_result
        if append is None or code not in STORED_CODES:
            return None
        return SendOutcome(
            ResponseCode.SUCCESS, None, append.msg_id, queue_id, append.logics_offset,
            append.wrote_offset + append.wrote_bytes, topic=header.topic,
        )  # fmt: skip
