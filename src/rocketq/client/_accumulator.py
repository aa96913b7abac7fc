"""Auto-batching in the producer: RocketMQ 5.1's ``DefaultMQProducer.autoBatch`` and its ``ProduceAccumulator``.

With ``auto_batch`` on, a plain ``send`` / ``send_async`` (with or without ``queue=``) is not sent at once: it
joins the open accumulation of its *aggregate key* — topic, chosen queue (or none), ``WAIT`` flag, tags and the
send mode — and the accumulation goes as one SEND_BATCH_MESSAGE when its bodies pass ``batch_max_bytes`` or
``batch_max_delay_ms`` after its first message, whichever comes first. The batch's answer is split back into one
``SendResult`` per message (its own ``msg_id`` and ``offset_msg_id``, ``queue_offset`` first + index), so each
send's future settles with its own result; a failed batch fails each of its sends with the batch's error.

What Java sends directly, so does this: a message with a delay (level or delivery time), one to a retry topic,
one carrying a producer group (a transaction's half message), a ``send`` with its own timeout, a selector send
(``send_orderly``), a one-way send, an explicit ``send_batch``, and any send while ``total_batch_max_bytes`` of
bodies are already held. Differences kept by decision: the size is checked before the other rules (Java's
``canBatch`` counts a message's bytes as held and then may send it directly, never giving them back), a
message is validated before it joins (so one bad message fails alone, as a direct send would), and shutdown
sends what is still held before it waits for the answers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from time import perf_counter
from typing import TYPE_CHECKING, Any, Protocol

from rocketq.client._async_send import AsyncSendOwner, ExceptionCallback, SendCallback, SendFuture
from rocketq.client._send_request import MessageBatch, split_into_batches
from rocketq.client._tasks import TaskSet
from rocketq.client._uniq_id import UniqIdGenerator
from rocketq.client._validators import check_message
from rocketq.client.message import KEY_SEPARATOR, Message, SendResult
from rocketq.client.sendext import batch_results
from rocketq.errors import ClientError
from rocketq.protocol.bodies import MessageQueue
from rocketq.protocol.message import (
    PROP_DELAY,
    PROP_KEYS,
    PROP_PGROUP,
    PROP_TAGS,
    PROP_TIMER_DELAY_MS,
    PROP_TIMER_DELAY_SEC,
    PROP_TIMER_DELIVER_MS,
    PROP_WAIT,
)
from rocketq.protocol.topics import RETRY_PREFIX

__all__ = [
    "DEFAULT_BATCH_MAX_BYTES",
    "DEFAULT_BATCH_MAX_DELAY_MS",
    "DEFAULT_TOTAL_BATCH_MAX_BYTES",
    "AccumulatorOwner",
    "ProduceAccumulator",
    "check_batch_settings",
    "split_batch_result",
]

if TYPE_CHECKING:
    from rocketq.client.metrics import ClientMetrics

log = logging.getLogger("rocketq.client.producer")

#: Java ``ProduceAccumulator``'s defaults: holdMs, holdSize, totalHoldSize.
DEFAULT_BATCH_MAX_DELAY_MS = 10
DEFAULT_BATCH_MAX_BYTES = 32 * 1024
DEFAULT_TOTAL_BATCH_MAX_BYTES = 32 * 1024 * 1024

# The properties that keep a message out of a batch (Java canBatch: delays, the producer group).
_DIRECT_PROPERTIES = frozenset(
    {PROP_DELAY, PROP_TIMER_DELIVER_MS, PROP_TIMER_DELAY_SEC, PROP_TIMER_DELAY_MS, PROP_PGROUP}
)

#: topic, chosen queue (None: the producer picks one per batch), WAIT, tags, asynchronous
_Key = tuple[str, MessageQueue | None, bool, str | None, bool]


def check_batch_settings(batch_max_delay_ms: int, batch_max_bytes: int, total_batch_max_bytes: int) -> None:
    """Java's ranges for the three knobs, the knob named in the error."""
    if not 0 < batch_max_delay_ms <= 30_000:
        raise ValueError(f"batch_max_delay_ms must be between 1 ms and 30 s, got {batch_max_delay_ms}")
    if not 0 < batch_max_bytes <= 2 * 1024 * 1024:
        raise ValueError(f"batch_max_bytes must be between 1 B and 2 MiB, got {batch_max_bytes}")
    if total_batch_max_bytes <= 0:
        raise ValueError(f"total_batch_max_bytes must be greater than 0, got {total_batch_max_bytes}")


