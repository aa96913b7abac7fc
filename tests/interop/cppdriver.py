#!/usr/bin/env python3
"""Drive the Apache RocketMQ C++ client (PyPI wheel ``rocketmq==0.4.4``) from the command line.

Run it with the interop virtualenv's interpreter (see ``scripts/interop-venv.sh``)::

    .venv-interop/bin/python tests/interop/cppdriver.py produce --namesrv 127.0.0.1:9876 \
        --group PG --topic T --count 10
    .venv-interop/bin/python tests/interop/cppdriver.py push-consume --namesrv 127.0.0.1:9876 \
        --group CG --topic T --expect 10 --timeout 30
    .venv-interop/bin/python tests/interop/cppdriver.py pull-consume --namesrv 127.0.0.1:9876 \
        --group CG --topic T --expect 10 --timeout 30

Output: one JSON object per line on stdout, flushed after every line.

* ``{"event": "started", ...}`` once the client's ``start()`` returned;
* one line per message (produce: send results, consume: received messages);
* ``{"event": ...}`` diagnostics, ``{"error": ..., "message": ...}`` failures;
* exactly one final ``{"done": true, ...}`` line (unless the process is killed).

Exit codes: 0 success, 1 client error (start/send failed, ...), 2 usage error, 3 timeout.

The whole run is bounded: ``--timeout`` limits the work phase (start + sending, or the consume window) and
``--shutdown-timeout`` the client's ``shutdown()``, which can block for many seconds when a peer does not
answer.  A watchdog thread ends the process with ``os._exit`` when either is exceeded, because a blocked
ctypes call cannot be interrupted.  Python destructors of the wheel's objects (which call ``shutdown()``
again) are never run: the driver always leaves through ``os._exit``.

The C++ client writes its log to ``$HOME/logs/rocketmq-cpp/<pid>_rocketmq-cpp.log.0`` and (broadcasting
consumers) offsets to ``$HOME/.rocketmq_offsets/``; the ``SetXxxLogPath`` C functions are no-ops in this
client version, so the driver points ``HOME`` at ``--home`` (default: a fresh temporary directory, removed
after a successful run unless ``--keep-logs``).
"""

from __future__ import annotations

import argparse
import base64
import ctypes
import ipaddress
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any, NoReturn

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_TIMEOUT = 3

# Property keys the consumer always tries to read (the C API cannot enumerate a message's properties).
SYSTEM_PROPERTY_KEYS = (
    "UNIQ_KEY",
    "KEYS",
    "TAGS",
    "WAIT",
    "DELAY",
    "RETRY_TOPIC",
    "REAL_TOPIC",
    "REAL_QID",
    "TRAN_MSG",
    "PGROUP",
    "MIN_OFFSET",
    "MAX_OFFSET",
    "ORIGIN_MESSAGE_ID",
    "RECONSUME_TIME",
    "MAX_RECONSUME_TIMES",
    "CONSUME_START_TIME",
    "MSG_REGION",
    "TRACE_ON",
    "__STARTDELIVERTIME",
    "CLUSTER",
)

LOG_LEVELS = {"fatal": 1, "error": 2, "warn": 3, "info": 4, "debug": 5, "trace": 6}

# ---------------------------------------------------------------------------------------------------------
# output and lifetime


