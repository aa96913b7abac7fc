"""A driver for Apache RocketMQ's official 5.x Python client (PyPI ``rocketmq-python-client``), run by
tests/interop/v5 in its own interpreter (``.venv-v5py``: its protos and rocketq's cannot share one process).

    python pyclient.py ENDPOINT produce TOPIC KIND COUNT     KIND: normal fifo delay tx-commit tx-rollback tx-orphan
    python pyclient.py ENDPOINT simple GROUP TOPIC COUNT     receive COUNT, change the first one's invisible
                                                              duration, ack everything, print what came
    python pyclient.py ENDPOINT redeliver GROUP TOPIC        receive one, let it come back (attempt 2), ack it
    python pyclient.py ENDPOINT dlq GROUP TOPIC              never ack; report the delivery attempts seen
    python pyclient.py ENDPOINT fifo GROUP TOPIC COUNT       receive in order, one at a time, acking each
    python pyclient.py ENDPOINT push GROUP TOPIC COUNT       a PushConsumer whose listener fails each message once

Each result is one JSON line on stdout; the process exits 0 only when the scenario ran to its end. Every
wait is bounded (ROCKETQ_V5_WAIT seconds, default 60).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

import rocketmq as R  # the 5.x client's package, in .venv-v5py (not the C++ wheel of the same name)

WAIT = float(os.environ.get("ROCKETQ_V5_WAIT", "60"))


def out(**fields: Any) -> None:
    print(json.dumps(fields, sort_keys=True), flush=True)


def config(endpoint: str) -> Any:
    return R.ClientConfiguration(endpoint, R.Credentials(), request_timeout=5)


class Checker(R.TransactionChecker):
    """Answers COMMIT when the broker asks about an orphaned transaction."""

    def __init__(self) -> None:
        self.checked: list[str] = []

    def check(self, message: Any) -> Any:
        self.checked.append(message.body.decode())
        return R.TransactionResolution.COMMIT


def produce(endpoint: str, topic: str, kind: str, count: int) -> None:
    checker = Checker()
    producer = R.Producer(config(endpoint), (topic,), checker if kind.startswith("tx") else None)
    producer.startup()
    try:
        for i in range(count):
            msg = R.Message()
            msg.topic = topic
            msg.body = f"{kind}-{i}".encode()
            msg.tag = "TagA"
            msg.keys = f"key-{i}"
            msg.add_property("k", f"v{i}")
            if kind == "fifo":
                msg.message_group = f"group-{i % 2}"
            if kind == "delay":
                msg.delivery_timestamp = int(time.time()) + 2
            if kind.startswith("tx"):
                tx = producer.begin_transaction()
                receipt = producer.send(msg, tx)
                if kind == "tx-commit":
                    tx.commit()
                elif kind == "tx-rollback":
                    tx.rollback()
            else:
                receipt = producer.send(msg)
            out(kind=kind, body=msg.body.decode(), message_id=receipt.message_id)
        if kind == "tx-orphan":
            deadline = time.monotonic() + WAIT
            while len(checker.checked) < count and time.monotonic() < deadline:
                time.sleep(0.1)
            out(checked=sorted(checker.checked))
            time.sleep(1.0)  # the client answers the check with its own EndTransaction call
    finally:
        producer.shutdown()


def simple_consumer(endpoint: str, group: str, topic: str, await_s: int = 2) -> Any:
    consumer = R.SimpleConsumer(config(endpoint), group, {topic: R.FilterExpression()}, await_s)
    consumer.startup()
    return consumer


def receive(consumer: Any, count: int, invisible_s: int) -> list[Any]:
    """``consumer.receive``, retried while Apache RocketMQ's proxy has not registered the client's settings yet.

    A workaround for the Java proxy (5.3.3, local mode), not for rocketq: the 5.1.2 client sends its settings
    over Telemetry without waiting for them to be taken, and a ReceiveMessage that reaches the proxy first is
    answered 50001 (NullPointerException on the missing settings, ReceiveMessageActivity). rocketq answers it
    from the request itself."""
    deadline = time.monotonic() + 10
    while True:
        try:
            return list(consumer.receive(count, invisible_s))
        except Exception as exc:  # the client's InternalErrorException (rocketmq.v5.exception)
            if '"settings" is null' not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def view(m: Any) -> dict[str, Any]:
    return {"body": m.body.decode(), "attempt": m.delivery_attempt, "tag": m.tag, "group": m.message_group,
            "keys": sorted(m.keys or []), "topic": m.topic, "properties": dict(m.properties or {})}  # fmt: skip


def simple(endpoint: str, group: str, topic: str, count: int) -> None:
    consumer = simple_consumer(endpoint, group, topic)
    try:
        got: list[Any] = []
        deadline = time.monotonic() + WAIT
        idle = 0
        while len(got) < count and time.monotonic() < deadline and idle < 2:
            batch = receive(consumer, 16, 15)
            got += batch
            idle = idle + 1 if got and not batch else 0  # drained by the group's other consumers: stop
        changed = False
        for m in got:
            if not changed:
                consumer.change_invisible_duration(m, 20)  # a new handle; the ack below uses it
                changed = True
            consumer.ack(m)
            out(event="acked", **view(m))
        # acked: nothing comes back
        rest = receive(consumer, 16, 15)
        out(event="after", count=len(rest))
    finally:
        consumer.shutdown()


def redeliver(endpoint: str, group: str, topic: str) -> None:
    consumer = simple_consumer(endpoint, group, topic)
    try:
        first: list[Any] = []
        deadline = time.monotonic() + WAIT
        while not first and time.monotonic() < deadline:
            first = receive(consumer, 1, 10)
        out(event="first", **view(first[0]))
        consumer.change_invisible_duration(first[0], 1)  # not acked: back in a second
        again: list[Any] = []
        while not again and time.monotonic() < deadline:
            again = receive(consumer, 1, 15)
        out(event="again", **view(again[0]))
        consumer.ack(again[0])
    finally:
        consumer.shutdown()


def dlq(endpoint: str, group: str, topic: str) -> None:
    """Never ack: each delivery gets 1 s more invisibility; stop after three empty receives once two came."""
    consumer = simple_consumer(endpoint, group, topic)
    try:
        attempts: list[int] = []
        empty = 0
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline and not (len(attempts) >= 2 and empty >= 3):
            got = receive(consumer, 1, 10)
            empty = 0 if got else empty + 1
            for m in got:
                attempts.append(m.delivery_attempt)
                consumer.change_invisible_duration(m, 1)
        out(event="dlq", attempts=attempts)
    finally:
        consumer.shutdown()


def fifo(endpoint: str, group: str, topic: str, count: int) -> None:
    consumer = simple_consumer(endpoint, group, topic)
    try:
        seen = 0
        deadline = time.monotonic() + WAIT
        while seen < count and time.monotonic() < deadline:
            for m in receive(consumer, 1, 15):
                out(event="fifo", **view(m))
                consumer.ack(m)
                seen += 1
    finally:
        consumer.shutdown()


def push(endpoint: str, group: str, topic: str, count: int) -> None:
    lock = threading.Lock()
    attempts: dict[str, list[int]] = {}

    class Listener(R.MessageListener):
        def consume(self, message: Any) -> Any:
            body = message.body.decode()
            with lock:
                attempts.setdefault(body, []).append(message.delivery_attempt)
                first = len(attempts[body]) == 1
            return R.ConsumeResult.FAILURE if first else R.ConsumeResult.SUCCESS

    consumer = R.PushConsumer(config(endpoint), group, Listener(), {topic: R.FilterExpression()})
    consumer.startup()
    try:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            with lock:
                if len(attempts) >= count and all(len(a) >= 2 for a in attempts.values()):
                    break
            time.sleep(0.1)
        time.sleep(1.0)  # the successful attempts' acks
        with lock:
            out(event="push", attempts=attempts)
    finally:
        consumer.shutdown()


def main(argv: list[str]) -> int:
    endpoint, command, *rest = argv
    if command == "produce":
        produce(endpoint, rest[0], rest[1], int(rest[2]))
    elif command == "simple":
        simple(endpoint, rest[0], rest[1], int(rest[2]))
    elif command == "redeliver":
        redeliver(endpoint, rest[0], rest[1])
    elif command == "dlq":
        dlq(endpoint, rest[0], rest[1])
    elif command == "fifo":
        fifo(endpoint, rest[0], rest[1], int(rest[2]))
    elif command == "push":
        push(endpoint, rest[0], rest[1], int(rest[2]))
    else:
        raise SystemExit(f"unknown command {command!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
