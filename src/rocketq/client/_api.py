"""Wire-level client calls (Java ``MQClientAPIImpl``): one method per request code, no policy.

Every method builds the request exactly as a Java 4.9.8 client does (V2 send keys and codes 310/320, string
extFields, ``bname`` where Java 4.9.5+ sends it), sends it with the instance's ``RemotingClient`` and maps the
response: a success value, or ``error_for_code`` (a ``BrokerError`` subclass carrying ``code``/``remark``).
Name-server calls go to the current name server and move on to the next one when it cannot be reached.
"""

from __future__ import annotations

import logging
from typing import Any

from rocketq.client.errors import NoRouteError
from rocketq.client.message import DEFAULT_REGION, PullStatus, SendResult, SendStatus, make_send_result
from rocketq.client.sendext import send_answer
from rocketq.codes import RequestCode, ResponseCode
from rocketq.errors import (
    BrokerError,
    ProtocolError,
    RemotingClosedError,
    RemotingConnectError,
    RemotingError,
    error_for_code,
)
from rocketq.protocol.bodies import (
    HeartbeatData,
    MessageQueue,
    SubscriptionData,
    decode_consumer_id_list,
    decode_lock_ok,
    dumps,
)
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.fastjson import loads
from rocketq.protocol.headers import (
    ConsumerSendMsgBackRequestHeader,
    EndTransactionRequestHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    SendMessageRequestHeader,
    SendMessageResponseHeader,
    send_header_to_v2,
)
from rocketq.protocol.route import TopicRouteData
from rocketq.remoting.client import RemotingClient

log = logging.getLogger("rocketq.client.api")

_SEND_OK_CODES = {
    ResponseCode.SUCCESS: SendStatus.SEND_OK,
    ResponseCode.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE,
}
_PULL_CODES = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}


def broker_error(resp: RemotingCommand, addr: str) -> BrokerError:
    """The ``BrokerError`` subclass of a failed answer, carrying the broker's address as ``broker_addr``."""
    err = error_for_code(resp.code, resp.remark)
    err.broker_addr = addr  # type: ignore[attr-defined]
    return err


def _int(ext: dict[str, str], key: str) -> int:
    try:
        return int(ext[key])
    except (KeyError, ValueError):
        raise error_for_code(ResponseCode.SYSTEM_ERROR, f"response lacks a valid {key!r}") from None


class RawPullResult:
    """A pull response before decoding: status, the four offsets, and the body of records."""

    __slots__ = ("body", "header", "status")

    def __init__(self, status: PullStatus, header: PullMessageResponseHeader, body: bytes) -> None:
        self.status = status
        self.header = header
        self.body = body


