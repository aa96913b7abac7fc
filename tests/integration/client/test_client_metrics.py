"""Client-side metrics (RocketMQ 5.x clients' names): what a metered producer and push consumer record, read
through prometheus_client's own text format and parser; an unmetered client records nothing."""

from __future__ import annotations

import asyncio
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from rocketq.client import ConsumeConcurrentlyStatus, ConsumeFromWhere, Message, Producer, PushConsumer
from rocketq.client.errors import InvalidMessageError
from rocketq.client.metrics import ClientMetrics

TOPIC, GROUP = "TClientMetrics", "gClientMetrics"


def scrape(registry: CollectorRegistry) -> dict[str, list[Any]]:
    text = generate_latest(registry).decode()
    return {fam.name: fam.samples for fam in text_string_to_metric_families(text)}


def total(fams: dict[str, list[Any]], family: str, sample: str, **labels: str) -> float:
    return sum(s.value for s in fams.get(family, [])
               if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items()))  # fmt: skip


async def test_producer_and_push_consumer_metrics(cluster: Any, fast_config: Any) -> None:
    registry = CollectorRegistry()
    metrics = ClientMetrics(registry)
    outcomes: list[bool] = []

    def listener(msgs: list[Any], ctx: object) -> ConsumeConcurrentlyStatus:
        fail = msgs[0].body == b"fail" and msgs[0].reconsume_times == 0
        outcomes.append(not fail)
        return ConsumeConcurrentlyStatus.RECONSUME_LATER if fail else ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    async with Producer("pClientMetrics", config=fast_config(metrics=metrics)) as producer:
        for i in range(4):
            await producer.send(Message(TOPIC, b"s%d" % i))
        await producer.send_async(Message(TOPIC, b"fail"))
        await producer.send_batch([Message(TOPIC, b"b1"), Message(TOPIC, b"b2")])
        try:
            await producer.send(Message("bad topic", b"x"))
        except InvalidMessageError:
            pass
        else:
            raise AssertionError("an illegal topic name was sent")
        client_id = producer.client_id
        async with Producer("pUnmetered", config=fast_config()) as plain:
            await plain.send(Message(TOPIC, b"s4"))
    consumer = PushConsumer(GROUP, config=fast_config(metrics=metrics), rebalance_interval=0.5,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)  # fmt: skip
    consumer.subscribe(TOPIC, "*")
    consumer.register_message_listener(listener)
    async with consumer:
        async with asyncio.timeout(30):
            while sorted(outcomes)[:1] != [False] or outcomes.count(True) < 7:
                await asyncio.sleep(0.05)
        consumer_id = consumer.client_id
        fams = scrape(registry)
    send = {"topic": TOPIC, "client_id": client_id}
    # 4 sends, 1 async send, 1 batch; the unmetered producer's send is not there
    assert total(fams, "rocketmq_send_cost_time", "rocketmq_send_cost_time_count", invocation_status="success",
                 **send) == 6  # fmt: skip
    assert total(fams, "rocketmq_send_cost_time", "rocketmq_send_cost_time_count", topic="bad topic",
                 invocation_status="failure") == 1  # fmt: skip
    assert total(fams, "rocketmq_send_cost_time", "rocketmq_send_cost_time_bucket", le="+Inf", **send) == 6
    got = {"topic": TOPIC, "client_id": consumer_id, "consumer_group": GROUP}
    assert total(fams, "rocketmq_delivery_latency", "rocketmq_delivery_latency_count", **got) == 8
    assert total(fams, "rocketmq_await_time", "rocketmq_await_time_count", **got) == 8  # batches of one
    for status, n in (("success", 7), ("failure", 1)):
        assert total(fams, "rocketmq_process_time", "rocketmq_process_time_count", invocation_status=status,
                     **got) == n  # fmt: skip
        assert total(fams, "rocketq_consume_messages", "rocketq_consume_messages_total", invocation_status=status,
                     **got) == n  # fmt: skip
    assert total(fams, "rocketmq_process_time", "rocketmq_process_time_sum", **got) >= 0
    # one registry holds one set of client metrics: a second set needs its own registry
    try:
        ClientMetrics(registry)
    except ValueError:
        pass
    else:
        raise AssertionError("two metric sets in one registry")
