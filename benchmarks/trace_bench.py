"""Async send throughput with message trace off and on (one embedded cluster, alternating rounds): docs/trace.md."""

from __future__ import annotations

import asyncio
import tempfile
import time

from rocketq.client import ClientConfig, Message, Producer
from rocketq.testing import EmbeddedCluster

N = 4000


async def round_(c: EmbeddedCluster, trace: bool) -> float:
    cfg = ClientConfig(namesrv_addr=c.namesrv_addr)
    async with Producer("bench-" + str(trace), config=cfg, enable_msg_trace=trace) as p:
        await p.send(Message("BenchT", b"w"))
        t = time.perf_counter()
        futs = [p.send_async(Message("BenchT", b"x" * 128, keys="k")) for _ in range(N)]
        await asyncio.gather(*futs)
        return N / (time.perf_counter() - t)


async def main() -> None:
    async with EmbeddedCluster(tempfile.mkdtemp()) as c:
        res: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(3):
            for tr in (False, True):
                res[tr].append(await round_(c, tr))
        for tr, v in res.items():
            print("trace" if tr else "plain", [round(x) for x in v], "best", round(max(v)))


if __name__ == "__main__":
    asyncio.run(main())