class MQClientAPI:
    """Request builders and answer readers over a ``RemotingClient``; name-server calls fail over in order."""

    def __init__(self, remoting: RemotingClient, namesrv_addrs: list[str], language: str = "PYTHON") -> None:
        self.remoting = remoting
        self.namesrv_addrs = list(namesrv_addrs)
        self.language = language
        self._namesrv_index = 0

    # -- plumbing -----------------------------------------------------------------------------------------

    def request(
        self, code: int, ext: dict[str, str] | None = None, body: bytes = b"", *, oneway: bool = False
    ) -> RemotingCommand:
        return RemotingCommand.request(code, ext, body, oneway=oneway, language=self.language)

    async def invoke(self, addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        return await self.remoting.invoke(addr, cmd, timeout)

    async def invoke_oneway(self, addr: str, cmd: RemotingCommand) -> None:
        await self.remoting.invoke_oneway(addr, cmd)

    async def invoke_namesrv(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        """Send to the chosen name server; on a connect failure try the next ones (Java keeps the choice)."""
        if not self.namesrv_addrs:
            raise RemotingConnectError("no name server address configured (namesrv_addr / $NAMESRV_ADDR)")
        last: RemotingError | None = None
        n = len(self.namesrv_addrs)
        for i in range(n):
            idx = (self._namesrv_index + i) % n
            addr = self.namesrv_addrs[idx]
            try:
                resp = await self.remoting.invoke(addr, cmd, timeout)
            except (RemotingConnectError, RemotingClosedError) as exc:
                log.debug("namesrv.unreachable addr=%s error=%s", addr, exc)
                last = exc
                continue
            self._namesrv_index = idx
            return resp
        assert last is not None
        raise last

    async def call(
        self, addr: str, code: int, ext: dict[str, str] | None, timeout: float, body: bytes = b""
    ) -> RemotingCommand:
        """One request to a broker; any answer but SUCCESS raises its ``BrokerError`` (``broker_error``)."""
        resp = await self.invoke(addr, self.request(code, ext, body), timeout)
        if resp.code != ResponseCode.SUCCESS:
            raise broker_error(resp, addr)
        return resp

    async def _call_namesrv(self, code: int, ext: dict[str, str] | None, timeout: float) -> RemotingCommand:
        resp = await self.invoke_namesrv(self.request(code, ext), timeout)
        if resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
            # a broker answers every name-server request so: say what is likely wrong, not only the code
            addr = self.namesrv_addrs[self._namesrv_index]
            resp.remark = (
                f"{(resp.remark or '').strip()}; {addr} does not serve name-server requests: "
                "is -n / namesrv_addr pointing at a broker port (10911) instead of the name server (9876)?"
            )
        if resp.code != ResponseCode.SUCCESS:
            raise broker_error(resp, "namesrv")
        return resp

    async def no_route_error(self, topic: str, timeout: float, detail: str = "") -> NoRouteError:
        """NoRouteError for ``topic``, saying so when no broker at all is registered with the name server."""
        try:
            info = await self.get_broker_cluster_info(timeout)
        except BrokerError as exc:  # a broker given as the name server: its answer carries the hint
            return NoRouteError(topic, exc.remark if exc.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED else detail)
        except (RemotingError, ProtocolError):
            return NoRouteError(topic, detail)
        brokers = info.get("brokerAddrTable") or {}
        if not brokers:
            addrs = ";".join(self.namesrv_addrs)
            return NoRouteError(
                topic, f"no broker is registered with the name server {addrs} (is a broker running with -n {addrs}?)"
            )
        why = f"none of the {len(brokers)} registered broker(s) has it; create it, or let brokers auto-create topics"
        return NoRouteError(topic, f"{detail.strip()}; {why}" if detail.strip() else why)

    # -- name server --------------------------------------------------------------------------------------

    async def get_topic_route(self, topic: str, timeout: float) -> TopicRouteData:
        """TopicNotExistError (17) when the name server has no route."""
        resp = await self._call_namesrv(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, timeout)
        if not resp.body:
            raise error_for_code(ResponseCode.TOPIC_NOT_EXIST, f"empty route body for topic {topic}")
        return TopicRouteData.decode(resp.body)

    async def get_all_topic_list(self, timeout: float) -> list[str]:
        resp = await self._call_namesrv(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, None, timeout)
        return [str(t) for t in (loads(resp.body) or {}).get("topicList") or []] if resp.body else []

    async def get_topics_by_cluster(self, cluster: str, timeout: float) -> list[str]:
        resp = await self._call_namesrv(RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": cluster}, timeout)
        return [str(t) for t in (loads(resp.body) or {}).get("topicList") or []] if resp.body else []

    async def get_broker_cluster_info(self, timeout: float) -> dict[str, Any]:
        resp = await self._call_namesrv(RequestCode.GET_BROKER_CLUSTER_INFO, None, timeout)
        return dict(loads(resp.body)) if resp.body else {}

    async def delete_topic_in_namesrv(self, topic: str, timeout: float, cluster: str | None = None) -> None:
        ext = {"topic": topic}
        if cluster:
            ext["clusterName"] = cluster
        await self._call_namesrv(RequestCode.DELETE_TOPIC_IN_NAMESRV, ext, timeout)

    # -- send ---------------------------------------------------------------------------------------------

    def send_request(self, header: SendMessageRequestHeader, broker_name: str, body: bytes) -> RemotingCommand:
        ext = send_header_to_v2(header)
        ext["n"] = broker_name
        code = RequestCode.SEND_BATCH_MESSAGE if header.batch else RequestCode.SEND_MESSAGE_V2
        return self.request(code, ext, body)

    @staticmethod
    def process_send_response(
        resp: RemotingCommand, addr: str, mq: MessageQueue, uniq_id: str
    ) -> SendResult:
        status = _SEND_OK_CODES.get(resp.code)  # type: ignore[call-overload]
        if status is None:
            raise broker_error(resp, addr)
        ext = resp.ext_fields
        result = send_answer(ext, status, uniq_id, mq)  # the usual answer, in one call
        if result is not None:
            return result
        # The three fields every answer has, read directly; anything unusual (absent, empty, not a plain
        # integer) goes through SendMessageResponseHeader.from_ext for the same values or the same error.
        try:
            offset_msg_id = ext["msgId"]
            queue_id = int(ext["queueId"])
            queue_offset = int(ext["queueOffset"])
            if offset_msg_id.__class__ is not str:
                raise TypeError
        except (KeyError, ValueError, TypeError):
            try:
                rh = SendMessageResponseHeader.from_ext(ext)
            except Exception as exc:
                raise error_for_code(ResponseCode.SYSTEM_ERROR, f"bad send response header: {exc}") from exc
            offset_msg_id, queue_id, queue_offset = rh.msg_id, rh.queue_id, rh.queue_offset
        get = ext.get
        return make_send_result(
            status,
            uniq_id,
            offset_msg_id,
            mq if mq.queue_id == queue_id else MessageQueue(mq.topic, mq.broker_name, queue_id),  # frozen: shared
            queue_offset,
            get("transactionId"),
            get("MSG_REGION") or DEFAULT_REGION,
            get("TRACE_ON") != "false",
        )

    # -- pull ---------------------------------------------------------------------------------------------

    async def pull_message(
        self, addr: str, header: PullMessageRequestHeader, broker_name: str, timeout: float
    ) -> RawPullResult:
        ext = header.to_ext()
        ext["bname"] = broker_name
        resp = await self.invoke(addr, self.request(RequestCode.PULL_MESSAGE, ext), timeout)
        status = _PULL_CODES.get(resp.code)  # type: ignore[call-overload]
        if status is None:
            raise broker_error(resp, addr)
        try:
            rh = PullMessageResponseHeader.from_ext(resp.ext_fields)
        except Exception as exc:
            raise error_for_code(ResponseCode.SYSTEM_ERROR, f"bad pull response header: {exc}") from exc
        return RawPullResult(status, rh, bytes(resp.body))

    # -- offsets ------------------------------------------------------------------------------------------

    async def query_consumer_offset(self, addr: str, group: str, mq: MessageQueue, timeout: float) -> int:
        ext = {"consumerGroup": group, "topic": mq.topic, "queueId": str(mq.queue_id), "bname": mq.broker_name}
        resp = await self.call(addr, RequestCode.QUERY_CONSUMER_OFFSET, ext, timeout)
        return _int(resp.ext_fields, "offset")

    def update_consumer_offset_request(
        self, group: str, mq: MessageQueue, offset: int, oneway: bool
    ) -> RemotingCommand:
        ext = {
            "commitOffset": str(offset),
            "consumerGroup": group,
            "queueId": str(mq.queue_id),
            "topic": mq.topic,
            "bname": mq.broker_name,
        }
        return self.request(RequestCode.UPDATE_CONSUMER_OFFSET, ext, oneway=oneway)

    async def update_consumer_offset(
        self, addr: str, group: str, mq: MessageQueue, offset: int, timeout: float, *, oneway: bool = True
    ) -> None:
        cmd = self.update_consumer_offset_request(group, mq, offset, oneway)
        if oneway:
            await self.invoke_oneway(addr, cmd)
            return
        resp = await self.invoke(addr, cmd, timeout)
        if resp.code != ResponseCode.SUCCESS:
            raise broker_error(resp, addr)

    async def get_max_offset(self, addr: str, mq: MessageQueue, timeout: float) -> int:
        ext = {"topic": mq.topic, "queueId": str(mq.queue_id), "bname": mq.broker_name}
        resp = await self.call(addr, RequestCode.GET_MAX_OFFSET, ext, timeout)
        return _int(resp.ext_fields, "offset")

    async def get_min_offset(self, addr: str, mq: MessageQueue, timeout: float) -> int:
        ext = {"topic": mq.topic, "queueId": str(mq.queue_id), "bname": mq.broker_name}
        resp = await self.call(addr, RequestCode.GET_MIN_OFFSET, ext, timeout)
        return _int(resp.ext_fields, "offset")

    async def search_offset(self, addr: str, mq: MessageQueue, timestamp_ms: int, timeout: float) -> int:
        ext = {"topic": mq.topic, "queueId": str(mq.queue_id), "timestamp": str(timestamp_ms), "bname": mq.broker_name}
        resp = await self.call(addr, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, ext, timeout)
        return _int(resp.ext_fields, "offset")

    async def get_earliest_msg_storetime(self, addr: str, mq: MessageQueue, timeout: float) -> int:
        ext = {"topic": mq.topic, "queueId": str(mq.queue_id), "bname": mq.broker_name}
        resp = await self.call(addr, RequestCode.GET_EARLIEST_MSG_STORETIME, ext, timeout)
        return _int(resp.ext_fields, "timestamp")

    # -- client management --------------------------------------------------------------------------------

    async def send_heartbeat(self, addr: str, data: HeartbeatData, timeout: float) -> int:
        """Returns the broker's version."""
        resp = await self.call(addr, RequestCode.HEART_BEAT, None, timeout, data.encode())
        return resp.version

    async def unregister_client(
        self, addr: str, client_id: str, producer_group: str | None, consumer_group: str | None, timeout: float
    ) -> None:
        ext = {"clientID": client_id}
        if producer_group:
            ext["producerGroup"] = producer_group
        if consumer_group:
            ext["consumerGroup"] = consumer_group
        await self.call(addr, RequestCode.UNREGISTER_CLIENT, ext, timeout)

    async def check_client_config(
        self, addr: str, group: str, client_id: str, sub: SubscriptionData, timeout: float
    ) -> None:
        body = dumps({"clientId": client_id, "group": group, "subscriptionData": sub.to_json()})
        await self.call(addr, RequestCode.CHECK_CLIENT_CONFIG, None, timeout, body)

    async def get_consumer_id_list(self, addr: str, group: str, timeout: float) -> list[str]:
        resp = await self.call(addr, RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": group}, timeout)
        return decode_consumer_id_list(resp.body) if resp.body else []

    async def consumer_send_msg_back(
        self, addr: str, header: ConsumerSendMsgBackRequestHeader, broker_name: str | None, timeout: float
    ) -> None:
        ext = header.to_ext()
        if broker_name:
            ext["bname"] = broker_name
        await self.call(addr, RequestCode.CONSUMER_SEND_MSG_BACK, ext, timeout)

    async def lock_batch_mq(
        self, addr: str, group: str, client_id: str, mqs: list[MessageQueue], timeout: float
    ) -> set[MessageQueue]:
        body = _lock_body(group, client_id, mqs)
        resp = await self.call(addr, RequestCode.LOCK_BATCH_MQ, None, timeout, body)
        return set(decode_lock_ok(resp.body)) if resp.body else set()

    async def unlock_batch_mq(
        self, addr: str, group: str, client_id: str, mqs: list[MessageQueue], timeout: float, *, oneway: bool
    ) -> None:
        body = _lock_body(group, client_id, mqs)
        if oneway:
            await self.invoke_oneway(addr, self.request(RequestCode.UNLOCK_BATCH_MQ, None, body, oneway=True))
        else:
            await self.call(addr, RequestCode.UNLOCK_BATCH_MQ, None, timeout, body)

    async def end_transaction_oneway(
        self, addr: str, header: EndTransactionRequestHeader, broker_name: str | None, remark: str | None
    ) -> None:
        ext = header.to_ext()
        if broker_name:
            ext["bname"] = broker_name
        cmd = self.request(RequestCode.END_TRANSACTION, ext, oneway=True)
        cmd.remark = remark
        await self.invoke_oneway(addr, cmd)

    # -- messages by id / key -----------------------------------------------------------------------------

    async def view_message(self, addr: str, commit_log_offset: int, timeout: float) -> bytes:
        resp = await self.call(addr, RequestCode.VIEW_MESSAGE_BY_ID, {"offset": str(commit_log_offset)}, timeout)
        return bytes(resp.body)

    async def query_message(
        self,
        addr: str,
        topic: str,
        key: str,
        max_num: int,
        begin_ms: int,
        end_ms: int,
        timeout: float,
        *,
        uniq_key: bool = False,
    ) -> tuple[int, bytes]:
        """(indexLastUpdateTimestamp, body); QueryNotFoundError (22) when nothing matched."""
        ext = {
            "beginTimestamp": str(begin_ms),
            "endTimestamp": str(end_ms),
            "key": key,
            "maxNum": str(max_num),
            "topic": topic,
        }
        if uniq_key:
            ext["_UNIQUE_KEY_QUERY"] = "true"
        resp = await self.call(addr, RequestCode.QUERY_MESSAGE, ext, timeout)
        ts = int(resp.ext_fields.get("indexLastUpdateTimestamp", "0") or 0)
        return ts, bytes(resp.body)

    # -- admin (broker) -----------------------------------------------------------------------------------

    async def create_topic(self, addr: str, ext: dict[str, str], timeout: float) -> None:
        await self.call(addr, RequestCode.UPDATE_AND_CREATE_TOPIC, ext, timeout)

    async def delete_topic_in_broker(self, addr: str, topic: str, timeout: float) -> None:
        await self.call(addr, RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": topic}, timeout)

    async def broker_json(
        self, addr: str, code: int, ext: dict[str, str] | None, timeout: float, body: bytes = b""
    ) -> Any:
        """A broker request whose success body is JSON (fastjson dialect accepted); None for an empty body."""
        resp = await self.call(addr, code, ext, timeout, body)
        return loads(resp.body) if resp.body else None


def _lock_body(group: str, client_id: str, mqs: list[MessageQueue]) -> bytes:
    # Java 4.9.8 LockBatchRequestBody / UnlockBatchRequestBody: consumerGroup, clientId, mqSet.
    return dumps({"clientId": client_id, "consumerGroup": group, "mqSet": [m.to_json() for m in mqs]})
