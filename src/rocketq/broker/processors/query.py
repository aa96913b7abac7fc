"""Offsets by queue, time search, earliest store time, view by id, query by key."""

from __future__ import annotations

from rocketq.broker.context import BrokerContext
from rocketq.codes import RequestCode, ResponseCode
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import (
    EarliestMsgStoretimeResponseHeader,
    OffsetResponseHeader,
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    SearchOffsetRequestHeader,
    TopicQueueRequestHeader,
    ViewMessageRequestHeader,
)
from rocketq.protocol.message import encode_record
from rocketq.remoting.connection import Connection


class QueryProcessors:
    def __init__(self, ctx: BrokerContext) -> None:
        self._ctx = ctx

    def register(self) -> None:
        d = self._ctx.gate
        d.register(RequestCode.GET_MAX_OFFSET, self.max_offset)
        d.register(RequestCode.GET_MIN_OFFSET, self.min_offset)
        d.register(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, self.search_offset)
        d.register(RequestCode.GET_EARLIEST_MSG_STORETIME, self.earliest_time)
        d.register(RequestCode.VIEW_MESSAGE_BY_ID, self.view_message)
        d.register(RequestCode.QUERY_MESSAGE, self.query_message)

    @staticmethod
    def _offset(cmd: RemotingCommand, offset: int) -> RemotingCommand:
        return cmd.response(ResponseCode.SUCCESS, ext_fields=OffsetResponseHeader(offset=offset).to_ext())

    def max_offset(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = TopicQueueRequestHeader.from_ext(cmd.ext_fields)
        return self._offset(cmd, self._ctx.store.get_max_offset_in_queue(h.topic, h.queue_id))

    def min_offset(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = TopicQueueRequestHeader.from_ext(cmd.ext_fields)
        return self._offset(cmd, self._ctx.store.get_min_offset_in_queue(h.topic, h.queue_id))

    def search_offset(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = SearchOffsetRequestHeader.from_ext(cmd.ext_fields)
        return self._offset(cmd, self._ctx.store.get_offset_in_queue_by_time(h.topic, h.queue_id, h.timestamp))

    def earliest_time(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = TopicQueueRequestHeader.from_ext(cmd.ext_fields)
        ts = self._ctx.store.get_earliest_message_time(h.topic, h.queue_id)
        return cmd.response(
            ResponseCode.SUCCESS, ext_fields=EarliestMsgStoretimeResponseHeader(timestamp=max(ts, -1)).to_ext()
        )

    def view_message(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = ViewMessageRequestHeader.from_ext(cmd.ext_fields)
        raw = self._ctx.store.select_one_message_by_offset(h.offset)
        if raw is None:
            return cmd.response(ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {h.offset}")
        return cmd.response(ResponseCode.SUCCESS, body=bytes(raw))

    def query_message(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        h = QueryMessageRequestHeader.from_ext(cmd.ext_fields)
        max_num = h.max_num if h.max_num > 0 else 32
        if cmd.ext_fields.get("_UNIQUE_KEY_QUERY", "").lower() == "true":
            max_num = 32
        records = self._ctx.store.query_message(h.topic, h.key, max_num, h.begin_timestamp, h.end_timestamp)
        if not records:  # Java answers its (zero) header here too
            nothing = QueryMessageResponseHeader(index_last_update_timestamp=0, index_last_update_phyoffset=0)
            return cmd.response(
                ResponseCode.QUERY_NOT_FOUND, "can not find message, maybe time range not correct", nothing.to_ext()
            )
        body = b"".join(encode_record(r) for r in records)
        header = QueryMessageResponseHeader(
            index_last_update_timestamp=max(r.store_timestamp for r in records),
            index_last_update_phyoffset=max(r.commit_log_offset for r in records),
        )
        return cmd.response(ResponseCode.SUCCESS, ext_fields=header.to_ext(), body=body)