def split_batch_result(result: SendResult, count: int) -> list[SendResult]:
    """One batch's answer → each message's own result (Java ``MessageAccumulation.splitSendResults``).

    A broker that stored the batch as one consume-queue entry answers one id: every message shares that result.
    """
    if "," not in result.msg_id:
        return [result] * count
    results = batch_results(result, count)  # in one call (compiled twin where built)
    if results is None:
        raise ClientError(
            f"the answer to an auto-batch of {count} messages names {result.msg_id.count(',') + 1} ids and "
            f"{result.offset_msg_id.count(',') + 1} offset ids"
        )
    return results


class AccumulatorOwner(AsyncSendOwner, Protocol):
    """What the accumulator needs of its producer (``Producer`` has these; they are not public API)."""

    send_msg_timeout: float
    max_message_size: int
    _id_gen: UniqIdGenerator | None
    _tasks: TaskSet

    def _batch_send(self, batch: MessageBatch, mq: MessageQueue | None, asynchronous: bool) -> Coroutine[
        Any, Any, SendResult]: ...  # fmt: skip


class _Accumulation:
    """The sends gathered under one aggregate key, waiting for their batch."""

    __slots__ = ("futures", "key", "messages", "size", "timer")

    def __init__(self, key: _Key) -> None:
        self.key = key
        self.messages: list[Message] = []
        self.futures: list[SendFuture] = []
        self.size = 0
        self.timer: asyncio.TimerHandle | None = None


