"""The mqadmin scenario: the everyday commands against one cluster, with rocketq's SDK making the live state.

The same steps run against rocketq and against the Java 4.9.7 broker. A ``Transcript`` keeps what each command
printed (by step label) and what the SDK saw meanwhile (send results, received messages, client ids, and the
outcome of SDK sends made to check that a configuration change is really applied), so a test can check each
output against the real state and compare what the two brokers made mqadmin print.
"""

from __future__ import annotations

import asyncio
import json
import random
import string
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mqadmin import MqadminSession, Run

from rocketq.client import (
    AdminClient,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    Message,
    MessageExt,
    MessageQueue,
    Producer,
    PushConsumer,
    SendResult,
)

SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
QUEUES = 4
PER_QUEUE = (3, 1, 0, 2)  # messages the SDK sends to queues 0..3; queue 2 gets mqadmin's own sendMessage
MQADMIN_QUEUE = 2
SMALL_MAX_SIZE = 1024


@dataclass(frozen=True)
class Names:
    """The scenario's topics, groups and KV namespace, with a suffix of their own per run: the Java broker serves
    the whole test session, and what one run leaves there (index entries, the offsets Java keeps after a topic
    is deleted) must not meet another."""

    suffix: str = field(default_factory=lambda: "_" + "".join(random.choices(string.ascii_lowercase, k=4)))

    @property
    def topic(self) -> str:
        return f"MqadminTopic{self.suffix}"

    @property
    def perm_topic(self) -> str:
        return f"MqadminPermTopic{self.suffix}"

    @property
    def group(self) -> str:
        return f"MqadminGroup{self.suffix}"

    @property
    def clone_group(self) -> str:
        return f"MqadminCloneGroup{self.suffix}"

    @property
    def producer_group(self) -> str:
        return f"MqadminProducer{self.suffix}"

    @property
    def kv_namespace(self) -> str:
        return f"MqadminNamespace{self.suffix}"


@dataclass(frozen=True)
class Target:
    namesrv: str
    broker_addr: str
    cluster: str
    broker_name: str
    names: Names = field(default_factory=Names)


@dataclass
class Transcript:
    target: Target
    runs: dict[str, Run] = field(default_factory=dict)
    sent: list[SendResult] = field(default_factory=list)
    received: list[MessageExt] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, label: str) -> Run:
        return self.runs[label]


async def _wait_for(probe: Callable[[], Awaitable[bool]], what: str, tries: int = 60, pause: float = 0.5) -> None:
    for _ in range(tries):
        if await probe():
            return
        await asyncio.sleep(pause)
    raise AssertionError(f"gave up waiting for {what}")


async def _sdk_send(producer: Producer, broker_name: str, body: bytes, topic: str) -> str:
    """An SDK send's outcome: "SEND_OK", or the error's class and wire code (what the broker applied)."""
    try:
        result = await producer.send(Message(topic, body), queue=MessageQueue(topic, broker_name, 0))
    except Exception as exc:  # the outcome is the datum
        return f"{type(exc).__name__}:{getattr(exc, 'code', '')}"
    return result.status.name


#: looks at the broker itself after a step (rocketq's embedded broker); what it returns is kept by step label
Observer = Callable[[str], Any]


