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

from rocketq.client import Message, Producer, PushConsumer
from rocketq.testing import EmbeddedCluster


def _recorder(seen: set[str]) -> Any:
    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call":
            name = frame.f_globals.get("__name__", "")
            if name.startswith("rocketq"):
                seen.add(name)

    return profile


_ALL: set[str] = {"*"}


def _on_every_run(runs: list[set[str]]) -> set[str]:
    """The intersection of the recorded runs (``_ALL`` before the first)."""
    if not runs:
        return _ALL
    first, *rest = runs
    out = set(rest[0]) if first is _ALL else first.intersection(*rest)
    return out


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        async with EmbeddedCluster(Path(tmp)) as cluster:
            producer = Producer("pg-hops", namesrv_addr=cluster.namesrv_addr)
            await producer.start()
            for i in range(50):
                await producer.send(Message("THops", f"warm{i}".encode()))
            # Five recorded sends; a module counts when every one of them ran code in it (a background task
            # that happened to run during one send — the schedule service, a heartbeat — drops out).
            send_seen = _on_every_run([])
            for _ in range(5):
                seen: set[str] = set()
                sys.setprofile(_recorder(seen))
                await producer.send(Message("THops", b"counted"))
                sys.setprofile(None)
                send_seen = _on_every_run([send_seen, seen])

            # One pull as the push consumer's pull loop makes it (PullAPIWrapper.pull_kernel, then
            # process_pull_result decoding the records), once its route and connection are warm.
            consumer = PushConsumer("cg-hops", namesrv_addr=cluster.namesrv_addr)
            consumer.subscribe("THops", "*")
            consumer.register_message_listener(lambda msgs, ctx: None)  # type: ignore[arg-type,return-value]
            await consumer.start()
            pull_api = consumer._pull_api
            sub = consumer.subscriptions()[0]
            for _ in range(100):  # the rebalance learns the topic's queues
                queues = consumer._rebalance.topic_subscribe_info_table.get("THops")
                if queues:
                    break
                await asyncio.sleep(0.05)
            mq = sorted(queues, key=lambda q: q.queue_id)[0]
            pull_seen = _on_every_run([])
            for attempt in range(6):
                seen = set()
                if attempt:
                    sys.setprofile(_recorder(seen))
                raw = await pull_api.pull_kernel(mq, "*", "TAG", sub.sub_version, 0, 32, 0x4, 0, 0, 5.0)
                result = pull_api.process_pull_result(mq, raw, sub)
                sys.setprofile(None)
                if attempt:
                    pull_seen = _on_every_run([pull_seen, seen])
            assert result.messages, "the pull found nothing"
            await consumer.shutdown()
            await producer.shutdown()
    for title, seen in (("send", send_seen), ("pull", pull_seen)):
        packages = sorted({m.split(".")[1] for m in seen if "." in m})
        print(f"{title}: {len(seen)} modules in {len(packages)} packages ({', '.join(packages)})")
        for m in sorted(seen):
            print(f"  {m}")


if __name__ == "__main__":
    asyncio.run(main())