class ProduceAccumulator:
    """Gathers sends into batches (see the module docstring). Lives on the producer's event loop: no locks."""

    # slots: the compiled gathering (``_gather_c``) reads and counts them in place
    __slots__ = ("_open", "_owner", "batch_max_bytes", "batch_max_delay_ms", "batches_sent", "held_bytes",
                 "messages_batched", "total_batch_max_bytes")  # fmt: skip

    def __init__(
        self,
        owner: AccumulatorOwner,
        batch_max_delay_ms: int = DEFAULT_BATCH_MAX_DELAY_MS,
        batch_max_bytes: int = DEFAULT_BATCH_MAX_BYTES,
        total_batch_max_bytes: int = DEFAULT_TOTAL_BATCH_MAX_BYTES,
    ) -> None:
        check_batch_settings(batch_max_delay_ms, batch_max_bytes, total_batch_max_bytes)
        self._owner = owner
        self.batch_max_delay_ms = batch_max_delay_ms
        self.batch_max_bytes = batch_max_bytes
        self.total_batch_max_bytes = total_batch_max_bytes
        #: body bytes gathered or in a batch not yet answered (Java's currentlyHoldSize)
        self.held_bytes = 0
        #: batch requests sent so far, and the sends they carried (what a test or a gauge reads)
        self.batches_sent = 0
        self.messages_batched = 0
        self._open: dict[_Key, _Accumulation] = {}

    def gather(
        self,
        msg: Message,
        mq: MessageQueue | None,
        on_success: SendCallback | None,
        on_exception: ExceptionCallback | None,
        loop: asyncio.AbstractEventLoop,
        metrics: ClientMetrics | None,
        asynchronous: bool,
    ) -> SendFuture | None:
        """Gather ``msg``: the future its own result settles. None, having done nothing, when Java's ``canBatch``
        says no (the total is held, or a message Java sends directly); a message that fails its check fails its
        future alone, as a direct send would fail.

        ``metrics``: the future files its send's cost when it settles (``send_async``; ``send`` meters the await).
        The future is not in the producer's ``_async_in_flight``: the accumulation holds it until its batch's task
        (in the producer's task set, which shutdown waits for) settles it. One call, inline: it runs for every
        send."""
        if self.held_bytes >= self.total_batch_max_bytes or isinstance(msg, MessageBatch):
            return None
        topic = msg.topic
        props = msg.properties
        if topic.startswith(RETRY_PREFIX) or not props.keys().isdisjoint(_DIRECT_PROPERTIES):
            return None
        owner = self._owner
        fut = SendFuture(loop=loop)
        fut._owner = owner
        fut._on_success = on_success
        fut._on_exception = on_exception
        fut._meter = None if metrics is None else (metrics, topic, owner.instance.client_id, perf_counter())
        try:
            check_message(msg, owner.max_message_size)
        except Exception as exc:
            fut.complete(None, exc)
            return fut
        # Message.wait_store_msg_ok and .tags read inline
        key: _Key = (topic, mq, props.get(PROP_WAIT, "true") != "false", props.get(PROP_TAGS), asynchronous)
        acc = self._open.get(key)
        if acc is None:
            acc = self._open[key] = _Accumulation(key)
            acc.timer = loop.call_later(self.batch_max_delay_ms / 1000, self._flush, acc)
        size = len(msg.body)
        acc.messages.append(msg)
        acc.futures.append(fut)
        acc.size += size
        self.held_bytes += size
        if acc.size > self.batch_max_bytes:
            self._flush(acc)
        return fut

    def flush(self) -> None:
        """Send every open accumulation now (the producer's shutdown)."""
        for acc in list(self._open.values()):
            self._flush(acc)

    def _flush(self, acc: _Accumulation) -> None:
        del self._open[acc.key]  # called once per accumulation: its timer is cancelled here
        if acc.timer is not None:
            acc.timer.cancel()
            acc.timer = None
        try:
            self._owner._tasks.spawn(self._send(acc), "send-auto-batch")
        except RuntimeError as exc:  # the producer is closing: its task set takes no more work
            self.held_bytes -= acc.size
            error = ClientError(f"the producer is shut down: {exc}")
            for fut in acc.futures:
                fut.complete(None, error)

    async def _send(self, acc: _Accumulation) -> None:
        """Send ``acc`` as one batch (more, were it over the message size limit) and settle each send."""
        owner = self._owner
        topic, mq, _, tags, asynchronous = acc.key
        done = 0
        try:
            id_gen = owner._id_gen
            assert id_gen is not None
            batches = split_into_batches(acc.messages, owner.max_message_size, id_gen, _checked_in_add)
            for batch in batches:
                count = len(batch.messages)
                _label(batch, acc.messages[done : done + count], tags)
                result = await owner._batch_send(batch, mq, asynchronous)
                results = split_batch_result(result, count)
                self.batches_sent += 1
                self.messages_batched += count
                SendFuture.succeed_all(acc.futures[done : done + count], results)
                done += count
        except asyncio.CancelledError:
            for fut in acc.futures[done:]:
                fut.cancel()
            raise
        except Exception as exc:
            log.warning("send.auto_batch_failed topic=%s messages=%d error=%s", topic, len(acc.messages) - done, exc)
            for fut in acc.futures[done:]:
                fut.complete(None, exc)
        finally:
            self.held_bytes -= acc.size


def _checked_in_add(msg: Message, max_message_size: int) -> None:
    """The batch encoder's per-message check: each gathered message passed ``check_message`` in ``add``."""


def _label(batch: MessageBatch, messages: list[Message], tags: str | None) -> None:
    """The batch's own properties as Java's accumulator sets them: its tag and the union of its messages' keys."""
    if tags:
        batch.properties[PROP_TAGS] = tags
    keys: dict[str, None] = {}
    for m in messages:
        raw = m.properties.get(PROP_KEYS)
        if raw:
            keys.update(dict.fromkeys(k for k in raw.split(KEY_SEPARATOR) if k))
    if keys:
        batch.properties[PROP_KEYS] = KEY_SEPARATOR.join(keys)

