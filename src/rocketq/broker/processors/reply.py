"""SEND_REPLY_MESSAGE (324) and SEND_REPLY_MESSAGE_V2 (325): the remoting front of ``ReplyService``.

The reply reaches the requester as PUSH_REPLY_MESSAGE_TO_CLIENT (326), a request the broker sends on the
requester's own connection and whose answer it waits for (Java's ``Broker2Client.callClient``, 10 s).
"""

from __future__ import annotations

import logging

from rocketq.broker.context import BrokerContext
from rocketq.broker.managers.client_manager import ClientChannel
from rocketq.broker.messaging.reply import ReplyPush, ReplyService
from rocketq.codes import RequestCode, ResponseCode
from rocketq.errors import RocketQError
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import ReplyMessageRequestHeader, SendMessageRequestHeader, send_header_from_v2
from rocketq.remoting.connection import Connection

log = logging.getLogger(__name__)

#: how long the requester's client may take to take a reply (Java: 10 s)
PUSH_TIMEOUT = 10.0


class ReplyProcessor:
    def __init__(self, ctx: BrokerContext, service: ReplyService) -> None:
        self._ctx = ctx
        self._service = service

    def register(self) -> None:
        self._ctx.gate.register(RequestCode.SEND_REPLY_MESSAGE, self.process)
        self._ctx.gate.register(RequestCode.SEND_REPLY_MESSAGE_V2, self.process)

    async def process(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
        if cmd.code == RequestCode.SEND_REPLY_MESSAGE:
            header = SendMessageRequestHeader.from_ext(cmd.ext_fields)
        else:
            header = send_header_from_v2(cmd.ext_fields)
        outcome = await self._service.reply(header, cmd.body, conn.remote_host, remote=conn.remote, push=self._push)
        cfg = self._ctx.config
        # Java adds these to every send response; Java clients dereference the map unconditionally.
        fields = {"MSG_REGION": cfg.regionId, "TRACE_ON": "true" if cfg.traceOn else "false"}
        if outcome.msg_id is not None:
            fields.update(msgId=outcome.msg_id, queueId=str(outcome.queue_id), queueOffset=str(outcome.queue_offset))
        return cmd.response(outcome.code, outcome.remark, fields)

    async def _push(self, channel: ClientChannel, push: ReplyPush) -> str | None:
        h = push.header
        header = ReplyMessageRequestHeader(
            producer_group=h.producer_group, topic=h.topic, default_topic=h.default_topic,
            default_topic_queue_nums=h.default_topic_queue_nums, queue_id=h.queue_id, sys_flag=h.sys_flag,
            born_timestamp=h.born_timestamp, flag=h.flag, properties=push.properties,
            reconsume_times=h.reconsume_times, unit_mode=h.unit_mode, born_host=_host(push.born_host),
            store_host=_host(push.store_host), store_timestamp=push.store_timestamp,
        )  # fmt: skip
        request = RemotingCommand.request(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, header.to_ext(), push.body)
        try:
            answer = await channel.conn.request(request, PUSH_TIMEOUT)
        except (RocketQError, OSError, TimeoutError) as exc:
            log.warning("reply.push_failed client=%s error=%s", channel.client_id, exc)
            return f"push reply message to {channel.client_id} fail."
        if answer.code != ResponseCode.SUCCESS:
            log.warning("reply.push_refused client=%s remark=%s", channel.client_id, answer.remark)
            return f"push reply message to {channel.client_id} fail."
        return None


def _host(host: tuple[str, int]) -> str:
    return f"{host[0]}:{host[1]}"
