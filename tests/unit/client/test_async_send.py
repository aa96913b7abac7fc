"""``SendFuture``, the one completion of ``send_async``: the task path and the task-less path end the same way.

A fake owner stands in for the producer (the ``AsyncSendOwner`` members); the wire is exercised by
``tests/integration/client/test_producer_wire.py``.
"""

from __future__ import annotations

import asyncio
import logging
import types
from typing import Any

import pytest

from rocketq.client._api import MQClientAPI
from rocketq.client._async_send import SendFuture, _SendReply, close_async_sends
from rocketq.client._route import TopicPublishInfo
from rocketq.client._send_request import build_send_request
from rocketq.client._tasks import TaskSet
from rocketq.client._uniq_id import UniqIdGenerator
from rocketq.client.latency import MQFaultStrategy
from rocketq.client.message import Message, SendResult, SendStatus
from rocketq.codes import RequestCode, ResponseCode
from rocketq.errors import BrokerError, RemotingConnectError
from rocketq.protocol.bodies import MessageQueue
from rocketq.protocol.command import FLAG_RESPONSE, RemotingCommand, decode_frame, encode

_MQ = MessageQueue("T", "broker-a", 3)
_RESULT = SendResult(SendStatus.SEND_OK, "U", "OFF", _MQ, 1)


