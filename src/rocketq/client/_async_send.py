"""How an asynchronous send runs and finishes: one completion object for every ``send_async``, same-broker retries.

Java counterpart: ``MQClientAPIImpl.sendMessageAsync`` — its ``InvokeCallback`` (map the answer, update the
latency faults, call the ``SendCallback``) and ``onExceptionImpl`` (retry a transport failure on the same broker).
aiokafka keeps the same role apart from its producer, in ``producer/sender.py``.

``Producer.send_async`` returns a ``SendFuture``, and that future completes its own send on either path:

* **task-less** (route cached, message plain — the common case): ``SendFuture.send_taskless`` builds and writes
  the request at once and waits for the answer with a small ``_SendReply`` on the connection, or, before the
  first connection to the broker is open, as the done-callback of the remoting future that connects first. The
  answer is handled as soon as it is decoded (``_answered``); a transport failure is retried in a task
  (``_failed``). Profiled: a task and five coroutine frames were about half the client's CPU per async send, and
  every GC-tracked object alive per message in flight brings the next collection closer — so the future itself
  carries the send's state.
* **task path** (a queue or selector, a route to look up first, anything unusual): ``SendFuture.start_task``
  runs the producer's send coroutine in one of the producer's tasks.

Both paths end in ``SendFuture.complete``: settle the future, then call ``on_success`` or ``on_exception``.

The producer is reached through ``AsyncSendOwner`` and ``TasklessSendOwner`` (the members it has that these
read), so this module does not import ``producer``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol

from rocketq.client._route import TopicPublishInfo
from rocketq.client._send_request import MessageBatch, SendSettings, build_send_head, build_send_request
from rocketq.client._tasks import TaskSet
from rocketq.client._uniq_id import UniqIdGenerator
from rocketq.client._validators import check_message
from rocketq.client.errors import SendTimeoutError
from rocketq.client.latency import MQFaultStrategy
from rocketq.client.message import Message, SendResult
from rocketq.codes import RequestCode
from rocketq.errors import BrokerError, RemotingError
from rocketq.protocol.bodies import MessageQueue
from rocketq.protocol.command import RemotingCommand, decode_frame
from rocketq.protocol.topics import RETRY_PREFIX

if TYPE_CHECKING:
    from rocketq.client._instance import ClientInstance
    from rocketq.client.metrics import ClientMetrics
    from rocketq.client.trace import TraceDispatcher

__all__ = [
    "AsyncSendOwner",
    "ExceptionCallback",
    "SendCallback",
    "SendFuture",
    "TasklessSendOwner",
    "close_async_sends",
    "send_with_retry",
]

# The producer's logger: these are its events ("send_async.retry", "send.callback_failed"), wherever the code sits.
_SEND_MESSAGE_V2 = RequestCode.SEND_MESSAGE_V2  # a module global: an enum member lookup costs ~80 ns

log = logging.getLogger("rocketq.client.producer")

SendCallback = Callable[[SendResult], Any]
ExceptionCallback = Callable[[BaseException], Any]


class AsyncSendOwner(Protocol):
    """What an asynchronous send needs of its producer (``Producer`` has these members; they are not public API)."""

    retry_times_when_send_async_failed: int
    fault_strategy: MQFaultStrategy
    _tasks: TaskSet
    #: task-less sends in flight: the producer's shutdown waits for them, then cancels the rest
    _async_in_flight: set[SendFuture]

    @property
    def instance(self) -> ClientInstance: ...

    def _update_fault(self, broker_name: str, begin: float, isolation: bool) -> None: ...


class TasklessSendOwner(AsyncSendOwner, SendSettings, Protocol):
    """What a task-less send also reads: the cached routes, the size limit, the id generator (and the request
    settings, ``SendSettings``)."""

    topic_publish_info_table: dict[str, TopicPublishInfo]
    max_message_size: int
    _id_gen: UniqIdGenerator | None
    _trace: TraceDispatcher | None  # message trace on: the answer records a Pub trace

    def _record_pub(self, msg: Message, result: SendResult, addr: str, begin_ms: int) -> None: ...


class SendFuture(asyncio.Future[SendResult]):
    """The future ``send_async`` returns, and what completes its send (see the module docstring).

    A caller may cancel it: a task-less send then ends silently (no callback — this is also how the producer's
    shutdown stops the sends still in flight); a send on the task path still reports its outcome to the
    callbacks, as ``send_async`` has always done there.
    """

    __slots__ = ("_addr", "_begin", "_meter", "_mq", "_on_exception", "_on_success", "_owner", "_sent", "_timeout",
                 "_traced", "_uniq_id")  # fmt: skip

    _owner: AsyncSendOwner
    _on_success: SendCallback | None
    _on_exception: ExceptionCallback | None
    _sent: RemotingCommand | tuple[bytes, bytes]  # the request: a command, or the head and body it went out as
    _addr: str
    _mq: MessageQueue
    _uniq_id: str
    _begin: float
    _timeout: float
    _traced: tuple[Message, int] | None  # task-less, message trace on: the message and its send's epoch ms
    #: client metrics on: where to file the send's cost, its topic, client id and ``perf_counter`` start
    _meter: tuple[ClientMetrics, str, str, float] | None

    # -- the ways a send starts -----------------------------------------------------------------------------

    def send_taskless(
        self,
        owner: TasklessSendOwner,
        instance: ClientInstance,
        msg: Message,
        timeout: float,
        on_success: SendCallback | None,
        on_exception: ExceptionCallback | None,
    ) -> bool:
        """The task-less path, when ``msg``'s route is cached: what ``Producer._send_async_default`` does up to the
        request (check, queue, address, request), then write it now and complete when it is answered. False,
        having sent nothing: the producer takes the task path from the start (which repeats the steps and reports
        their errors through this future)."""
        topic = msg.topic
        if isinstance(msg, MessageBatch) or topic.startswith(RETRY_PREFIX):
            return False
        info = owner.topic_publish_info_table.get(topic)
        if info is None or not info.message_queues:  # TopicPublishInfo.ok()
            return False
        begin = time.monotonic()
        try:
            check_message(msg, owner.max_message_size)
            mq = owner.fault_strategy.select_one_message_queue(info, None)
            addr = instance.find_broker_address_in_publish(mq.broker_name)
            if addr is None:
                return False
            api = instance.api
            remoting = api.remoting
            # an open connection and no hook that must see the command: the request is encoded in one call
            conn = remoting.ready_connection(addr)
            if conn is None:
                cmd, uniq_id = build_send_request(msg, mq, owner, owner._id_gen, api.language)  # sets UNIQ_KEY (kept)
                self._sent = cmd
            else:
                cmd = None
                opaque = conn.next_opaque()
                head, body, uniq_id = build_send_head(msg, mq, owner, owner._id_gen, api.language, opaque)
                self._sent = (head, body)
        except Exception:
            return False
        # The future itself carries the send's state to the answer: no closure (a cell per variable) and no state
        # object (every GC-tracked object alive per message in flight brings the next collection closer).
        self._owner = owner
        self._on_success = on_success
        self._on_exception = on_exception
        self._addr = addr
        self._mq = mq
        self._uniq_id = uniq_id
        self._begin = begin
        self._timeout = timeout
        self._traced = None if owner._trace is None else (msg, int(time.time() * 1000))
        try:
            # The answer is handled as soon as it is decoded (no remoting future, handle or copied context);
            # before the first connection to the broker is open, through a future that connects first.
            if cmd is None:
                conn.request_frame(opaque, _SEND_MESSAGE_V2, timeout, _SendReply(self), head, body)  # type: ignore[union-attr]
            elif not remoting.invoke_waiter(addr, cmd, timeout, _SendReply(self)):
                remoting.invoke_future(addr, cmd, timeout).add_done_callback(self)
        except Exception:
            return False
        owner._async_in_flight.add(self)
        return True

    def start_task(
        self,
        owner: AsyncSendOwner,
        send: Coroutine[Any, Any, SendResult],
        on_success: SendCallback | None,
        on_exception: ExceptionCallback | None,
        name: str,
    ) -> None:
        """The task path: run the producer's ``send`` coroutine in one of its tasks; complete with its outcome."""
        self._owner = owner
        self._on_success = on_success
        self._on_exception = on_exception
        try:
            owner._tasks.spawn(self._run(send, report_if_cancelled=True), name)
        except BaseException:
            send.close()  # never started: no "never awaited" warning
            raise

    # -- the task-less path's ends ------------------------------------------------------------------------------

    def __call__(self, rf: asyncio.Future[RemotingCommand]) -> None:
        """Done-callback of the remoting future (the send had to connect first)."""
        try:
            resp = rf.result()
        except BaseException as exc:  # a transport failure (retried), cancelled (shutdown) or a bug
            self._failed(exc)
            return
        self._answered(resp)

    def _answered(self, resp: RemotingCommand) -> None:
        """The broker answered: what ``send_with_retry`` does after its ``invoke``, then complete."""
        owner = self._owner
        mq = self._mq
        try:
            result = owner.instance.api.process_send_response(resp, self._addr, mq, self._uniq_id)
        except BrokerError as exc:
            owner._update_fault(mq.broker_name, self._begin, True)
            self.complete(None, exc)
            return
        except Exception as exc:  # not a broker answer we understand: reported, as the task path does
            self.complete(None, exc)
            return
        strategy = owner.fault_strategy
        if strategy.send_latency_fault_enable or strategy.__class__ is not MQFaultStrategy:
            owner._update_fault(mq.broker_name, self._begin, False)  # else a no-op: skip its clock reading
        traced = self._traced
        if traced is not None:
            owner._record_pub(traced[0], result, self._addr, traced[1])  # type: ignore[attr-defined]
        self.complete(result, None)

    def _failed(self, exc: BaseException) -> None:
        """The request failed: a transport failure is retried on the same broker (the first of the retries
        ``send_with_retry`` allows), in a task; anything else completes the send."""
        owner = self._owner
        mq = self._mq
        if isinstance(exc, RemotingError):
            owner._update_fault(mq.broker_name, self._begin, True)
            if owner.retry_times_when_send_async_failed > 0 and not owner._tasks.closed:
                log.warning("send_async.retry times=1 topic=%s addr=%s error=%s", mq.topic, self._addr, exc)
                remaining = self._timeout - (time.monotonic() - self._begin)
                retry = send_with_retry(owner, self._request(), self._addr, mq, self._uniq_id, remaining, times=1)
                owner._tasks.spawn(self._run(retry), "send-async-retry")
                return
        # otherwise: cancelled (shutdown) or a bug, reported like the task would
        self.complete(None, exc)

    def _request(self) -> RemotingCommand:
        """The request this send made: its command, or the one its encoded frame holds (the same bytes)."""
        sent = self._sent
        if isinstance(sent, RemotingCommand):
            return sent
        head, body = sent
        return decode_frame(head[4:] + body)  # without the total-length word, as the decoder reads a frame

    # -- completion -------------------------------------------------------------------------------------------

    async def _run(self, send: Coroutine[Any, Any, SendResult], *, report_if_cancelled: bool = False) -> None:
        try:
            result = await send
        except asyncio.CancelledError:
            self._owner._async_in_flight.discard(self)
            self.cancel()
            raise
        except Exception as exc:
            self.complete(None, exc, report_if_cancelled)
            return
        self.complete(result, None, report_if_cancelled)

    def complete(self, result: SendResult | None, exc: BaseException | None, report_if_cancelled: bool = False) -> None:
        """Settle this future with the send's outcome (unless already settled) and call the matching callback;
        an exception delivered to ``on_exception`` counts as retrieved. A callback's exception is logged."""
        self._owner._async_in_flight.discard(self)
        meter = getattr(self, "_meter", None)  # set by Producer.send_async; a future made elsewhere has none
        if meter is not None:
            meter[0].on_send(meter[1], meter[2], meter[3], exc is None)
        if not report_if_cancelled and self.cancelled():
            return
        if exc is not None:
            if not self.done():
                self.set_exception(exc)
                if self._on_exception is not None:
                    self.exception()  # delivered through the callback
            _run_callback(self._on_exception, exc)
            return
        if not self.done():
            self.set_result(result)  # type: ignore[arg-type]
        on_success = self._on_success
        if on_success is not None:
            _run_callback(on_success, result)

    @staticmethod
    def succeed_all(futures: list[SendFuture], results: list[SendResult]) -> None:
        """``complete(result, None)`` for each of ``futures`` at once (an auto-batch's answer; gathered futures are
        not in their producer's ``_async_in_flight``), as ``complete`` does it, without a call per send."""
        for fut, result in zip(futures, results, strict=True):
            meter = fut._meter  # set on every gathered future (ProduceAccumulator.gather)
            if meter is not None:
                meter[0].on_send(meter[1], meter[2], meter[3], True)
            if not fut.done():
                fut.set_result(result)
            elif fut.cancelled():
                continue
            on_success = fut._on_success
            if on_success is not None:
                _run_callback(on_success, result)


