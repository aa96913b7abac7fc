"""SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320): the remoting front of ``SendService``.

Sends are queued (bounded) and handled in bursts by one loop callback, like Java's send thread pool: a send
that waited longer than ``waitTimeMillsInSendQueue`` is answered SYSTEM_BUSY instead of being stored, and a full
queue refuses new sends at once — memory stays bounded however many clients pile on. The drain is a plain
``call_soon`` callback (no task, no event): it handles what is queued when it runs, then yields to the loop.

This module only translates: header → ``SendService`` → answer. Consecutive plain sends are stored as one run
(``SendService.prepare_plain`` / ``put_plain_run``); anything else goes through ``SendService.send`` after the
run ahead of it, so arrival order is kept. Every answer leaves through ``_answer``: it asks ``PutAck`` whether
the put may be answered now (SYNC_FLUSH waits for the flush, SYNC_MASTER for a slave), holds the answer of a
send that created its topic until the name servers know the topic (Java registers before answering), and
writes through the gate's one exit.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from functools import partial
from itertools import repeat

from rocketq.broker.context import BrokerContext
from rocketq.broker.messaging.plainsend import PlainRules, plain_answers, plain_send_v2, plain_sends_v2
from rocketq.broker.messaging.send import PlainPutResult, SendOutcome, SendService, code_of_put_status
from rocketq.codes import CURRENT_VERSION, RequestCode, ResponseCode
from rocketq.errors import BrokerError, ProtocolError
from rocketq.protocol.command import FLAG_ONEWAY, SERIALIZE_JSON, RemotingCommand
from rocketq.protocol.framecodec import encode_send_reply
from rocketq.protocol.headers import SendMessageRequestHeader, send_header_from_v2
from rocketq.protocol.message import encode_host
from rocketq.remoting.connection import Connection
from rocketq.store.message import PlainMessage

#: a stored plain send waiting with its run: connection, request, physical offset, queue id, queue offset
_Held = tuple[Connection, RemotingCommand, int, int, int]

log = logging.getLogger(__name__)

# Plain ints for the codes every send compares against: an enum member lookup costs ~80 ns on Python 3.11
# (EnumType.__getattr__ takes every class attribute off the fast path).
_SUCCESS = int(ResponseCode.SUCCESS)
_SEND_MESSAGE_V1 = int(RequestCode.SEND_MESSAGE)
_SEND_MESSAGE_V2 = int(RequestCode.SEND_MESSAGE_V2)
# How long a send that created its topic waits for the name servers before it is answered anyway.
_REGISTER_WAIT = 6.0


class SendProcessor:
    def __init__(self, ctx: BrokerContext, service: SendService) -> None:
        self._ctx = ctx
        self.config = ctx.config
        self.service = service
        self._gate = ctx.gate
        self._put_ack = ctx.put_ack
        #: queued sends: (connection, its consecutive requests from one read, when they were queued)
        self._queue: deque[tuple[Connection, list[RemotingCommand], float]] = deque()
        #: sends in ``_queue`` (its entries hold one or more)
        self._queued = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._drain_handle: asyncio.Handle | None = None
        self._started = False
        self._msg_id_prefix = ""
        #: sends held until the name servers know the topic they created: topic → [(conn, cmd, outcome)]
        self._held: dict[str, list[tuple[Connection, RemotingCommand, SendOutcome]]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def register(self) -> None:
        for code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
            self._gate.register(code, self.enqueue)
            self._gate.register_stretch(code, self.enqueue_stretch)

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._started = True
        #: the fixed half of every offset message id answered (the store host in hex)
        self._msg_id_prefix = encode_host(self._ctx.store_host).hex().upper()
        if self._queue:
            self._schedule_drain()

    async def stop(self) -> None:
        self._started = False
        if self._drain_handle is not None:
            self._drain_handle.cancel()
            self._drain_handle = None
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def queue_size(self) -> int:
        return self._queued

    def head_wait_ms(self) -> int:
        """How long the oldest queued send has waited (Java's headSlowTimeMills4SendThreadPoolQueue)."""
        queue = self._queue
        return int((time.monotonic() - queue[0][2]) * 1000) if queue else 0

    # ---------------------------------------------------------------------------------------- queueing

    def enqueue(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
        if self._queued >= self.config.sendQueueCapacity:
            return self._overload(cmd)
        self._queue.append((conn, [cmd], time.monotonic()))
        self._queued += 1
        if self._drain_handle is None and self._started:
            self._schedule_drain()
        return None

    def enqueue_stretch(self, conn: Connection, cmds: list[RemotingCommand]) -> None:
        """``enqueue`` for consecutive sends of one read, queued together (the gate's ``register_stretch``); the
        ones the queue has no room for are refused at once, in order."""
        room = self.config.sendQueueCapacity - self._queued
        if room < len(cmds):
            for cmd in cmds[max(room, 0) :]:
                self._gate.reply(conn, cmd, self._overload(cmd))
            cmds = cmds[: max(room, 0)]
            if not cmds:
                return
        self._queue.append((conn, cmds, time.monotonic()))
        self._queued += len(cmds)
        if self._drain_handle is None and self._started:
            self._schedule_drain()

    def _overload(self, cmd: RemotingCommand) -> RemotingCommand:
        return self._response(cmd, ResponseCode.SYSTEM_BUSY, "[OVERLOAD]system busy, start flow control for a while")

    def _schedule_drain(self) -> None:
        loop = self._loop
        assert loop is not None
        self._drain_handle = loop.call_soon(self._drain)

    def _drain(self) -> None:
        self._drain_handle = None
        limit = self.config.waitTimeMillsInSendQueue / 1000.0
        queue = self._queue
        monotonic = time.monotonic
        service = self.service
        # A connection's consecutive sends of one read are queued together (``enqueue_stretch``).
        # Plain sends (most of them) are stored as runs: one store call for consecutive ones, which shares the
        # lock, the clock and the stats; anything else goes through ``send`` after the run before it.
        # A V2 send as clients send it goes from its extFields to its run message in one call (the header object
        # and prepare_plain are the way for the rest, which stores the same or answers the header's error).
        rules = service.plain_rules() if service.runs_open else None
        run: list[PlainMessage] = []
        senders: list[tuple[Connection, RemotingCommand]] = []
        # Process what is queued now; yield to the loop between bursts so reads keep flowing.
        for _ in range(len(queue)):
            conn, cmds, enqueued = queue.popleft()
            self._queued -= len(cmds)
            if conn.closed:
                continue
            i, n = 0, len(cmds)
            while i < n:
                # checked again before each part: a send taken the general way may have held the rest (a stall)
                if (waited := monotonic() - enqueued) > limit:
                    self._refuse_late(conn, cmds[i:] if i else cmds, waited)
                    break
                if rules is not None:  # the plain sends from here on, read in one call
                    try:
                        taken = plain_sends_v2(cmds, i, conn.remote_host, rules, run)
                    except Exception:  # each is then read alone below (a bug here must not lose the sends)
                        log.exception("send.plain_read_failed remote=%s", conn.remote)
                        taken = i
                    if taken > i:
                        senders.extend(zip(repeat(conn), cmds[i:taken]))
                        i = taken
                        if i >= n:
                            break
                cmd = cmds[i]  # one that was not taken so: read again alone (its error logged), or sent
                i += 1
                if self._drain_one(conn, cmd, rules, run, senders):
                    run, senders = [], []
        if run:
            self._store_run(run, senders)
        if queue and self._started and self._drain_handle is None:
            self._schedule_drain()

    def _refuse_late(self, conn: Connection, cmds: list[RemotingCommand], waited: float) -> None:
        """Sends that waited in the queue past ``waitTimeMillsInSendQueue``: SYSTEM_BUSY, not stored (Java's
        cleanExpiredRequestInQueue)."""
        for cmd in cmds:
            self._gate.reply(conn, cmd, self._response(
                cmd, ResponseCode.SYSTEM_BUSY,
                f"[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: "
                f"{int(waited * 1000)}ms, size of queue: {self._queued}",
            ))  # fmt: skip

    def _drain_one(self, conn: Connection, cmd: RemotingCommand, rules: PlainRules | None, run: list[PlainMessage],
                   senders: list[tuple[Connection, RemotingCommand]]) -> bool:  # fmt: skip
        """A queued send the stretch reading did not take: added to the run if it reads as a plain one after all
        (by its header: a V1 send, a V2 one in an unusual spelling), else sent the general way once the run ahead
        of it is stored (arrival order). True when that run was stored: the caller starts a new one."""
        service = self.service
        # A bug in either reading must not lose the send: logged, and the send goes the general way.
        prepared = None
        if rules is not None and cmd.code == _SEND_MESSAGE_V2:
            try:
                prepared = plain_send_v2(cmd.ext_fields, cmd.body, conn.remote_host, rules)
            except Exception:
                log.exception("send.plain_read_failed remote=%s", conn.remote)
        if prepared is None:
            try:
                if cmd.code == _SEND_MESSAGE_V1:
                    header = SendMessageRequestHeader.from_ext(cmd.ext_fields)
                else:
                    header = send_header_from_v2(cmd.ext_fields)
            except ProtocolError as exc:  # as Java answers a processor that threw: no send extFields
                self._gate.reply(conn, cmd, self._gate.client_mistake(conn, cmd, exc))
                return False
            if rules is not None:
                try:
                    prepared = service.prepare_plain(header, cmd.body, conn.remote_host, rules)
                except Exception:
                    log.exception("send.prepare_failed remote=%s", conn.remote)
        if prepared is not None:
            run.append(prepared)
            senders.append((conn, cmd))
            return False
        stored = bool(run)
        if stored:  # the store keeps arrival order: the run before this send is written first
            self._store_run(run, senders)
        try:
            outcome = service.send(header, cmd.body, conn.remote_host, client_version=conn.version,
                                   remote=conn.remote)  # fmt: skip
        except BrokerError as exc:
            outcome = SendOutcome(exc.code, exc.remark)
        except ProtocolError as exc:  # a malformed body or properties: the gate's one line, no traceback
            self._gate.note_client_mistake(conn, cmd, exc)
            outcome = SendOutcome(ResponseCode.SYSTEM_ERROR, str(exc))
        except Exception as exc:
            log.exception("send.failed remote=%s", conn.remote)
            outcome = SendOutcome(ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")
        self._answer(conn, cmd, outcome)
        return stored

    def _store_run(self, run: list[PlainMessage], senders: list[tuple[Connection, RemotingCommand]]) -> None:
        """Store a run of plain sends with one store call and answer each (as ``_answer`` does). When answers
        wait (SYNC_FLUSH, SYNC_MASTER) the stored ones wait together: one wait for the run's last byte."""
        gate = self._gate
        try:
            results = self.service.put_plain_run(run)
        except Exception as exc:  # as ``send`` answers an exception: each send of the run, SYSTEM_ERROR
            log.exception("send.run_failed sends=%d", len(run))
            for conn, cmd in senders:
                gate.reply(conn, cmd, self._response(cmd, ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}"))
            return
        try:
            self._answer_stored_run(run, senders, results)
        except Exception:  # a bug in one answer must not stall the sends queued behind the run
            log.exception("send.run_answers_failed sends=%d", len(run))

    def _answer_stored_run(self, run: list[PlainMessage], senders: list[tuple[Connection, RemotingCommand]],
                           results: list[PlainPutResult]) -> None:  # fmt: skip
        """The answers of a stored run: at once, or together once the run's last byte may be answered."""
        gate = self._gate
        if self._put_ack.immediate and not gate.answer_hooks:
            self._answer_run(run, senders, results)
            return
        held: list[_Held] | None = None if self._put_ack.immediate else []
        end = 0
        for (conn, cmd), message, result in zip(senders, run, results, strict=True):
            try:
                if isinstance(result, tuple):
                    phys, queue_offset, size = result
                    if held is not None:
                        held.append((conn, cmd, phys, message[1], queue_offset))
                        end = max(end, phys + size)
                        continue
                    self._stored(conn, cmd, _SUCCESS, phys, message[1], queue_offset)
                else:
                    code, remark = code_of_put_status(result, self._ctx.store.disk_util)
                    gate.reply(conn, cmd, self._response(cmd, code, remark))
            except Exception as exc:
                self._answer_failed(conn, cmd, exc)
        if held and not self._put_ack.wait(end, partial(self._answer_held, held)):
            self._answer_held(held, _SUCCESS)

    def _answer_run(self, run: list[PlainMessage], senders: list[tuple[Connection, RemotingCommand]],
                    results: list[PlainPutResult]) -> None:  # fmt: skip
        """``_stored`` for each of a run answered at once with no answer hooks: the usual answers of a stretch
        of one connection's sends of one request code are written by one compiled call into one piece, which
        leaves in one write, and counted at once (``RemotingDispatcher.count_answered``); any other send is
        answered alone."""
        gate = self._gate
        cfg = self.config
        region, trace = cfg.regionId, "true" if cfg.traceOn else "false"
        prefix = self._msg_id_prefix
        i, n = 0, len(senders)
        while i < n:
            try:
                frames, end = plain_answers(senders, run, results, i, prefix, CURRENT_VERSION, region, trace)
            except Exception:  # a bug there must not cost the answers: this send is answered alone, and so on
                log.exception("send.answers_failed sends=%d", n - i)
                frames, end = b"", i
            conn, cmd = senders[i]
            if end > i:
                conn.write_frame(frames)
                gate.count_answered(cmd.code, _SUCCESS, end - i)
                i = end
                continue
            result = results[i]
            try:
                if type(result) is tuple:
                    self._stored(conn, cmd, _SUCCESS, result[0], run[i][1], result[1])
                else:
                    code, remark = code_of_put_status(result, self._ctx.store.disk_util)
                    gate.reply(conn, cmd, self._response(cmd, code, remark))
            except Exception as exc:
                self._answer_failed(conn, cmd, exc)
            i += 1

    def _answer_held(self, held: list[_Held], code: int) -> None:
        """A waiting run may be answered with ``code`` (SUCCESS or the wait's failure status)."""
        for conn, cmd, phys, queue_id, queue_offset in held:
            try:
                self._stored(conn, cmd, code, phys, queue_id, queue_offset)
            except Exception as exc:
                self._answer_failed(conn, cmd, exc)

    def _answer_failed(self, conn: Connection, cmd: RemotingCommand, exc: Exception) -> None:
        """A stored send whose answer could not be built: SYSTEM_ERROR with the exception, as Java's remoting
        answers a processor that threw, rather than no answer until the client's timeout. The message is
        stored, so the client's retry may store it again: at least once, as after a lost answer."""
        log.exception("send.answer_failed remote=%s opaque=%s", conn.remote, cmd.opaque)
        try:
            self._gate.reply(conn, cmd, self._response(cmd, ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}"))
        except Exception:  # the error answer too: logged, and the sends after this one are still answered
            log.exception("send.error_answer_failed remote=%s opaque=%s", conn.remote, cmd.opaque)

    def _stored(self, conn: Connection, cmd: RemotingCommand, code: int, phys: int, queue_id: int,
                queue_offset: int) -> None:  # fmt: skip
        """The answer of one stored plain send."""
        gate = self._gate
        if code == _SUCCESS and (cmd.serialize_type == SERIALIZE_JSON or cmd.language == "CPP"):  # JSON answer
            cfg = self.config
            gate.reply_frame(conn, cmd, _SUCCESS, encode_send_reply(
                cmd.opaque, CURRENT_VERSION, self._msg_id_prefix, phys, queue_id, queue_offset, cfg.regionId,
                "true" if cfg.traceOn else "false",
            ))  # fmt: skip
            return
        if cmd.flag & FLAG_ONEWAY:
            gate.answered(conn, cmd, code)  # counted, nothing to write
            return
        fields = self._stored_fields(f"{self._msg_id_prefix}{phys:016X}", queue_id, queue_offset)
        gate.reply(conn, cmd, cmd.response(code, None, fields))

    # --------------------------------------------------------------------------------------- answering

    def _answer(self, conn: Connection, cmd: RemotingCommand, outcome: SendOutcome) -> None:
        """The one answer path of the general sends: route registration → flush/replication wait → exit."""
        held = self._held
        if held or outcome.created_topic is not None:
            # The answer waits until the name servers know the topic: for the send that created it and for
            # every later send to it meanwhile (those skip the run while it is registering).
            waiting = held.get(outcome.topic)
            if waiting is not None:
                waiting.append((conn, cmd, outcome))
                return
            if outcome.created_topic is not None:
                held[outcome.created_topic] = [(conn, cmd, outcome)]
                task = asyncio.get_running_loop().create_task(self._register_then_answer(outcome.created_topic))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
                return
        put_ack = self._put_ack
        if not put_ack.immediate and outcome.code == _SUCCESS and outcome.msg_id is not None:
            done = partial(self._write, conn, cmd, outcome)
            if put_ack.wait(outcome.end_offset, done, wait_store=outcome.wait_store):
                return
        self._write(conn, cmd, outcome, outcome.code)

    def _write(self, conn: Connection, cmd: RemotingCommand, outcome: SendOutcome, code: int) -> None:
        if outcome.msg_id is None:
            resp = self._response(cmd, code, outcome.remark)
        else:
            fields = self._stored_fields(outcome.msg_id, outcome.queue_id, outcome.queue_offset)
            resp = cmd.response(code, outcome.remark if code == outcome.code else None, fields)
        self._gate.reply(conn, cmd, resp)

    async def _register_then_answer(self, topic: str) -> None:
        try:
            async with asyncio.timeout(_REGISTER_WAIT):
                await self._ctx.publish_topics()
        except TimeoutError:
            log.warning("send.register_timeout topic=%s", topic)
        except Exception:
            log.exception("send.register_failed topic=%s", topic)
        finally:
            self.service.route_registered(topic)
            held = self._held.pop(topic, [])
            for conn, cmd, outcome in held:
                outcome.created_topic = None
                if not conn.closed:
                    self._answer(conn, cmd, outcome)

    def _response(
        self, cmd: RemotingCommand, code: int, remark: str | None, ext: dict[str, str] | None = None
    ) -> RemotingCommand:
        """A send response; ``ext`` (if given) is taken over, not copied."""
        fields = ext if ext is not None else {}
        # Java adds these to every send response; Java clients dereference the map unconditionally.
        cfg = self.config
        fields["MSG_REGION"] = cfg.regionId
        fields["TRACE_ON"] = "true" if cfg.traceOn else "false"
        return cmd.response(code, remark, fields)

    def _stored_fields(self, msg_id: str, queue_id: int, queue_offset: int) -> dict[str, str]:
        """The extFields of a stored send's answer (what ``encode_send_reply`` writes for a JSON one)."""
        cfg = self.config
        return {
            "msgId": msg_id,
            "queueId": str(queue_id),
            "queueOffset": str(queue_offset),
            # Java adds these to every send response; Java clients dereference the map unconditionally.
            "MSG_REGION": cfg.regionId,
            "TRACE_ON": "true" if cfg.traceOn else "false",
        }