class _Remoting:
    """The remoting client: ``encoded`` has an open connection that takes encoded requests (no signing hook),
    else every request goes through ``invoke_waiter`` as a command."""

    def __init__(self, encoded: bool = False) -> None:
        self.waiters: list[_SendReply] = []
        self.frames: list[tuple[int, int, bytes, bytes]] = []  # encoded requests: opaque, code, head, body
        self.invoked: list[RemotingCommand] = []  # awaited requests (a retry)
        self.encoded = encoded

    def invoke_waiter(self, addr: str, cmd: RemotingCommand, timeout: float, waiter: Any) -> bool:
        self.waiters.append(waiter)
        return True

    def ready_connection(self, addr: str) -> _Remoting | None:
        return self if self.encoded else None

    def next_opaque(self) -> int:
        return 41

    def request_frame(self, opaque: int, code: int, timeout: float, waiter: Any, head: bytes, body: bytes) -> None:
        self.frames.append((opaque, code, head, body))
        self.waiters.append(waiter)

    async def invoke(self, addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        self.invoked.append(cmd)
        return _answer()


class _Owner:
    """The members ``TasklessSendOwner`` lists (a producer's), with a cached route to broker-a."""

    def __init__(self, retries: int = 0, encoded: bool = False) -> None:
        self.retry_times_when_send_async_failed = retries
        self.fault_strategy = MQFaultStrategy(False)
        self._tasks = TaskSet(logging.getLogger("test"))
        self._async_in_flight: set[SendFuture] = set()
        self.faults: list[tuple[str, bool]] = []
        self.remoting = _Remoting(encoded)
        api = MQClientAPI(self.remoting, [])  # type: ignore[arg-type]
        self.instance = types.SimpleNamespace(api=api, find_broker_address_in_publish=lambda name: "addr")
        self.group, self.create_topic_key, self.default_topic_queue_nums = "pg", "TBW102", 4
        self.compress_msg_body_over_howmuch, self.compress_level = 4096, 5
        self.topic_publish_info_table = {"T": TopicPublishInfo([_MQ])}
        self.max_message_size = 4 * 1024 * 1024
        self._id_gen = UniqIdGenerator("10.0.0.7")
        self._trace = None  # message trace off

    def _update_fault(self, broker_name: str, begin: float, isolation: bool) -> None:
        self.faults.append((broker_name, isolation))

    def _record_pub(self, msg: Any, result: Any, addr: str, begin_ms: int) -> None:
        raise AssertionError("message trace is off")


def _answer(code: int = ResponseCode.SUCCESS) -> RemotingCommand:
    ext = {"msgId": "OFF", "queueId": "3", "queueOffset": "1"}
    return RemotingCommand(code, 1, FLAG_RESPONSE, "JAVA", 409, None, ext, b"")


def _taskless(owner: _Owner, got: list[Any]) -> tuple[SendFuture, _SendReply]:
    fut = SendFuture(loop=asyncio.get_running_loop())
    msg = Message("T", b"x")
    assert fut.send_taskless(owner, owner.instance, msg, 3.0, got.append, got.append)  # type: ignore[arg-type]
    assert fut in owner._async_in_flight and msg.uniq_key is not None
    return fut, owner.remoting.waiters[-1]


async def test_the_taskless_path_leaves_the_unusual_to_the_task_path() -> None:
    owner = _Owner()
    fut = SendFuture(loop=asyncio.get_running_loop())
    for msg in (Message("U", b"no route cached"), Message("%RETRY%g", b"x"), Message("T", b"")):  # empty: invalid
        assert not fut.send_taskless(owner, owner.instance, msg, 3.0, None, None)  # type: ignore[arg-type]
    assert not owner.remoting.waiters and not owner._async_in_flight


@pytest.mark.parametrize("encoded", [False, True])
async def test_a_taskless_send_completes_from_its_answer(encoded: bool) -> None:
    owner, got = _Owner(encoded=encoded), list[Any]()
    fut, reply = _taskless(owner, got)
    reply.set_result(_answer())
    assert fut.result().offset_msg_id == "OFF" and got == [fut.result()] and not owner._async_in_flight


@pytest.mark.parametrize("encoded", [False, True])
async def test_a_broker_error_is_a_fault_and_reaches_the_callback(encoded: bool) -> None:
    owner, got = _Owner(encoded=encoded), list[Any]()
    fut, reply = _taskless(owner, got)
    reply.set_result(_answer(ResponseCode.SYSTEM_BUSY))
    assert isinstance(got[0], BrokerError) and fut.exception() is got[0]
    assert owner.faults == [("broker-a", True)] and not owner._async_in_flight


@pytest.mark.parametrize("encoded", [False, True])
async def test_a_transport_failure_without_retries_completes_the_send(encoded: bool) -> None:
    owner, got = _Owner(retries=0, encoded=encoded), list[Any]()
    fut, reply = _taskless(owner, got)
    exc = RemotingConnectError("refused")
    reply.set_exception(exc)
    assert fut.exception() is exc and got == [exc] and owner.faults == [("broker-a", True)]


async def test_an_encoded_send_writes_the_frame_of_the_command_it_stands_for() -> None:
    """With an open connection and no signing hook the request goes out encoded: the frame is the one the
    command ``build_send_request`` makes would be (compressed, prepared), with the connection's opaque."""
    owner = _Owner(encoded=True)
    msg = Message("T", b"x" * 5000, tags="TagA")  # over compress_msg_body_over_howmuch: compressed
    msg.properties["TRAN_MSG"] = "true"
    fut = SendFuture(loop=asyncio.get_running_loop())
    assert fut.send_taskless(owner, owner.instance, msg, 3.0, None, None)  # type: ignore[arg-type]
    ((opaque, code, head, body),) = owner.remoting.frames
    sent = decode_frame(head[4:] + body)
    expected, uniq_id = build_send_request(msg, _MQ, owner, None, "PYTHON")  # type: ignore[arg-type]
    expected.opaque = 41
    expected.ext_fields["g"] = sent.ext_fields["g"]  # born a moment apart
    assert (opaque, code, fut._uniq_id) == (41, RequestCode.SEND_MESSAGE_V2, uniq_id)
    assert int(sent.ext_fields["f"]) & 0x1 and int(sent.ext_fields["f"]) & 0x4  # compressed, prepared
    assert head + body == encode(expected)


async def test_a_transport_failure_of_an_encoded_send_retries_the_same_request() -> None:
    owner, got = _Owner(retries=1, encoded=True), list[Any]()
    fut, reply = _taskless(owner, got)
    ((_, _, head, body),) = owner.remoting.frames
    owner.topic_publish_info_table.clear()  # nothing the retry needs is looked up again
    reply.set_exception(RemotingConnectError("reset"))
    await owner._tasks.wait(1.0)
    (again,) = owner.remoting.invoked
    again.opaque = 41
    assert encode(again) == head + body  # the same request (id, born timestamp), a command this time
    assert fut.result().offset_msg_id == "OFF" and got == [fut.result()]


async def test_a_taskless_send_cancelled_by_the_caller_reports_nothing() -> None:
    owner, got = _Owner(), list[Any]()
    fut, reply = _taskless(owner, got)
    fut.cancel()
    reply.set_result(_answer())
    assert fut.cancelled() and got == [] and not owner._async_in_flight


async def test_the_task_path_completes_the_same_way() -> None:
    owner = _Owner()
    ok: list[Any] = []
    failed: list[BaseException] = []

    async def good() -> SendResult:
        return _RESULT

    async def bad() -> SendResult:
        raise BrokerError("x")

    f1, f2 = SendFuture(), SendFuture()
    f1.start_task(owner, good(), ok.append, failed.append, "good")  # type: ignore[arg-type]
    f2.start_task(owner, bad(), ok.append, failed.append, "bad")  # type: ignore[arg-type]
    await owner._tasks.wait(1.0)
    assert f1.result() is _RESULT and ok == [_RESULT]
    assert f2.exception() is failed[0] and isinstance(failed[0], BrokerError)


async def test_the_task_path_reports_even_when_the_caller_cancelled() -> None:
    owner = _Owner()
    ok: list[Any] = []

    async def slow() -> SendResult:
        await asyncio.sleep(0.01)
        return _RESULT

    fut = SendFuture()
    fut.start_task(owner, slow(), ok.append, None, "slow")  # type: ignore[arg-type]
    fut.cancel()
    await owner._tasks.wait(1.0)
    assert fut.cancelled() and ok == [_RESULT]  # as send_async's task has always done


async def test_a_closed_task_set_refuses_without_a_stray_coroutine() -> None:
    owner = _Owner()
    await owner._tasks.aclose()

    async def never() -> SendResult:
        raise AssertionError

    send = never()
    with pytest.raises(RuntimeError, match="closed"):
        SendFuture().start_task(owner, send, None, None, "x")  # type: ignore[arg-type]
    assert send.cr_frame is None  # type: ignore[attr-defined]  # closed, not left to warn "never awaited"


async def test_close_cancels_the_sends_still_in_flight() -> None:
    owner, got = _Owner(), list[Any]()
    fut, reply = _taskless(owner, got)
    await close_async_sends(owner._tasks, owner._async_in_flight, 0.01)
    assert fut.cancelled() and not owner._async_in_flight
    reply.set_result(_answer())  # the answer after shutdown: silent
    assert got == []


async def test_a_batch_answer_settles_each_send_as_complete_would() -> None:
    """``succeed_all`` (the auto-batch's settle): each future its own result and callback, a cancelled one
    nothing, a failing callback logged and the rest still called."""
    owner = _Owner()
    loop = asyncio.get_running_loop()
    called: list[tuple[int, str]] = []

    def callback(i: int) -> Any:
        def on_success(result: SendResult) -> None:
            if i == 1:
                raise RuntimeError("a user's callback failed")
            called.append((i, result.msg_id))

        return on_success

    futures = []
    for i in range(4):
        fut = SendFuture(loop=loop)  # as ProduceAccumulator.gather makes one
        fut._owner, fut._on_success, fut._on_exception, fut._meter = owner, callback(i), None, None  # type: ignore[assignment]
        futures.append(fut)
    futures[2].cancel()
    results = [SendResult(SendStatus.SEND_OK, f"U{i}", f"OFF{i}", _MQ, 10 + i) for i in range(4)]
    SendFuture.succeed_all(futures, results)
    assert called == [(0, "U0"), (3, "U3")]
    assert [f.result().queue_offset for f in (futures[0], futures[1], futures[3])] == [10, 11, 13]
    assert futures[2].cancelled()
