"""The broker's Prometheus endpoint: RocketMQ 5.1's metric names and labels, parsed with prometheus_client's own
parser, counters checked against what the admin API reports after a send/consume load."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from rocketq.client import AdminClient, ConsumeFromWhere, Message, Producer, PushConsumer
from rocketq.client.lowlevel import MQClientAPI, RemotingClient
from rocketq.client.transaction_producer import LocalTransactionState, TransactionProducer
from rocketq.codes import RequestCode
from rocketq.errors import ConfigError
from rocketq.protocol.bodies import MessageQueue
from rocketq.protocol.headers import PULL_FLAG_SUBSCRIPTION, ConsumerSendMsgBackRequestHeader, PullMessageRequestHeader
from rocketq.testing import EmbeddedCluster

BASE_LABELS = {"cluster", "node_type", "node_id"}
#: metric → labels beyond BASE_LABELS every sample must carry (5.1's BrokerMetricsConstant and friends)
EXPECTED = {
    "rocketmq_messages_in_total": {"topic", "message_type", "is_system"},
    "rocketmq_messages_out_total": {"topic", "consumer_group", "is_retry", "is_system"},
    "rocketmq_throughput_in_total": {"topic", "message_type", "is_system"},
    "rocketmq_throughput_out_total": {"topic", "consumer_group", "is_retry", "is_system"},
    "rocketmq_message_size": set(),
    "rocketmq_rpc_latency": {"protocol_type", "request_code", "response_code", "is_long_polling"},
    "rocketmq_consumer_ready_messages": {"topic", "consumer_group", "is_retry", "is_system"},
    "rocketmq_consumer_lag_messages": {"topic", "consumer_group", "is_retry", "is_system"},
    "rocketmq_consumer_lag_latency": {"topic", "consumer_group", "is_retry", "is_system"},
    "rocketmq_consumer_inflight_messages": {"topic", "consumer_group", "is_retry", "is_system"},
    "rocketmq_consumer_queueing_latency": {"topic", "consumer_group", "is_retry", "is_system"},
    "rocketmq_consumer_connections": {"consumer_group", "language", "version", "consume_mode", "protocol_type",
                                      "is_system"},
    "rocketmq_producer_connections": {"language", "version", "protocol_type"},
    "rocketmq_topic_number": set(),
    "rocketmq_consumer_group_number": set(),
    "rocketmq_storage_size": {"storage_type", "storage_medium"},
    "rocketmq_storage_flush_behind_bytes": {"storage_type", "storage_medium"},
    "rocketmq_storage_dispatch_behind_bytes": {"storage_type", "storage_medium"},
    "rocketmq_processor_watermark": {"processor"},
    "rocketmq_broker_permission": set(),
    "rocketmq_busy_poll_idle_seconds": set(),  # rocketq's: busyPollMaxMicros is on by default
}
TOPIC, GROUP = "TMetrics", "gMetrics"


def prom(port: int) -> dict[str, str]:
    """The keys (Java 5.1's) that turn the endpoint on, on ``port``."""
    return {"metricsExporterType": "PROM", "metricsPromExporterPort": str(port)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def http_get(port: int, path: str = "/metrics", raw: bytes | None = None) -> tuple[int, str]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(raw if raw is not None else f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        await writer.drain()
        async with asyncio.timeout(30):
            data = await reader.read()
    finally:
        writer.close()
    if not data:
        return 0, ""
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body.decode()


def samples(text: str) -> dict[str, list[Sample]]:
    """Family name → its samples, through prometheus_client's own text parser."""
    return {fam.name: fam.samples for fam in text_string_to_metric_families(text)}


def value(fams: dict[str, list[Sample]], sample_name: str, **labels: str) -> float:
    family = sample_name
    for suffix in ("_total", "_count", "_sum", "_bucket"):
        family = family.removesuffix(suffix)
    found = [
        s.value for s in fams.get(family, [])
        if s.name == sample_name and all(s.labels.get(k) == v for k, v in labels.items())
    ]  # fmt: skip
    assert len(found) == 1, (sample_name, labels, found)
    return found[0]


@pytest.fixture
async def metrics_cluster(tmp_path: Path) -> tuple[EmbeddedCluster, int]:  # type: ignore[misc]
    port = free_port()
    async with EmbeddedCluster(tmp_path, **prom(port)) as cluster:
        yield cluster, port


async def test_metrics_after_a_send_consume_load(metrics_cluster: tuple[EmbeddedCluster, int]) -> None:
    cluster, port = metrics_cluster
    ns = cluster.namesrv_addr
    got: list[bytes] = []

    async def listener(msgs: list, context: object) -> None:
        got.extend(m.body for m in msgs)

    async with AdminClient(namesrv_addr=ns) as admin, Producer("pMetrics", namesrv_addr=ns) as producer:
        bodies = [b"x" * 100] * 9 + [b"y" * 2000]
        for body in bodies:
            await producer.send(Message(TOPIC, body))
        consumer = PushConsumer(GROUP, namesrv_addr=ns, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                                rebalance_interval=1, broker_suspend_max_time=1)  # fmt: skip
        consumer.subscribe(TOPIC, "*")
        consumer.register_message_listener(listener)
        await consumer.start()
        try:
            async with asyncio.timeout(30):
                while len(got) < len(bodies):
                    await asyncio.sleep(0.05)
            status, text = await http_get(port)
            assert status == 200
            online = samples(text)
            # 5.1's label values: language and MQVersion name lower-cased (rocketq announces 4.9.8's ordinal)
            assert value(online, "rocketmq_consumer_connections", consumer_group=GROUP, language="python",
                         version="v4_9_8", consume_mode="push", protocol_type="remoting", is_system="false") == 1
            assert sum(s.value for s in online["rocketmq_producer_connections"]) >= 1
        finally:
            await consumer.shutdown()  # commits its offsets on the way out
        for _ in range(5):  # a backlog the group has not consumed
            await producer.send(Message(TOPIC, b"late"))
        queues = await admin.topic_status(TOPIC)
        progress = await admin.consume_progress(GROUP, TOPIC)
        status, text = await http_get(port)
    assert status == 200
    fams = samples(text)
    for name, labels in EXPECTED.items():
        family = name.removesuffix("_total")  # the parser names a counter's family without its suffix
        # the consumer (and its inner producer: the only producer a heartbeat has named yet) has left since
        scrape = online if name.endswith("_connections") else fams
        assert family in scrape, name
        assert any(s.name == name for s in scrape[family]) or not name.endswith("_total"), name
        assert scrape[family], f"{name} has no samples"
        for s in scrape[family]:
            assert BASE_LABELS | labels <= set(s.labels), (name, s.labels)
    # counters against the admin API
    stored = sum(q.max_offset - q.min_offset for q in queues)
    assert stored == 15
    assert value(fams, "rocketmq_messages_in_total", topic=TOPIC) == stored
    assert value(fams, "rocketmq_throughput_in_total", topic=TOPIC) > 9 * 100 + 2000 + 5 * 4  # bodies + headers
    consumed = sum(p.consumer_offset for p in progress)
    assert consumed == 10
    assert value(fams, "rocketmq_messages_out_total", topic=TOPIC, consumer_group=GROUP) == consumed
    lag = sum(p.lag for p in progress)
    assert lag == 5
    assert value(fams, "rocketmq_consumer_lag_messages", topic=TOPIC, consumer_group=GROUP) == lag
    # the consumer pulled all it consumed and left: the backlog is ready (not pulled), nothing in flight
    assert value(fams, "rocketmq_consumer_ready_messages", topic=TOPIC, consumer_group=GROUP) == lag
    assert value(fams, "rocketmq_consumer_inflight_messages", topic=TOPIC, consumer_group=GROUP) == 0
    assert value(fams, "rocketmq_consumer_lag_latency", topic=TOPIC, consumer_group=GROUP) >= 0
    # the message size histogram: every stored message in a bucket, the 2000-byte one above 1 KiB
    broker = cluster.brokers[0]
    assert value(fams, "rocketmq_message_size_count") == broker.metrics.put_total
    assert value(fams, "rocketmq_message_size_bucket", le="1024.0") == broker.metrics.put_total - 1
    assert value(fams, "rocketmq_message_size_bucket", le="4096.0") == broker.metrics.put_total
    # rpc latency: one observation per answer the gate counted for sends
    sends = RequestCode.SEND_MESSAGE_V2
    counted = broker.dispatcher.answer_counts[(int(sends), 0)]
    assert counted >= 15
    assert value(fams, "rocketmq_rpc_latency_count", request_code=str(int(sends)), response_code="0") == counted
    assert value(fams, "rocketmq_topic_number") == len(broker.topics.table)
    assert value(fams, "rocketmq_consumer_group_number") == len(broker.groups.table)
    assert value(fams, "rocketmq_broker_permission") == 6


async def test_endpoint_answers_only_metrics_and_survives_garbage(
    metrics_cluster: tuple[EmbeddedCluster, int], caplog: pytest.LogCaptureFixture
) -> None:
    _, port = metrics_cluster
    assert (await http_get(port, "/nope"))[0] == 404
    assert (await http_get(port, raw=b"POST /metrics HTTP/1.1\r\n\r\n"))[0] == 405
    assert (await http_get(port, raw=b"\x00\xff garbage\r\n\r\n"))[0] in (0, 404, 405)
    assert (await http_get(port))[0] == 200
    assert "Traceback" not in caplog.text


async def test_off_by_default_and_a_reachable_bind_needs_protection(tmp_path: Path) -> None:
    async with EmbeddedCluster(tmp_path / "a") as cluster:
        assert cluster.brokers[0].metrics_endpoint is None
    with pytest.raises(ConfigError, match="metricsPromExporterHost"):
        async with EmbeddedCluster(tmp_path / "b", **prom(0), metricsPromExporterHost="0.0.0.0"):
            pass
    with pytest.raises(ConfigError, match="metricsExporterType"):
        async with EmbeddedCluster(tmp_path / "c", metricsExporterType="OTLP_GRPC"):
            pass


async def test_a_taken_metrics_port_stops_start_up_and_frees_the_main_port(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OSError):
            async with EmbeddedCluster(tmp_path, **prom(port)):
                pass
        with pytest.raises(OSError):
            async with EmbeddedCluster(tmp_path / "ns", namesrv_settings=prom(port)):
                pass


async def test_namesrv_metrics(tmp_path: Path) -> None:
    port = free_port()
    async with EmbeddedCluster(tmp_path, namesrv_settings=prom(port)) as cluster:
        assert cluster.namesrv is not None
        async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
            await admin.create_topic("TNsMetrics", cluster="DefaultCluster")
            topics = await admin.topic_list()
        status, text = await http_get(port)
        assert status == 200
        fams = samples(text)
        assert value(fams, "rocketq_namesrv_topics") == len(topics)
        assert value(fams, "rocketq_namesrv_live_brokers") == 1
        for s in fams["rocketmq_rpc_latency"]:
            assert {"node_type", "node_id", "protocol_type", "request_code", "response_code"} <= set(s.labels)
        code = int(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        answered = cluster.namesrv.dispatcher.answer_counts[(code, 0)]
        assert answered >= 1
        assert value(fams, "rocketmq_rpc_latency_count", request_code=str(code), response_code="0") == answered


async def test_replication_lag_matches_the_ha_status(tmp_path: Path) -> None:
    port = free_port()
    ha = {"haSendHeartbeatInterval": 200, "haReconnectInterval": 100}
    async with EmbeddedCluster(tmp_path, **prom(port), **ha) as cluster:
        slave = await cluster.start_slave(metricsExporterType="DISABLE")
        master = cluster.brokers[0]
        async with asyncio.timeout(30):
            while not (slave.ha.client.connected and master.ha.master.connection_count == 1):
                await asyncio.sleep(0.02)
        async with Producer("pRepl", namesrv_addr=cluster.namesrv_addr) as producer:
            for i in range(5):
                await producer.send(Message("TRepl", b"r%d" % i))
        top = master.store.get_max_phy_offset()
        async with asyncio.timeout(30):
            while master.ha.push2slave_max < top:
                await asyncio.sleep(0.02)
        async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
            status = await admin.broker_ha_status(cluster.broker_addr)
        _, text = await http_get(port)
    lags = samples(text)["rocketmq_replication_lag_bytes"]
    (conn,) = status["haConnectionInfo"]
    assert [(s.labels["slave"], s.value) for s in lags] == [(conn["addr"], conn["diff"])]
    assert conn["diff"] == 0 and conn["slaveAckOffset"] == top


class _Decide:
    """Commits bodies starting with ``c``, rolls back the others."""

    def execute_local_transaction(self, msg: Message, arg: object) -> LocalTransactionState:
        ok = msg.body.startswith(b"c")
        return LocalTransactionState.COMMIT_MESSAGE if ok else LocalTransactionState.ROLLBACK_MESSAGE

    def check_local_transaction(self, msg: object) -> LocalTransactionState:
        return LocalTransactionState.ROLLBACK_MESSAGE


async def test_in_flight_queueing_dlq_and_transaction_metrics(metrics_cluster: tuple[EmbeddedCluster, int]) -> None:
    """A pull that is not committed is in flight; what is not pulled is ready and ages (queueing latency); a
    send-back with delay level -1 counts as sent to the DLQ; commits and rollbacks count per topic."""
    cluster, port = metrics_cluster
    ns, broker = cluster.namesrv_addr, cluster.brokers[0]
    addr, name = cluster.broker_addr, broker.config.brokerName
    topic, group = "TInflight", "gInflight"
    mq = MessageQueue(topic, name, 0)
    async with Producer("pInflight", namesrv_addr=ns) as producer:
        sent = [await producer.send(Message(topic, b"m%d" % i), queue=mq) for i in range(6)]
    remoting = RemotingClient()
    api = MQClientAPI(remoting, [ns])
    try:
        await api.update_consumer_offset(addr, group, mq, 1, 5.0, oneway=False)
        await api.update_consumer_offset(addr, "CID_RMQ_SYS_METRICS", mq, 0, 5.0, oneway=False)  # a system group
        pull = PullMessageRequestHeader(consumer_group=group, topic=topic, queue_id=0, queue_offset=1, max_msg_nums=3,
                                        sys_flag=PULL_FLAG_SUBSCRIPTION, subscription="*")  # fmt: skip
        raw = await api.pull_message(addr, pull, name, 5.0)
        assert raw.header.next_begin_offset == 4
        # the last message goes to the DLQ straight away (delay level -1), labelled with the original topic
        back = ConsumerSendMsgBackRequestHeader(offset=int(sent[-1].offset_msg_id[-16:], 16), group=group,
                                                delay_level=-1, origin_topic=topic)  # fmt: skip
        await api.consumer_send_msg_back(addr, back, name, 5.0)
    finally:
        await remoting.close()
    tx = TransactionProducer("pTxMetrics", _Decide(), namesrv_addr=ns)
    async with tx:
        for body in (b"c1", b"c2", b"r1", b"r2"):
            await tx.send_message_in_transaction(Message("TTxMetrics", body))
    await asyncio.sleep(0.05)  # the oldest unpulled message is at least this old
    async with asyncio.timeout(30):  # END_TRANSACTION is oneway: wait until the broker has taken all three
        while sum(broker.metrics.tx_commits.values()) + sum(broker.metrics.tx_rollbacks.values()) < 3:
            await asyncio.sleep(0.02)
    _, text = await http_get(port)
    fams = samples(text)
    row = {"topic": topic, "consumer_group": group}
    assert value(fams, "rocketmq_consumer_lag_messages", **row) == 5  # 6 stored, committed 1
    assert value(fams, "rocketmq_consumer_inflight_messages", **row) == 3  # pulled 1..3, not committed
    assert value(fams, "rocketmq_consumer_ready_messages", **row) == 2  # 4 and 5 not pulled
    assert value(fams, "rocketmq_consumer_queueing_latency", **row) >= 50
    assert value(fams, "rocketmq_consumer_lag_latency", **row) >= value(fams, "rocketmq_consumer_queueing_latency",
                                                                        **row)  # fmt: skip
    # 5.1: a system group makes the row system even on a user topic
    assert value(fams, "rocketmq_consumer_lag_messages", topic=topic, consumer_group="CID_RMQ_SYS_METRICS",
                 is_system="true") == 6  # fmt: skip
    assert value(fams, "rocketmq_consumer_lag_messages", is_system="false", **row) == 5
    assert value(fams, "rocketmq_send_to_dlq_messages_total", consumer_group=group, topic=topic,
                 is_system="false") == 1  # fmt: skip
    assert value(fams, "rocketmq_commit_messages_total", topic="TTxMetrics") == 2
    assert value(fams, "rocketmq_rollback_messages_total", topic="TTxMetrics") == 2
    assert value(fams, "rocketmq_finish_message_latency_count", topic="TTxMetrics") == 2
    assert value(fams, "rocketmq_finish_message_latency_bucket", topic="TTxMetrics", le="5.0") == 2
    assert value(fams, "rocketmq_half_messages", topic="TTxMetrics") == 0
    for name_ in ("rocketmq_send_to_dlq_messages", "rocketmq_commit_messages", "rocketmq_half_messages"):
        for s in fams[name_]:
            assert set(s.labels) >= BASE_LABELS, s