class _Scenario:
    def __init__(self, mq: MqadminSession, target: Target, observe: Observer | None) -> None:
        self.mq = mq
        self.t = target
        self.out = Transcript(target)
        self.observe = observe

    async def run(self, label: str, *args: str) -> Run:
        assert label not in self.out.runs, label
        run = await self.mq.run(*args)
        self.out.runs[label] = run
        if self.observe is not None:
            seen = self.observe(label)
            if seen is not None:
                self.out.facts.setdefault("observed", {})[label] = seen
        return run

    async def sdk_send(self, producer: Producer, size: int, topic: str | None = None) -> str:
        return await _sdk_send(producer, self.t.broker_name, b"x" * size, topic or self.t.names.topic)

    async def all(self) -> Transcript:
        nm = self.t.names
        n, c, b = self.t.namesrv, self.t.cluster, self.t.broker_addr
        await self.run("help")  # no command: mqadmin lists its commands (docs/cli.md's table must name them all)
        await self.run("clusterList", "clusterList", "-n", n)
        await self.run("clusterList -m", "clusterList", "-n", n, "-m")
        await self.run("brokerStatus", "brokerStatus", "-n", n, "-b", b)
        await self.run("getNamesrvConfig", "getNamesrvConfig", "-n", n)
        await self.run("updateTopic", "updateTopic", "-n", n, "-c", c, "-t", nm.topic, "-r", str(QUEUES),
                       "-w", str(QUEUES))  # fmt: skip
        await self.run("topicList", "topicList", "-n", n)
        await self.run("topicList -c", "topicList", "-n", n, "-c")
        await self.run("topicRoute", "topicRoute", "-n", n, "-t", nm.topic)
        await self.run("topicClusterList", "topicClusterList", "-n", n, "-t", nm.topic)
        producer = Producer(nm.producer_group, namesrv_addr=n)
        await producer.start()
        try:
            await self.messages(producer)
            await self.consumers()
            await self.broker_config(producer)
            await self.topic_permission(producer)
        finally:
            await producer.shutdown()
        await self.name_server()
        await self.offline_and_cleanup()
        return self.out

    async def dispatched(self, topic: str, per_queue: tuple[int, ...], timeout: float = 30.0) -> None:
        """Wait until the broker's consume queues show every acknowledged send: a Java broker answers a send once it
        is in the commit log and dispatches to the consume queue a moment later (ReputMessageService), which a
        loaded machine stretches; mqadmin's printouts must not depend on that race."""
        async with AdminClient(namesrv_addr=self.t.namesrv) as admin, asyncio.timeout(timeout):
            while [s.max_offset for s in await admin.topic_status(topic)][: len(per_queue)] != list(per_queue):
                await asyncio.sleep(0.05)

    async def messages(self, producer: Producer) -> None:
        nm = self.t.names
        n, bn = self.t.namesrv, self.t.broker_name
        for qid, count in enumerate(PER_QUEUE):
            for i in range(count):
                msg = Message(nm.topic, f"body-{qid}-{i}".encode(), tags="TagA", keys=[f"key-{qid}-{i}"])
                self.out.sent.append(await producer.send(msg, queue=MessageQueue(nm.topic, bn, qid)))
        await producer.instance.send_heartbeat_to_all_brokers()  # the broker knows the producer at once
        self.out.facts["producer_client_id"] = producer.client_id
        await self.dispatched(nm.topic, PER_QUEUE)
        await self.run("topicStatus", "topicStatus", "-n", n, "-t", nm.topic)
        await self.run("sendMessage", "sendMessage", "-n", n, "-t", nm.topic, "-p", "from-mqadmin", "-k", "mqadmin-key",
                       "-c", "TagB", "-b", bn, "-i", str(MQADMIN_QUEUE))  # fmt: skip
        probe = self.out.sent[1]  # queue 0, offset 1
        await self.run("queryMsgByKey", "queryMsgByKey", "-n", n, "-t", nm.topic, "-k", "key-0-1")
        await self.run("queryMsgByKey mqadmin", "queryMsgByKey", "-n", n, "-t", nm.topic, "-k", "mqadmin-key")
        await self.run("queryMsgByUniqueKey", "queryMsgByUniqueKey", "-n", n, "-t", nm.topic, "-i", probe.msg_id)
        await self.run("queryMsgById", "queryMsgById", "-n", n, "-i", probe.offset_msg_id)
        await self.run("queryMsgByOffset", "queryMsgByOffset", "-n", n, "-t", nm.topic, "-b", bn, "-i", "0", "-o", "1")
        await self.run("printMsg", "printMsg", "-n", n, "-t", nm.topic)
        await self.run("printMsgByQueue", "printMsgByQueue", "-n", n, "-t", nm.topic, "-a", bn, "-i", "0", "-p", "true")
        await self.run("consumeMessage", "consumeMessage", "-n", n, "-t", nm.topic, "-b", bn, "-i", "0", "-o", "1",
                       "-c", "2")  # fmt: skip
        await self.run("producerConnection", "producerConnection", "-n", n, "-g", nm.producer_group, "-t", nm.topic)
        await self.run("producer", "producer", "-n", n, "-b", self.t.broker_addr)  # GET_ALL_PRODUCER_INFO

    async def consumers(self) -> None:
        nm = self.t.names
        n, c, b = self.t.namesrv, self.t.cluster, self.t.broker_addr
        out = self.out
        await self.run("updateSubGroup", "updateSubGroup", "-n", n, "-c", c, "-g", nm.group)
        await self.run("getConsumerConfig", "getConsumerConfig", "-n", n, "-g", nm.group)
        total = sum(PER_QUEUE) + 1
        consumer = PushConsumer(nm.group, namesrv_addr=n, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        consumer.subscribe(nm.topic, "*")

        def listen(msgs: list[MessageExt], ctx: Any) -> ConsumeConcurrentlyStatus:
            out.received.extend(msgs)
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        consumer.register_message_listener(listen)
        await consumer.start()
        try:

            async def consumed(count: int) -> bool:
                return len(out.received) >= count

            await _wait_for(lambda: consumed(total), f"{total} messages consumed", tries=120)
            out.facts["consumer_client_id"] = consumer.client_id

            async def committed() -> bool:
                await consumer.persist_consumer_offset()
                run = await self.mq.run("consumerProgress", "-n", n, "-g", nm.group)
                return not run.failed and "Diff Total: 0" in run.stdout

            await _wait_for(committed, "the committed offsets to reach the broker")
            await self.run("consumerProgress -g", "consumerProgress", "-n", n, "-g", nm.group)
            await self.run("consumerProgress", "consumerProgress", "-n", n)
            await self.run("consumerConnection", "consumerConnection", "-n", n, "-g", nm.group)
            await self.run("consumerStatus", "consumerStatus", "-n", n, "-g", nm.group)
            await self.run("consumerStatus -i", "consumerStatus", "-n", n, "-g", nm.group, "-i", consumer.client_id)
            await self.run("clusterList -m after", "clusterList", "-n", n, "-m")
            await self.run("statsAll", "statsAll", "-n", n, "-t", nm.topic)
            await self.run("brokerConsumeStats", "brokerConsumeStats", "-n", n, "-b", b)
            await self.run("cloneGroupOffset", "cloneGroupOffset", "-n", n, "-s", nm.group, "-d", nm.clone_group,
                           "-t", nm.topic)  # fmt: skip
            await self.run("allocateMQ", "allocateMQ", "-n", n, "-t", nm.topic, "-i", "10.0.0.1,10.0.0.2,10.0.0.3")
            probe = out.sent[1]
            await self.run("queryMsgById -g -d", "queryMsgById", "-n", n, "-i", probe.offset_msg_id, "-g", nm.group,
                           "-d", consumer.client_id)  # fmt: skip
            before = len(out.received)
            await self.run("resetOffsetByTime online", "resetOffsetByTime", "-n", n, "-g", nm.group, "-t", nm.topic,
                           "-s", "0")  # fmt: skip
            await _wait_for(lambda: consumed(before + total), "the messages consumed again after the reset", tries=120)
            out.facts["received_after_reset"] = len(out.received) - before
            await self.run("skipAccumulatedMessage", "skipAccumulatedMessage", "-n", n, "-g", nm.group, "-t", nm.topic)
        finally:
            await consumer.shutdown()

    async def broker_config(self, producer: Producer) -> None:
        nm = self.t.names
        n, b = self.t.namesrv, self.t.broker_addr
        facts = self.out.facts
        await self.run("getBrokerConfig", "getBrokerConfig", "-n", n, "-b", b)
        await self.run("updateBrokerConfig", "updateBrokerConfig", "-n", n, "-b", b, "-k", "maxMessageSize",
                       "-v", str(SMALL_MAX_SIZE))  # fmt: skip
        await self.run("getBrokerConfig after", "getBrokerConfig", "-n", n, "-b", b)
        facts["sdk send over the small limit"] = await self.sdk_send(producer, 2 * SMALL_MAX_SIZE)
        facts["sdk send under the small limit"] = await self.sdk_send(producer, SMALL_MAX_SIZE // 2)
        await self.run("sendMessage too big", "sendMessage", "-n", n, "-t", nm.topic, "-p", "x" * (2 * SMALL_MAX_SIZE))
        await self.run("updateBrokerConfig back", "updateBrokerConfig", "-n", n, "-b", b, "-k", "maxMessageSize",
                       "-v", "4194304")  # fmt: skip
        facts["sdk send after the restore"] = await self.sdk_send(producer, 2 * SMALL_MAX_SIZE)

    async def topic_permission(self, producer: Producer) -> None:
        """On a topic of its own: a send to a read-only queue is stored by Java and refused by rocketq."""
        nm = self.t.names
        n, c, t = self.t.namesrv, self.t.cluster, nm.perm_topic
        await self.run("updateTopic perm", "updateTopic", "-n", n, "-c", c, "-t", t, "-r", "1", "-w", "1")
        await self.run("updateTopicPerm", "updateTopicPerm", "-n", n, "-c", c, "-t", t, "-p", "4")
        await self.run("topicRoute read-only", "topicRoute", "-n", n, "-t", t)
        self.out.facts["sdk send to the read-only topic"] = await self.sdk_send(producer, 16, t)
        await self.run("sendMessage read-only", "sendMessage", "-n", n, "-t", t, "-p", "refused")
        await self.run("updateTopicPerm back", "updateTopicPerm", "-n", n, "-c", c, "-t", t, "-p", "6")
        self.out.facts["sdk send to the topic made writable"] = await self.sdk_send(producer, 16, t)
        await self.run("deleteTopic perm", "deleteTopic", "-n", n, "-c", c, "-t", t)

    async def name_server(self) -> None:
        nm = self.t.names
        n, bn = self.t.namesrv, self.t.broker_name
        await self.run("updateOrderConf put", "updateOrderConf", "-n", n, "-t", nm.topic, "-v", f"{bn}:{QUEUES}",
                       "-m", "put")  # fmt: skip
        await self.run("updateOrderConf get", "updateOrderConf", "-n", n, "-t", nm.topic, "-m", "get")
        await self.run("updateNamesrvConfig", "updateNamesrvConfig", "-n", n, "-k", "orderMessageEnable", "-v", "true")
        await self.run("getNamesrvConfig after", "getNamesrvConfig", "-n", n)
        await self.run("topicRoute ordered", "topicRoute", "-n", n, "-t", nm.topic)
        await self.run("updateNamesrvConfig back", "updateNamesrvConfig", "-n", n, "-k", "orderMessageEnable",
                       "-v", "false")  # fmt: skip
        await self.run("updateOrderConf delete", "updateOrderConf", "-n", n, "-t", nm.topic, "-m", "delete")
        await self.run("updateOrderConf get deleted", "updateOrderConf", "-n", n, "-t", nm.topic, "-m", "get")
        await self.run("wipeWritePerm", "wipeWritePerm", "-n", n, "-b", bn)
        await self.run("topicRoute wiped", "topicRoute", "-n", n, "-t", nm.topic)
        await self.run("addWritePerm", "addWritePerm", "-n", n, "-b", bn)
        await self.run("topicRoute added", "topicRoute", "-n", n, "-t", nm.topic)
        await self.run("updateKvConfig", "updateKvConfig", "-n", n, "-s", nm.kv_namespace, "-k", "k1", "-v", "v1")
        await self.run("deleteKvConfig", "deleteKvConfig", "-n", n, "-s", nm.kv_namespace, "-k", "k1")

    async def offline_and_cleanup(self) -> None:
        nm = self.t.names
        n, c = self.t.namesrv, self.t.cluster
        await self.run("resetOffsetByTime offline", "resetOffsetByTime", "-n", n, "-g", nm.group, "-t", nm.topic,
                       "-s", "now")  # fmt: skip
        await self.run("consumerProgress offline", "consumerProgress", "-n", n, "-g", nm.group)
        await self.run("queryCq", "queryCq", "-n", n, "-t", nm.topic, "-q", "0", "-i", "0", "-c", "3")
        export = self.mq.home / f"export{nm.suffix}"
        await self.run("exportMetadata", "exportMetadata", "-n", n, "-c", c, "-f", str(export))
        exported = json.loads((export / "metadata.json").read_text())
        self.out.facts["exported topic"] = exported["topicConfigTable"].get(nm.topic)
        self.out.facts["exported group"] = exported["subscriptionGroupTable"].get(nm.group)
        await self.run("exportConfigs", "exportConfigs", "-n", n, "-c", c, "-f", str(export))
        self.out.facts["export configs"] = json.loads((export / "configs.json").read_text())
        await self.run("exportMetrics", "exportMetrics", "-n", n, "-c", c, "-f", str(export))
        self.out.facts["export metrics"] = json.loads((export / "metrics.json").read_text())
        await self.run("deleteExpiredCommitLog", "deleteExpiredCommitLog", "-n", n, "-c", c)
        await self.run("cleanExpiredCQ", "cleanExpiredCQ", "-n", n, "-c", c)
        await self.run("cleanUnusedTopic", "cleanUnusedTopic", "-n", n, "-c", c)
        # -r true: the offsets go too, so the scenario can run again on the same (Java) broker
        await self.run("deleteSubGroup", "deleteSubGroup", "-n", n, "-c", c, "-g", nm.group, "-r", "true")
        await self.run("getConsumerConfig deleted", "getConsumerConfig", "-n", n, "-g", nm.group)
        await self.run("deleteTopic system", "deleteTopic", "-n", n, "-c", c, "-t", SCHEDULE_TOPIC)
        await self.run("deleteTopic", "deleteTopic", "-n", n, "-c", c, "-t", nm.topic)
        # last: they send to the broker's own topic, which the put counts checked above must not see
        bn = self.t.broker_name
        await self.run("sendMsgStatus", "sendMsgStatus", "-n", n, "-b", bn, "-s", "64", "-c", "2")
        await self.run("checkMsgSendRT", "checkMsgSendRT", "-n", n, "-t", bn, "-a", "2", "-s", "64")
        await self.run("topicList after", "topicList", "-n", n)


async def run_scenario(mq: MqadminSession, target: Target, observe: Observer | None = None) -> Transcript:
    return await _Scenario(mq, target, observe).all()
