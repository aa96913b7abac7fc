"""A message that exhausted its retries lands in %DLQ%group; the admin resend gives it back to the group."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import orjson

from rocketq.client import AdminClient, ConsumeConcurrentlyStatus, ConsumeFromWhere, Message, Producer, PushConsumer
from rocketq.testing import EmbeddedCluster


async def test_dead_letter_goes_back_to_its_group(tmp_path: Path) -> None:
    fast = {"messageDelayLevel": "1s 1s 1s 1s 1s 1s", "scheduleIntervalMills": 50}
    async with EmbeddedCluster(tmp_path, **fast) as cluster:
        ns = cluster.namesrv_addr
        attempts: list[int] = []
        healed = asyncio.Event()
        poisoned = True

        async def listener(msgs: list, context: object) -> ConsumeConcurrentlyStatus:
            for m in msgs:
                attempts.append(m.reconsume_times)
                if not poisoned:
                    assert m.topic == "TPoison"  # original topic restored from RETRY_TOPIC
                    healed.set()
                    return ConsumeConcurrentlyStatus.CONSUME_SUCCESS
            return ConsumeConcurrentlyStatus.RECONSUME_LATER

        consumer = PushConsumer(
            "gpoison",
            namesrv_addr=ns,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            max_reconsume_times=2,
            rebalance_interval=0.5,
            broker_suspend_max_time=1,
        )
        consumer.subscribe("TPoison", "*")
        consumer.register_message_listener(listener)
        await consumer.start()
        try:
            async with Producer("pp", namesrv_addr=ns) as producer:
                sent = await producer.send(Message("TPoison", b"poison", keys="order-9"))
            store = cluster.broker.store
            async with asyncio.timeout(30):
                while store.get_max_offset_in_queue("%DLQ%gpoison", 0) < 1:
                    await asyncio.sleep(0.05)
            assert attempts == [0, 1, 2]
            poisoned = False
            async with AdminClient(namesrv_addr=ns) as admin:
                async with asyncio.timeout(10):  # the DLQ topic's route is registered just after its first message
                    while "%DLQ%gpoison" not in await admin.topic_list():
                        await asyncio.sleep(0.05)
                result = await admin.resend_dead_letter("gpoison", sent.msg_id)
            assert result.message_queue.topic == "%RETRY%gpoison"
            await asyncio.wait_for(healed.wait(), 30)
            assert attempts[-1] == 0  # the reconsume count starts again
        finally:
            await consumer.shutdown()
        # The CLI form, as an operator would run it (the message is in the DLQ only once).
        cli = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "rocketq", "group", "resend-dlq", "-n", ns, "-g", "gpoison", "-i", sent.msg_id,
             "--json"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert cli.returncode == 0, cli.stderr
        assert orjson.loads(cli.stdout)["msgId"] == sent.msg_id
