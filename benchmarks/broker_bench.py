"""Broker benchmark: produce and drain throughput, long-polled delivery latency, beside a same-run baseline.

Not a test. Runs an embedded name server + broker in this process (the load generator shares the machine,
as the project's performance targets say) and a raw-protocol client with N requests in flight.

    .venv/bin/python benchmarks/broker_bench.py --messages 20000 --inflight 256 --body 1024

Baseline: a bare asyncio request/response server (same event loop flavour, same frame sizes, same client
code) — the ceiling for one-request-per-message over this remoting layer in Python.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time

from rocketq.protocol.command import RemotingCommand
from rocketq.remoting.client import RemotingClient
from rocketq.remoting.server import RemotingDispatcher, RemotingServer
from rocketq.testing import EmbeddedCluster
from rocketq.testing.wire import Wire, records


async def _run_inflight(total: int, inflight: int, make_call) -> float:  # type: ignore[no-untyped-def]
    sem = asyncio.Semaphore(inflight)
    errors = 0

    async def one(i: int) -> None:
        nonlocal errors
        async with sem:
            resp = await make_call(i)
            if resp.code != 0:
                errors += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(total)))
    elapsed = time.perf_counter() - t0
    if errors:
        print(f"  ({errors} non-success responses)")
    return elapsed


async def baseline(total: int, inflight: int, body: bytes) -> float:
    d = RemotingDispatcher("echo")
    d.register(310, lambda conn, cmd: cmd.response(0, None, {"msgId": "0" * 32, "queueId": "0", "queueOffset": "0"}))
    server = RemotingServer(d)
    port = await server.start()
    rc = RemotingClient()
    addr = f"127.0.0.1:{port}"
    ext = {k: "x" for k in "abcdefghijk"}
    elapsed = await _run_inflight(
        total, inflight, lambda i: rc.invoke(addr, RemotingCommand.request(310, dict(ext), body))
    )
    await rc.close()
    await server.close()
    return total / elapsed


async def main(args: argparse.Namespace) -> None:
    body = b"x" * args.body
    base = await baseline(args.messages, args.inflight, body)
    with tempfile.TemporaryDirectory() as tmp:
        async with EmbeddedCluster(tmp, flushDiskType=args.flush) as cluster:
            rc = RemotingClient()
            wire = Wire(rc, cluster.broker_addr)
            await wire.send("Bench", b"warmup", queue_id=0)
            elapsed = await _run_inflight(
                args.messages, args.inflight, lambda i: wire.send("Bench", body, queue_id=i % 4)
            )
            produce = args.messages / elapsed

            # Drain: pull each queue from 0 with 32 per request, one request in flight per queue.
            async def drain_queue(q: int) -> int:
                offset, count = 0, 0
                while True:
                    resp = await wire.pull("Bench", q, offset, max_nums=32)
                    if resp.code != 0:
                        return count
                    count += len(records(resp)) if args.decode else resp.body.count(b"\xda\xa3\x20\xa7")
                    offset = int(resp.ext_fields["nextBeginOffset"])

            t0 = time.perf_counter()
            drained = sum(await asyncio.gather(*(drain_queue(q) for q in range(4))))
            drain = drained / (time.perf_counter() - t0)

            # Long-poll delivery latency: a held pull on an idle queue, then one send; time until the pull answers.
            lat = []
            await wire.send("Lat", b"create", queue_id=0)
            offset = 1
            for _ in range(args.latency_samples):
                waiter = asyncio.create_task(wire.pull("Lat", 0, offset, sys_flag=6, suspend_ms=5000, timeout=10))
                await asyncio.sleep(0.005)
                t0 = time.perf_counter()
                await wire.send("Lat", b"ping", queue_id=0)
                resp = await waiter
                lat.append((time.perf_counter() - t0) * 1000)
                if resp.code != 0:
                    raise SystemExit(f"long-poll pull answered {resp.code}: {resp.remark}")
                offset = int(resp.ext_fields["nextBeginOffset"])
            await rc.close()
    lat.sort()
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
    print(f"messages={args.messages} body={args.body}B inflight={args.inflight} flush={args.flush}")
    print(f"baseline bare asyncio request/response : {base:10.0f} req/s")
    print(f"produce (SEND_MESSAGE_V2, 1 msg/request): {produce:10.0f} msg/s  ({produce / base:.2f} x baseline)")
    print(f"drain (PULL 32/request, 4 queues)       : {drain:10.0f} msg/s")
    print(
        f"long-poll delivery latency (send->pull answered, incl. the send round trip): "
        f"p50 {statistics.median(lat):.2f} ms  p99 {p99:.2f} ms  max {lat[-1]:.2f} ms"
    )


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=20000)
    ap.add_argument("--inflight", type=int, default=256)
    ap.add_argument("--body", type=int, default=1024)
    ap.add_argument("--flush", default="ASYNC_FLUSH", choices=["ASYNC_FLUSH", "SYNC_FLUSH"])
    ap.add_argument("--latency-samples", type=int, default=200)
    ap.add_argument("--decode", action="store_true", help="decode every pulled record (client-side cost)")
    args = ap.parse_args()
    try:
        import uvloop

        runner = asyncio.Runner(loop_factory=uvloop.new_event_loop)
    except ImportError:
        runner = asyncio.Runner()
    with runner:
        runner.run(main(args))
