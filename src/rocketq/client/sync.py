"""A thin blocking facade over the asyncio clients, for code that is not async.

::

    from rocketq.client.sync import Producer, PushConsumer
    from rocketq.client import Message, ConsumeConcurrentlyStatus

    with Producer("pg", namesrv_addr="127.0.0.1:9876") as producer:
        result = producer.send(Message("TopicA", b"hello"))

Every facade object runs its asyncio client on one shared background event loop (a daemon thread started on
first use) and blocks the calling thread until each call completes. ``send_async`` returns a
``concurrent.futures.Future``; its callbacks run on the loop thread and must not block. Push-consumer listeners
are ordinary functions run in the consumer's thread pool.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import threading
from abc import ABC, abstractmethod
from collections.abc import Coroutine, Iterable, Sequence
from types import TracebackType
from typing import Any, TypeVar

from rocketq.client import admin as _admin
from rocketq.client import lite_pull_consumer as _lite
from rocketq.client import producer as _producer
from rocketq.client import push_consumer as _push
from rocketq.client import simple_consumer as _simple
from rocketq.client.listener import ConcurrentlyListener, OrderlyListener
from rocketq.client.message import Message, MessageExt, MessageQueue, SendResult
from rocketq.client.selectors import MessageQueueSelector
from rocketq.client.subscription import MessageSelector
from rocketq.protocol.route import TopicRouteData

__all__ = ["AdminClient", "LitePullConsumer", "Producer", "PushConsumer", "SimpleConsumer", "run"]

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def _background_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def main() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                loop.run_forever()

            threading.Thread(target=main, name="rocketq-client-loop", daemon=True).start()
            ready.wait()
            _loop = loop
        return _loop


def run(coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    """Run a coroutine on the shared client loop and wait for its result (from any thread but that loop's)."""
    loop = _background_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        coro.close()
        raise RuntimeError("rocketq.client.sync called from the client loop itself; use the asyncio API there")
    return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout)


class _Closing(ABC):
    @abstractmethod
    def start(self) -> None: ...

    @abstractmethod
    def shutdown(self) -> None: ...

    def __enter__(self: Any) -> Any:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.shutdown()


class Producer(_Closing):
    """Blocking ``rocketq.client.Producer``; the constructor takes the same arguments."""

    def __init__(self, group: str = "DEFAULT_PRODUCER", **kwargs: Any) -> None:
        self.aio = _producer.Producer(group, **kwargs)

    def start(self) -> None:
        run(self.aio.start())

    def shutdown(self) -> None:
        run(self.aio.shutdown())

    def send(
        self,
        msg: Message,
        *,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
        timeout: float | None = None,
    ) -> SendResult:
        return run(self.aio.send(msg, queue=queue, selector=selector, arg=arg, timeout=timeout))

    def send_async(self, msg: Message, **kwargs: Any) -> concurrent.futures.Future[SendResult]:
        """Start a send; the returned future completes with the SendResult (callbacks as in the async API)."""

        async def start() -> asyncio.Future[SendResult]:
            return self.aio.send_async(msg, **kwargs)

        inner = run(start())
        out: concurrent.futures.Future[SendResult] = concurrent.futures.Future()

        def done(f: asyncio.Future[SendResult]) -> None:
            if f.cancelled():
                out.cancel()
            elif f.exception() is not None:
                out.set_exception(f.exception())
            else:
                out.set_result(f.result())

        _background_loop().call_soon_threadsafe(inner.add_done_callback, done)
        return out

    def send_oneway(self, msg: Message, **kwargs: Any) -> None:
        run(self.aio.send_oneway(msg, **kwargs))

    def send_orderly(self, msg: Message, sharding_key: Any, *, timeout: float | None = None) -> SendResult:
        return run(self.aio.send_orderly(msg, sharding_key, timeout=timeout))

    def send_batch(self, msgs: Sequence[Message], **kwargs: Any) -> list[SendResult]:
        return run(self.aio.send_batch(msgs, **kwargs))

    def fetch_publish_message_queues(self, topic: str) -> list[MessageQueue]:
        return run(self.aio.fetch_publish_message_queues(topic))


class PushConsumer(_Closing):
    """Blocking ``rocketq.client.PushConsumer``: ``start()`` returns once the consumer runs in the background."""

    def __init__(self, group: str, **kwargs: Any) -> None:
        self.aio = _push.PushConsumer(group, **kwargs)

    def subscribe(self, topic: str, expression: str | MessageSelector = "*") -> None:
        run(_as_coro(self.aio.subscribe, topic, expression))

    def unsubscribe(self, topic: str) -> None:
        run(_as_coro(self.aio.unsubscribe, topic))

    def register_message_listener(self, listener: ConcurrentlyListener) -> None:
        self.aio.register_message_listener(listener)

    def register_message_listener_orderly(self, listener: OrderlyListener) -> None:
        self.aio.register_message_listener_orderly(listener)

    def start(self) -> None:
        run(self.aio.start())

    def shutdown(self) -> None:
        run(self.aio.shutdown())

    def suspend(self) -> None:
        run(_as_coro(self.aio.suspend))

    def resume(self) -> None:
        run(_as_coro(self.aio.resume))