class Run:
    """JSON-lines output, the final ``done`` line and the watchdog that bounds every phase."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.finished = False
        self.phase = "init"
        self.deadline = float("inf")  # monotonic; the watchdog fires when it passes
        self.on_deadline: Callable[[], NoReturn] | None = None
        self.result: dict[str, Any] = {}
        self.t0 = time.monotonic()
        self.home: str | None = None
        self.remove_home = False
        self._watchdog = threading.Thread(target=self._watch, name="cppdriver-watchdog", daemon=True)
        self._watchdog.start()

    def emit(self, obj: dict[str, Any]) -> None:
        with self.lock:
            if self.finished:
                return
            self._write(obj)

    @staticmethod
    def _write(obj: dict[str, Any]) -> None:
        try:
            sys.stdout.write(json.dumps(obj, separators=(",", ":"), default=str) + "\n")
            sys.stdout.flush()
        except (BrokenPipeError, ValueError):
            os._exit(EXIT_ERROR)

    def set_phase(self, phase: str, seconds: float, on_deadline: Callable[[], NoReturn] | None = None) -> None:
        with self.lock:
            self.phase = phase
            self.deadline = time.monotonic() + seconds
            self.on_deadline = on_deadline

    def elapsed(self) -> float:
        return round(time.monotonic() - self.t0, 3)

    def finish(self, code: int, **extra: Any) -> NoReturn:
        """Print the ``done`` line (once, whoever calls first) and leave without running destructors."""
        with self.lock:
            if not self.finished:
                self.finished = True
                self._write({"done": True, **self.result, **extra, "elapsed_s": self.elapsed()})
                if self.remove_home and code == EXIT_OK and self.home:
                    shutil.rmtree(self.home, ignore_errors=True)
            sys.stderr.flush()
            os._exit(code)

    def fail(self, code: int, error: str, message: str, **extra: Any) -> NoReturn:
        self.emit({"error": error, "message": message, "phase": self.phase, **extra})
        self.finish(code, failed_phase=self.phase)

    def _watch(self) -> None:
        while True:
            time.sleep(0.05)
            with self.lock:
                expired = time.monotonic() > self.deadline
                handler = self.on_deadline
            if expired:
                if handler is not None:
                    handler()
                self.fail(EXIT_TIMEOUT, "timeout", f"phase {self.phase!r} exceeded its time limit")


RUN: Run  # created in main()


def error_text(exc: BaseException) -> str:
    if exc.args and isinstance(exc.args[0], bytes):  # ProducerSendAsyncFailed carries the C char array
        return exc.args[0].decode("utf-8", errors="replace") or type(exc).__name__
    return str(exc) or type(exc).__name__


def as_text(value: bytes | str | None) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return value.decode("utf-8", errors="replace")


# ---------------------------------------------------------------------------------------------------------
# the wheel (imported lazily, after HOME has been redirected)


class Wheel:
    """The parts of the ``rocketmq`` 0.4.4 wheel the driver uses."""

    def __init__(self) -> None:
        from rocketmq import client, exceptions, ffi  # type: ignore[import-not-found,import-untyped,unused-ignore]

        self.client: Any = client
        self.ffi: Any = ffi
        self.exceptions: Any = exceptions
        self.dll: Any = ffi.dll
        self.RocketMQException: type[Exception] = exceptions.RocketMQException

    def check(self, status: Any) -> None:
        self.exceptions.ffi_check(status)


def import_wheel() -> Wheel:
    try:
        return Wheel()
    except Exception as exc:  # ImportError, OSError from dlopen
        RUN.fail(EXIT_ERROR, "import", f"cannot import the rocketmq wheel: {error_text(exc)}", python=sys.executable)


def message_record(wheel: Wheel, handle: Any, read_props: list[str]) -> dict[str, Any]:
    """Everything the C API exposes about a received message (must be called while ``handle`` is alive)."""
    msg = wheel.client.RecvMessage(handle)
    body: bytes = msg.body or b""  # NB: GetMessageBody returns a C string: truncated at the first NUL
    record: dict[str, Any] = {
        "msg_id": as_text(msg.id),
        "topic": as_text(msg.topic),
        "tags": as_text(msg.tags),
        "keys": as_text(msg.keys),
    }
    try:
        record["body"] = body.decode("utf-8")
    except UnicodeDecodeError:
        record["body"] = base64.b64encode(body).decode("ascii")
        record["body_encoding"] = "base64"
    props: dict[str, str] = {}
    for key in (*SYSTEM_PROPERTY_KEYS, *read_props):
        value = as_text(msg.get_property(key))
        if value:
            props[key] = value
    record.update(
        body_len=len(body),
        props=props,
        queue_id=msg.queue_id,
        queue_offset=msg.queue_offset,
        reconsume_times=msg.reconsume_times,
        commit_log_offset=msg.commit_log_offset,
        store_size=msg.store_size,
        born_timestamp=msg.born_timestamp,
        store_timestamp=msg.store_timestamp,
        delay_time_level=msg.delay_time_level,
    )
    return record


def shutdown_and_finish(args: argparse.Namespace, code: int, shutdown: Callable[[], None]) -> NoReturn:
    """Shut the client down within ``--shutdown-timeout`` (or not at all) and print the ``done`` line."""
    if args.no_shutdown:
        RUN.finish(code, shutdown="skipped")

    def too_slow() -> NoReturn:
        RUN.finish(code, shutdown="timeout")

    RUN.set_phase("shutdown", args.shutdown_timeout, too_slow)
    t = time.monotonic()
    try:
        shutdown()
    except Exception as exc:
        RUN.emit({"error": type(exc).__name__, "message": error_text(exc), "phase": "shutdown"})
    RUN.finish(code, shutdown="ok", shutdown_s=round(time.monotonic() - t, 3))


def start_client(what: str, start: Callable[[], None], wheel: Wheel, args: argparse.Namespace) -> None:
    RUN.set_phase("start", args.timeout)
    t = time.monotonic()
    try:
        start()
    except wheel.RocketMQException as exc:
        RUN.fail(EXIT_ERROR, type(exc).__name__, error_text(exc))
    RUN.emit(
        {
            "event": "started",
            "role": what,
            "pid": os.getpid(),
            "instance": args.instance_name or "DEFAULT",
            "start_s": round(time.monotonic() - t, 3),
            "home": RUN.home,
        }
    )


# ---------------------------------------------------------------------------------------------------------
# produce


def make_body(args: argparse.Namespace, i: int) -> bytes:
    template: str = args.body
    body = template.replace("{i}", str(i)).encode("utf-8")
    if args.body_size is None:
        return body
    size: int = args.body_size
    if len(body) >= size:
        return body[:size]
    filler = b"abcdefghijklmnopqrstuvwxyz0123456789"
    need = size - len(body)
    return body + (filler * (need // len(filler) + 1))[:need]


def build_message(wheel: Wheel, args: argparse.Namespace, i: int) -> tuple[Any, dict[str, Any]]:
    msg = wheel.client.Message(args.topic)
    info: dict[str, Any] = {"i": i}
    if args.tags:
        tags = args.tags[i % len(args.tags)]
        msg.set_tags(tags)
        info["tags"] = tags
    if args.keys_prefix is not None:
        keys = f"{args.keys_prefix}{i}"
        msg.set_keys(keys)
        info["keys"] = keys
    for key, value in args.prop:
        msg.set_property(key, value.replace("{i}", str(i)))
    if args.delay_level is not None:
        msg.set_delay_time_level(args.delay_level)
    body = make_body(args, i)
    # Message.set_body() passes a C string (stops at NUL); SetByteMessageBody takes an explicit length.
    wheel.check(wheel.dll.SetByteMessageBody(msg._handle, body, len(body)))
    info["body_len"] = len(body)
    return msg, info


def set_credentials(client: Any, args: argparse.Namespace) -> None:
    """``set_session_credentials`` when an account is given (the client signs every request either way: with
    empty credentials by default)."""
    if args.access_key is not None or args.secret_key is not None:
        client.set_session_credentials(args.access_key or "", args.secret_key or "", args.channel)


def send_result(res: Any) -> dict[str, Any]:
    return {"msg_id": res.msg_id, "offset": res.offset, "status": res.status.name, "status_code": int(res.status)}


def cmd_produce(args: argparse.Namespace) -> NoReturn:
    wheel = import_wheel()
    producer = wheel.client.Producer(args.group, timeout=args.send_timeout_ms)
    producer.set_namesrv_addr(args.namesrv)
    set_credentials(producer, args)
    wheel.dll.SetProducerLogLevel(producer._handle, LOG_LEVELS[args.log_level])
    if args.instance_name:
        wheel.check(wheel.dll.SetProducerInstanceName(producer._handle, args.instance_name.encode()))
    start_client("producer", producer.start, wheel, args)

    stats: dict[str, Any] = {"sent": 0, "failed": 0, "requested": args.count, "mode": args.mode}
    RUN.result = stats
    RUN.set_phase("send", max(0.0, args.timeout - (time.monotonic() - RUN.t0)))
    pending = threading.Semaphore(0)
    keep: list[Any] = []  # messages (and callbacks) that must outlive an async send

    def count(ok: bool) -> None:
        with RUN.lock:
            stats["sent" if ok else "failed"] += 1

    def on_error(info: dict[str, Any], exc: BaseException, n: int = 1) -> bool:
        for _ in range(n):
            count(False)
        RUN.emit({**info, "error": type(exc).__name__, "message": error_text(exc)})
        return bool(args.continue_on_error)

    awaited = 0  # async sends whose callback is still to come

    def send_async(msg: Any, info: dict[str, Any]) -> bool:
        """One send_async; a failure reported synchronously is counted once, here, not by the callback."""
        nonlocal awaited
        guard = threading.Lock()
        state: dict[str, Any] = {"in_call": True, "cb_exc": None}

        def ok_cb(res: Any) -> None:
            count(True)
            RUN.emit({**info, **send_result(res)})
            pending.release()

        def err_cb(exc: Exception) -> None:
            with guard:
                if state["in_call"]:  # SendMessageAsync calls it before returning an error code
                    state["cb_exc"] = exc
                    return
            on_error(info, exc)
            pending.release()

        keep.append(msg)
        raised: BaseException | None = None
        try:
            producer.send_async(msg, ok_cb, err_cb)
        except wheel.RocketMQException as exc:
            raised = exc
        with guard:
            state["in_call"] = False
            cb_exc = state["cb_exc"]
        if raised is None and cb_exc is None:
            awaited += 1
            return True
        failure = raised if raised is not None else cb_exc
        assert failure is not None
        return on_error(info, failure)

    i = 0
    while i < args.count:
        if args.mode == "batch":
            n = min(args.batch_size, args.count - i)
            built = [build_message(wheel, args, j) for j in range(i, i + n)]
            info = {"batch_first_i": i, "count": n}
            try:
                res = producer.send_batch([m for m, _ in built])
            except wheel.RocketMQException as exc:
                if not on_error(info, exc, n):
                    break
            else:
                for _ in range(n):
                    count(True)
                RUN.emit({**info, **send_result(res)})
            i += n
        else:
            msg, info = build_message(wheel, args, i)
            try:
                if args.mode == "sync":
                    RUN.emit({**info, **send_result(producer.send_sync(msg))})
                elif args.mode == "oneway":
                    producer.send_oneway(msg)
                    RUN.emit({**info, "oneway": True})
                elif args.mode in ("orderly", "oneway-orderly"):
                    shard = i % args.shard_count
                    picked: dict[str, int] = {}

                    def selector(mq_count: int, _msg: Any, arg: Any, picked: dict[str, int] = picked) -> int:
                        index = int(ctypes.cast(arg, ctypes.POINTER(ctypes.c_int))[0]) % mq_count
                        picked.update(queue_index=index, mq_count=mq_count)
                        return index

                    if args.mode == "orderly":
                        res = producer.send_orderly(msg, shard, retry_times=args.retry_times, queue_selector=selector)
                        RUN.emit({**info, "shard": shard, **picked, **send_result(res)})
                    else:
                        producer.send_oneway_orderly(msg, shard, queue_selector=selector)
                        RUN.emit({**info, "shard": shard, **picked, "oneway": True})
                elif args.mode == "async":
                    if not send_async(msg, info):
                        break
                    i += 1
                    continue  # counted by the callbacks (or by send_async)
                count(True)
            except wheel.RocketMQException as exc:
                if not on_error(info, exc):
                    break
            i += 1
        if args.interval_ms:
            time.sleep(args.interval_ms / 1000.0)

    for _ in range(awaited):
        pending.acquire()  # bounded by the "send" phase watchdog
    code = EXIT_OK if stats["failed"] == 0 and stats["sent"] == args.count else EXIT_ERROR
    shutdown_and_finish(args, code, producer.shutdown)


# ---------------------------------------------------------------------------------------------------------
# push-consume


def cmd_push_consume(args: argparse.Namespace) -> NoReturn:
    wheel = import_wheel()
    ffi = wheel.ffi
    model = ffi.MessageModel.BROADCASTING if args.mode == "broadcasting" else ffi.MessageModel.CLUSTERING
    consumer = wheel.client.PushConsumer(args.group, orderly=args.orderly, message_model=model)
    consumer.set_namesrv_addr(args.namesrv)
    set_credentials(consumer, args)
    wheel.dll.SetPushConsumerLogLevel(consumer._handle, LOG_LEVELS[args.log_level])
    if args.instance_name:
        consumer.set_instance_name(args.instance_name)
    if args.threads:
        consumer.set_thread_count(args.threads)
    if args.batch_max:
        consumer.set_message_batch_max_size(args.batch_max)

    success = int(ffi._CConsumeStatus.CONSUME_SUCCESS)
    later = int(ffi._CConsumeStatus.RECONSUME_LATER)
    stats: dict[str, Any] = {"received": 0, "unique": 0, "deliveries": 0, "reconsume_later": 0, "expected": args.expect}
    RUN.result = stats
    unique: set[str] = set()
    refused: set[str] = set()
    reached = threading.Event()

    def on_message(_consumer: Any, handle: Any) -> int:
        # Runs on a C++ consume thread.  Never let an exception escape: ctypes would print it and
        # return 0, i.e. CONSUME_SUCCESS (the wheel's own subscribe() wrapper has exactly that bug).
        try:
            record = message_record(wheel, handle, args.read_prop)
            msg_id = str(record["msg_id"])
            with RUN.lock:
                if RUN.finished:
                    return later
                stats["deliveries"] += 1
                if stats["reconsume_later"] < args.reconsume_later_first and msg_id not in refused:
                    refused.add(msg_id)
                    stats["reconsume_later"] += 1
                    action, status = "reconsume_later", later
                else:
                    unique.add(msg_id)
                    stats["received"] += 1
                    stats["unique"] = len(unique)
                    action, status = "ack", success
                    if args.expect and stats["received"] >= args.expect:
                        reached.set()
                RUN.emit({**record, "action": action, "delivery": stats["deliveries"]})
            return status
        except BaseException as exc:
            RUN.emit({"error": type(exc).__name__, "message": error_text(exc), "phase": "consume-callback"})
            return later

    # Subscribe + register the raw C callback ourselves so that RECONSUME_LATER can be returned.
    callback = ffi.MSG_CALLBACK_FUNC(on_message)
    consumer._callback_refs.append(callback)
    wheel.check(wheel.dll.Subscribe(consumer._handle, args.topic.encode(), args.tags.encode()))
    register = wheel.dll.RegisterMessageCallbackOrderly if args.orderly else wheel.dll.RegisterMessageCallback
    wheel.check(register(consumer._handle, callback))

    start_client("push-consumer", consumer.start, wheel, args)
    window_end = RUN.t0 + args.timeout
    # The loop below ends by itself at window_end (+ linger); the watchdog is only a safety net.
    RUN.set_phase("consume", args.timeout + args.linger + 5.0)
    while time.monotonic() < window_end and not reached.is_set():
        reached.wait(min(0.1, max(0.0, window_end - time.monotonic())))
    if reached.is_set() and args.linger > 0:
        time.sleep(args.linger)
    with RUN.lock:
        timed_out = args.expect > 0 and stats["received"] < args.expect
    if timed_out:
        RUN.emit({"event": "timeout", "received": stats["received"], "expected": args.expect})
    shutdown_and_finish(args, EXIT_TIMEOUT if timed_out else EXIT_OK, consumer.shutdown)


# ---------------------------------------------------------------------------------------------------------
# pull-consume

PULL_STATUS = {0: "FOUND", 1: "NO_NEW_MSG", 2: "NO_MATCHED_MSG", 3: "OFFSET_ILLEGAL", 4: "BROKER_TIMEOUT"}


def cmd_pull_consume(args: argparse.Namespace) -> NoReturn:
    wheel = import_wheel()
    ffi, dll = wheel.ffi, wheel.dll
    consumer = wheel.client.PullConsumer(args.group)
    consumer.set_namesrv_addr(args.namesrv)
    set_credentials(consumer, args)
    dll.SetPullConsumerLogLevel(consumer._handle, LOG_LEVELS[args.log_level])
    if args.instance_name:
        RUN.emit({"event": "warning", "message": "the C API has no instance-name setter for pull consumers"})
    start_client("pull-consumer", consumer.start, wheel, args)

    stats: dict[str, Any] = {"received": 0, "unique": 0, "expected": args.expect}
    if not args.wrapper_loop:
        stats["pulls"] = 0
    RUN.result = stats
    unique: set[str] = set()
    window_end: float = RUN.t0 + args.timeout
    # One blocked Pull() can take the client's 10 s pull timeout; the loop itself stops in time.
    RUN.set_phase("consume", args.timeout + args.linger + 15.0)
    reached_at: float | None = None
    linger: float = args.linger

    def done_consuming() -> bool:
        now = time.monotonic()
        if reached_at is not None:
            return now >= reached_at + linger
        return now >= window_end

    def got(record: dict[str, Any]) -> None:
        nonlocal reached_at
        unique.add(str(record["msg_id"]))
        stats["received"] += 1
        stats["unique"] = len(unique)
        RUN.emit(record)
        if args.expect and stats["received"] >= args.expect and reached_at is None:
            reached_at = time.monotonic()

    expr = args.tags.encode()
    if args.wrapper_loop:
        # The wheel's own generator: one pass over all queues per call, offsets kept in
        # PullConsumer.offset_table.  It retries BROKER_TIMEOUT forever; the watchdog bounds that.
        while not done_consuming():
            before = stats["received"]
            for msg in consumer.pull(args.topic, args.tags, args.max_num):
                got(message_record(wheel, msg._handle, args.read_prop))
                if done_consuming():
                    break
            if stats["received"] == before:
                time.sleep(0.2)
    else:
        offsets: dict[tuple[str, int], int] = {}
        queues: list[Any] = []
        last_fetch = -1e9
        last_fetch_problem: str | None = None  # None: nothing reported yet
        while not done_consuming():
            if not queues or time.monotonic() - last_fetch > 2.0:
                last_fetch = time.monotonic()
                problem = ""
                mqs = ctypes.POINTER(ffi._CMessageQueue)()
                size = ctypes.c_int(0)
                try:
                    wheel.check(
                        dll.FetchSubscriptionMessageQueues(
                            consumer._handle, args.topic.encode(), ctypes.byref(mqs), ctypes.byref(size)
                        )
                    )
                    fetched = [ffi._CMessageQueue.from_buffer_copy(mqs[k]) for k in range(size.value)]
                    if mqs:
                        dll.ReleaseSubscriptionMessageQueue(mqs)
                    if fetched:
                        queues = fetched
                    else:
                        problem = "no queues (route missing or empty)"
                except wheel.RocketMQException as exc:
                    problem = f"{type(exc).__name__}: {error_text(exc)}"
                if problem != last_fetch_problem:
                    if problem:
                        RUN.emit({"event": "fetch_queues_failed", "message": problem})
                    else:
                        RUN.emit(
                            {
                                "event": "queues",
                                "queues": [{"broker": as_text(q.brokerName), "queue_id": q.queueId} for q in queues],
                            }
                        )
                    last_fetch_problem = problem
                if not queues:
                    time.sleep(0.5)
                    continue
            found_any = False
            for mq in queues:
                key = (as_text(mq.brokerName) or "", int(mq.queueId))
                spins = 0
                while not done_consuming():
                    offset = offsets.get(key, 0)
                    res = dll.Pull(consumer._handle, ctypes.byref(mq), expr, offset, args.max_num)
                    stats["pulls"] += 1
                    status = PULL_STATUS.get(res.pullStatus, str(res.pullStatus))
                    if args.trace_pulls:
                        RUN.emit(
                            {
                                "pull": {
                                    "broker": key[0],
                                    "queue_id": key[1],
                                    "offset": offset,
                                    "status": status,
                                    "next": res.nextBeginOffset,
                                    "min": res.minOffset,
                                    "max": res.maxOffset,
                                    "found": res.size,
                                }
                            }
                        )
                    if status == "BROKER_TIMEOUT":
                        err = dll.GetLatestErrorMessage()
                        RUN.emit(
                            {
                                "event": "pull_failed",
                                "broker": key[0],
                                "queue_id": key[1],
                                "offset": offset,
                                "message": as_text(err) or "",
                            }
                        )
                        break
                    offsets[key] = int(res.nextBeginOffset)
                    if status == "FOUND":
                        try:
                            for k in range(res.size):
                                record = message_record(wheel, res.msgFoundList[k], args.read_prop)
                                record["broker"] = key[0]
                                got(record)
                        finally:
                            dll.ReleasePullResult(res)
                        found_any = True
                        spins = 0
                        continue
                    if status == "NO_NEW_MSG":
                        break
                    # NO_MATCHED_MSG / OFFSET_ILLEGAL: the wheel pulls again at nextBeginOffset.
                    spins = spins + 1 if res.nextBeginOffset == offset else 0
                    if spins >= 20:
                        RUN.emit(
                            {
                                "event": "pull_stuck",
                                "broker": key[0],
                                "queue_id": key[1],
                                "offset": offset,
                                "status": status,
                            }
                        )
                        break
            if not found_any:
                time.sleep(0.2)

    timed_out = bool(args.expect) and stats["received"] < args.expect
    if timed_out:
        RUN.emit({"event": "timeout", "received": stats["received"], "expected": args.expect})
    shutdown_and_finish(args, EXIT_TIMEOUT if timed_out else EXIT_OK, consumer.shutdown)


# ---------------------------------------------------------------------------------------------------------
# command line


def loopback_namesrv(value: str) -> str:
    """``host:port[;host:port...]`` with every host on the loopback range (tests never leave the host)."""
    parts = [p.strip() for p in value.split(";") if p.strip()]
    if not parts:
        raise argparse.ArgumentTypeError("empty name server address")
    for part in parts:
        host, sep, port = part.rpartition(":")
        if not sep or not port.isdigit() or not 0 < int(port) < 65536:
            raise argparse.ArgumentTypeError(f"bad name server address {part!r} (want host:port)")
        if host != "localhost":
            try:
                if not ipaddress.IPv4Address(host).is_loopback:
                    raise ValueError
            except ValueError:
                raise argparse.ArgumentTypeError(f"name server {part!r} is not a 127.x.x.x address") from None
    return ";".join(parts)


def key_value(value: str) -> tuple[str, str]:
    key, sep, val = value.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected k=v, got {value!r}")
    return key, val


def positive_int(value: str) -> int:
    n = int(value)
    if n <= 0:
        raise argparse.ArgumentTypeError("must be > 0")
    return n


class JsonArgumentParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        sys.stdout.write(json.dumps({"error": "usage", "message": message}) + "\n")
        sys.stdout.flush()
        self.print_usage(sys.stderr)
        os._exit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    common = JsonArgumentParser(add_help=False)
    common.add_argument("--namesrv", required=True, type=loopback_namesrv, help="127.0.0.1:9876[;...]")
    common.add_argument("--group", required=True)
    common.add_argument("--topic", required=True)
    common.add_argument(
        "--timeout", type=float, default=60.0, help="seconds for start + the work (sends / consume window); default 60"
    )
    common.add_argument(
        "--shutdown-timeout", type=float, default=15.0, help="seconds allowed for the client's shutdown(); default 15"
    )
    common.add_argument(
        "--no-shutdown", action="store_true", help="skip shutdown() and exit at once (simulates a crashed client)"
    )
    common.add_argument(
        "--instance-name", default=None, help="C++ instance name (client id = <pid>-<ip>@<instance>); default DEFAULT"
    )
    common.add_argument(
        "--home",
        default=None,
        help="HOME for the C++ client (logs/rocketmq-cpp, .rocketmq_offsets); default: a temporary directory",
    )
    common.add_argument("--keep-logs", action="store_true", help="keep the temporary HOME after success")
    common.add_argument("--access-key", default=None, help="ACL account: set_session_credentials(access key, ...)")
    common.add_argument("--secret-key", default=None, help="ACL account: its secret key")
    common.add_argument("--channel", default="ALIYUN", help="OnsChannel of set_session_credentials (default ALIYUN)")
    common.add_argument("--log-level", choices=sorted(LOG_LEVELS, key=LOG_LEVELS.__getitem__), default="info")

    parser = JsonArgumentParser(prog="cppdriver", description=__doc__.split("\n\n")[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=JsonArgumentParser)

    p = sub.add_parser("produce", parents=[common], help="send messages")
    p.add_argument("--count", type=int, default=1)
    p.add_argument("--mode", choices=["sync", "async", "oneway", "orderly", "oneway-orderly", "batch"], default="sync")
    p.add_argument(
        "--tags",
        type=lambda s: [t for t in s.split(",") if t],
        default=[],
        help="tag, or comma-separated tags used round-robin (message i gets tags[i %% n])",
    )
    p.add_argument("--keys-prefix", default=None, help="message i gets keys <prefix><i>")
    p.add_argument(
        "--prop",
        type=key_value,
        action="append",
        default=[],
        help="user property k=v (repeatable; '{i}' in v is replaced by the index)",
    )
    p.add_argument("--body", default="body-{i}", help="body template, '{i}' replaced by the index")
    p.add_argument("--body-size", type=int, default=None, help="pad/truncate the body to exactly B bytes")
    p.add_argument("--batch-size", type=positive_int, default=4)
    p.add_argument("--delay-level", type=int, default=None)
    p.add_argument(
        "--shard-count",
        type=positive_int,
        default=1,
        help="orderly modes: selector arg = i %% shard_count, queue = arg %% queue_count",
    )
    p.add_argument("--retry-times", type=int, default=3, help="orderly: autoRetryTimes")
    p.add_argument("--send-timeout-ms", type=positive_int, default=3000)
    p.add_argument("--interval-ms", type=float, default=0.0)
    p.add_argument("--continue-on-error", action="store_true")
    p.set_defaults(func=cmd_produce)

    def consumer_options(c: argparse.ArgumentParser) -> None:
        c.add_argument(
            "--expect",
            type=int,
            default=1,
            help="stop after this many acknowledged messages (0: consume for the whole --timeout)",
        )
        c.add_argument("--tags", default="*", help="subscription expression, e.g. 'A || B'")
        c.add_argument("--read-prop", action="append", default=[], help="also report this property key")
        c.add_argument(
            "--linger", type=float, default=0.0, help="keep consuming this many seconds after --expect was reached"
        )

    c = sub.add_parser("push-consume", parents=[common], help="consume with PushConsumer")
    consumer_options(c)
    c.add_argument("--mode", choices=["clustering", "broadcasting"], default="clustering")
    c.add_argument("--orderly", action="store_true")
    c.add_argument(
        "--reconsume-later-first",
        type=int,
        default=0,
        metavar="K",
        help="answer RECONSUME_LATER to the first delivery of up to K distinct messages",
    )
    c.add_argument("--threads", type=positive_int, default=None, help="consume thread count")
    c.add_argument("--batch-max", type=positive_int, default=None, help="consumeMessageBatchMaxSize")
    c.set_defaults(func=cmd_push_consume)

    q = sub.add_parser("pull-consume", parents=[common], help="read every queue from offset 0 with PullConsumer")
    consumer_options(q)
    q.add_argument("--max-num", type=positive_int, default=32)
    q.add_argument("--trace-pulls", action="store_true", help="print every pull result")
    q.add_argument(
        "--wrapper-loop",
        action="store_true",
        help="iterate with the wheel's PullConsumer.pull() generator instead of the bounded loop",
    )
    q.set_defaults(func=cmd_pull_consume)
    return parser


def main(argv: list[str] | None = None) -> NoReturn:
    global RUN
    RUN = Run()
    args = build_parser().parse_args(argv)
    if args.home:
        os.makedirs(args.home, exist_ok=True)
        RUN.home = os.path.abspath(args.home)
    else:
        RUN.home = tempfile.mkdtemp(prefix="rocketq-cppdriver-")
        RUN.remove_home = not args.keep_logs
    # Before the wheel is imported: the C++ client reads HOME for its log directory and local offset store,
    # and NAMESRV_ADDR as a default name server address.
    os.environ["HOME"] = RUN.home
    os.environ.pop("NAMESRV_ADDR", None)
    RUN.result = {}
    try:
        args.func(args)
    except SystemExit:
        raise
    except BaseException as exc:
        RUN.fail(EXIT_ERROR, type(exc).__name__, error_text(exc))
    RUN.finish(EXIT_ERROR, note="command returned without finishing")


if __name__ == "__main__":
    main()