class _SendReply:
    """What waits for a task-less send's answer on the connection (``Connection.request_waiter``): hands the
    answer, or the transport failure, to the send's future."""

    __slots__ = ("_send",)

    def __init__(self, send: SendFuture) -> None:
        self._send = send

    def done(self) -> bool:
        return False  # the connection removes a waiter before it settles it: never settled twice

    def set_result(self, resp: RemotingCommand) -> None:
        self._send._answered(resp)

    def set_exception(self, exc: BaseException) -> None:
        self._send._failed(exc)


def _run_callback(cb: Callable[[Any], Any] | None, value: Any) -> None:
    if cb is None:
        return
    try:
        cb(value)
    except Exception:
        log.exception("send.callback_failed")


async def send_with_retry(
    owner: AsyncSendOwner, cmd: RemotingCommand, addr: str, mq: MessageQueue, uniq_id: str, timeout: float,
    *, times: int = 0,
) -> SendResult:  # fmt: skip
    """Java ASYNC mode: transport failures are retried on the same broker; ``times`` failures so far."""
    api = owner.instance.api
    begin_first = time.monotonic()
    while True:
        begin = time.monotonic()
        remaining = timeout - (begin - begin_first)
        if remaining <= 0:
            raise SendTimeoutError(f"send timed out after {timeout}s", [mq.broker_name])
        try:
            resp = await api.invoke(addr, cmd, remaining)
        except RemotingError as exc:
            owner._update_fault(mq.broker_name, begin, True)
            times += 1
            if times > owner.retry_times_when_send_async_failed:
                raise
            log.warning("send_async.retry times=%d topic=%s addr=%s error=%s", times, mq.topic, addr, exc)
            continue
        try:
            result = api.process_send_response(resp, addr, mq, uniq_id)
        except BrokerError:
            owner._update_fault(mq.broker_name, begin, True)
            raise
        owner._update_fault(mq.broker_name, begin, False)
        return result


async def close_async_sends(tasks: TaskSet, in_flight: set[SendFuture], timeout: float) -> None:
    """The producer's shutdown: let its tasks and task-less sends finish for up to ``timeout`` s each, then cancel
    what is left (a cancelled task-less send ends without a callback)."""
    await tasks.wait(timeout)
    if in_flight:
        await asyncio.wait(list(in_flight), timeout=timeout)
    await tasks.aclose()
    for fut in list(in_flight):  # as aclose() cancels the tasks still running
        fut.cancel()
    in_flight.clear()
