"""Count the rocketq modules one steady-state send and one pull run code in (docs/architecture.md).

Starts an embedded name server and broker, warms the path up (route cached, connection open, topic known),
then records with ``sys.setprofile`` every rocketq module whose Python functions run while one
``Producer.send`` completes, and while one pull as the push consumer makes it (``pull_kernel`` then
``process_pull_result``) completes — the client's and the broker's side alike, since they share the process.
Compiled twins are C functions: they count for the module that calls them.

    python scripts/modules_crossed.py
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any

from rocketq.client import Message, Producer
from rocketq.client._pull_api import PullAPIWrapper
from rocketq.protocol.bodies import MessageQueue, SubscriptionData
from rocketq.testing import EmbeddedCluster


def _recorder(seen: set[str]) -> Any:
    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call":
            name = frame.f_globals.get("__name__", "")
            if name.startswith("rocketq"):
                seen.add(name)

    return profile


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        # background work (registration, housekeeping, offset persistence, delay levels) every minute, not every
        # second: what is counted is the path, not whatever else ran meanwhile
        quiet = {k: 60_000 for k in ("registerNameServerPeriod", "clientScanIntervalMills",
                                     "consumerOffsetPersistIntervalMills", "scheduleIntervalMills")}  # fmt: skip
        async with EmbeddedCluster(Path(tmp), **quiet) as cluster:
            producer = Producer("pg-hops", namesrv_addr=cluster.namesrv_addr)
            await producer.start()
            for i in range(50):
                await producer.send(Message("THops", f"warm{i}".encode()))
            # Five recorded sends; a module counts when every one of them ran code in it (a background task
            # that happened to run during one send — the schedule service, a heartbeat — drops out).
            send_runs: list[set[str]] = []
            for _ in range(5):
                send_runs.append(set())
                sys.setprofile(_recorder(send_runs[-1]))
                await producer.send(Message("THops", b"counted"))
                sys.setprofile(None)
            send_seen = set.intersection(*send_runs)

            # One pull as the push consumer's pull loop makes it (PullAPIWrapper.pull_kernel, then
            # process_pull_result decoding the records), on the producer's warm client instance: no consumer
            # runs, so nothing else pulls meanwhile.
            instance = producer.instance
            await instance.update_topic_route("THops")
            pull_api = PullAPIWrapper(instance, "cg-hops")
            sub = SubscriptionData.of("THops", "*")
            mq = MessageQueue("THops", "broker-a", 0)
            while not (await pull_api.pull_kernel(mq, "*", "TAG", 0, 0, 32, 0x4, 0, 0, 5.0)).body:
                mq = MessageQueue("THops", "broker-a", mq.queue_id + 1)
            pull_runs: list[set[str]] = []
            for attempt in range(6):  # the first pull warms up, the next five are recorded
                pull_runs.append(set())
                if attempt:
                    sys.setprofile(_recorder(pull_runs[-1]))
                raw = await pull_api.pull_kernel(mq, "*", "TAG", 0, 0, 32, 0x4, 0, 0, 5.0)
                result = pull_api.process_pull_result(mq, raw, sub)
                sys.setprofile(None)
            pull_seen = set.intersection(*pull_runs[1:])
            assert result.messages, "the pull found nothing"
            await producer.shutdown()
    for title, seen in (("send", send_seen), ("pull", pull_seen)):
        packages = sorted({m.split(".")[1] for m in seen if "." in m})
        print(f"{title}: {len(seen)} modules in {len(packages)} packages ({', '.join(packages)})")
        for m in sorted(seen):
            print(f"  {m}")


if __name__ == "__main__":
    asyncio.run(main())