class LitePullConsumer(_Closing):
    """Blocking ``rocketq.client.LitePullConsumer``."""

    def __init__(self, group: str, **kwargs: Any) -> None:
        self.aio = _lite.LitePullConsumer(group, **kwargs)

    def subscribe(self, topic: str, expression: str | MessageSelector = "*") -> None:
        run(_as_coro(self.aio.subscribe, topic, expression))

    def unsubscribe(self, topic: str) -> None:
        run(_as_coro(self.aio.unsubscribe, topic))

    def assign(self, queues: Iterable[MessageQueue]) -> None:
        run(_as_coro(self.aio.assign, list(queues)))

    def assignment(self) -> set[MessageQueue]:
        return self.aio.assignment()

    def start(self) -> None:
        run(self.aio.start())

    def shutdown(self) -> None:
        run(self.aio.shutdown())

    def poll(self, timeout: float | None = None) -> list[MessageExt]:
        return run(self.aio.poll(timeout))

    def commit(self, offsets: dict[MessageQueue, int] | None = None, *, persist: bool = True) -> None:
        run(self.aio.commit(offsets, persist=persist))

    def committed(self, mq: MessageQueue) -> int:
        return run(self.aio.committed(mq))

    def seek(self, mq: MessageQueue, offset: int) -> None:
        run(self.aio.seek(mq, offset))

    def seek_to_begin(self, mq: MessageQueue) -> None:
        run(self.aio.seek_to_begin(mq))

    def seek_to_end(self, mq: MessageQueue) -> None:
        run(self.aio.seek_to_end(mq))

    def seek_to_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> None:
        run(self.aio.seek_to_timestamp(mq, timestamp_ms))

    def offset_for_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> int:
        return run(self.aio.offset_for_timestamp(mq, timestamp_ms))

    def fetch_message_queues(self, topic: str) -> set[MessageQueue]:
        return run(self.aio.fetch_message_queues(topic))

    def pause(self, queues: Iterable[MessageQueue]) -> None:
        run(_as_coro(self.aio.pause, list(queues)))

    def resume(self, queues: Iterable[MessageQueue]) -> None:
        run(_as_coro(self.aio.resume, list(queues)))


class SimpleConsumer(_Closing):
    """Blocking ``rocketq.client.SimpleConsumer`` (POP); the constructor takes the same arguments."""

    def __init__(self, group: str, **kwargs: Any) -> None:
        self.aio = _simple.SimpleConsumer(group, **kwargs)

    def subscribe(self, topic: str, expression: str | MessageSelector = "*") -> None:
        run(_as_coro(self.aio.subscribe, topic, expression))

    def unsubscribe(self, topic: str) -> None:
        run(_as_coro(self.aio.unsubscribe, topic))

    def start(self) -> None:
        run(self.aio.start())

    def shutdown(self) -> None:
        run(self.aio.shutdown())

    def receive(self, max_messages: int = 16, invisible_duration: float | None = None) -> list[_simple.MessageView]:
        return run(self.aio.receive(max_messages, invisible_duration))

    def ack(self, msg: MessageExt) -> None:
        run(self.aio.ack(msg))

    def batch_ack(self, msgs: Sequence[MessageExt]) -> None:
        run(self.aio.batch_ack(msgs))

    def change_invisible_duration(self, msg: MessageExt, duration: float) -> None:
        run(self.aio.change_invisible_duration(msg, duration))


class AdminClient(_Closing):
    """Blocking ``rocketq.client.AdminClient``; the same methods, each returning its result."""

    def __init__(self, **kwargs: Any) -> None:
        self.aio = _admin.AdminClient(**kwargs)

    def start(self) -> None:
        run(self.aio.start())

    def shutdown(self) -> None:
        run(self.aio.close())

    close = shutdown

    def topic_list(self) -> list[str]:
        return run(self.aio.topic_list())

    def topic_route(self, topic: str) -> TopicRouteData:
        return run(self.aio.topic_route(topic))

    def create_topic(self, topic: str, **kwargs: Any) -> list[str]:
        return run(self.aio.create_topic(topic, **kwargs))

    def delete_topic(self, topic: str, **kwargs: Any) -> None:
        run(self.aio.delete_topic(topic, **kwargs))

    def topic_status(self, topic: str) -> list[_admin.TopicQueueStatus]:
        return run(self.aio.topic_status(topic))

    def consume_progress(self, group: str, topic: str | None = None) -> list[_admin.QueueProgress]:
        return run(self.aio.consume_progress(group, topic))

    def consumer_connections(self, group: str) -> _admin.ConsumerConnection:
        return run(self.aio.consumer_connections(group))

    def reset_offset_by_timestamp(self, group: str, topic: str, timestamp_ms: int) -> dict[MessageQueue, int]:
        return run(self.aio.reset_offset_by_timestamp(group, topic, timestamp_ms))

    def brokers(self, cluster: str | None = None, *, runtime: bool = False) -> list[_admin.BrokerInfo]:
        return run(self.aio.brokers(cluster, runtime=runtime))

    def broker_runtime_info(self, broker_addr: str) -> dict[str, str]:
        return run(self.aio.broker_runtime_info(broker_addr))

    def query_message_by_id(self, msg_id: str, topic: str | None = None) -> list[MessageExt]:
        return run(self.aio.query_message_by_id(msg_id, topic))

    def query_message_by_key(self, topic: str, key: str, **kwargs: Any) -> list[MessageExt]:
        return run(self.aio.query_message_by_key(topic, key, **kwargs))

    def __getattr__(self, name: str) -> Any:
        """Every other coroutine method of the asyncio AdminClient, blocking (same arguments, same result)."""
        if name == "aio":  # not set yet (a failed __init__): no recursion
            raise AttributeError(name)
        attr = getattr(self.aio, name)
        if not inspect.iscoroutinefunction(attr):
            return attr

        def blocking(*args: Any, **kwargs: Any) -> Any:
            return run(attr(*args, **kwargs))

        blocking.__name__ = name
        blocking.__doc__ = attr.__doc__
        return blocking


async def _as_coro(fn: Any, *args: Any) -> Any:
    """Run a plain method on the loop thread (it may touch loop-owned state)."""
    return fn(*args)
