"""Traces written by the rocketq client, read by Java's own decoder: stock mqadmin 4.9.7 ``queryMsgTraceById``."""

from __future__ import annotations

import asyncio
from pathlib import Path

from mqadmin import MqadminSession  # type: ignore[import-not-found]

from rocketq.client import ClientConfig, ConsumeFromWhere, Message, MessageExt, Producer, PushConsumer
from rocketq.testing import EmbeddedCluster

TOPIC = "TraceByMqadmin"


async def test_mqadmin_query_msg_trace_by_id_reads_rocketq_client_traces(tmp_path: Path) -> None:
    async with EmbeddedCluster(tmp_path / "cluster", traceTopicEnable=True) as cluster:
        cfg = ClientConfig(namesrv_addr=cluster.namesrv_addr, poll_name_server_interval=0.5)
        got: list[MessageExt] = []
        consumer = PushConsumer("mqadmin-trace-cg", config=cfg, rebalance_interval=0.5, enable_msg_trace=True,
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)  # fmt: skip
        consumer.subscribe(TOPIC, "*")
        consumer.register_message_listener(lambda msgs, ctx: got.extend(msgs))
        async with Producer("mqadmin-trace-pg", config=cfg, enable_msg_trace=True) as producer:
            sent = await producer.send(Message(TOPIC, b"traced", tags="T", keys="mk"))
            async with consumer:
                async with asyncio.timeout(30):
                    while not got:
                        await asyncio.sleep(0.05)
        async with MqadminSession(tmp_path / "mqadmin") as mq:
            run = await mq.ok("queryMsgTraceById", "-n", cluster.namesrv_addr, "-i", sent.msg_id)
    # Java's decoder accepted every record: one producer row (Pub) and one consumer row (SubBefore + SubAfter)
    rows = [r for r in run.rows() if not r[0].startswith("#")]
    assert [(r[0], r[1], r[-1]) for r in rows] == [
        ("Pub", "mqadmin-trace-pg", "success"), ("Sub", "mqadmin-trace-cg", "success")], run.stdout  # fmt: skip
