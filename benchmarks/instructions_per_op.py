"""Instructions per operation of the client and the broker, beside a baseline tree, counted by valgrind.

Not a test. For before/after comparisons on a host whose speed drifts (rocketq.bench.instructions says why):

    PYTHONPATH=src .venv/bin/python benchmarks/instructions_per_op.py --scenario send \
        --baseline-src /tmp/wt-old/src

``--baseline-src`` is the ``src`` of another checkout (``git worktree add /tmp/wt-old HEAD~1`` and, for its
compiled twins, ``python setup.py build_ext --inplace`` there); both trees run under the same interpreter, two
runs at a time. Needs valgrind (``apt-get install valgrind``); the script installs nothing. A run takes about
a minute (start-up under valgrind) plus ~0.6 ms per operation.

Scenarios (1 KiB bodies, an embedded name server and broker in the process, busy polling off):

- ``send``: plain ``send_async``, 1,000 at a time: the client's and the broker's work per message together;
- ``autobatch``: ``Producer(auto_batch=True)`` sends whose batch requests a fake answers at once: the client's
  auto-batching path alone (the fake stands in for ``Producer._batch_send``: no request is made);
- ``autobatch-wire``: ``Producer(auto_batch=True)`` sends to the embedded broker: the gathering, the batch
  requests and their answers, client and broker together;
- ``sync``: ``send``, each awaited before the next: the one-message path of client and broker (a run of one
  on the broker), with an event-loop turn per request and per answer. The wake-ups of two processes are not
  in it: both sides share one loop here.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

SCENARIOS = ("send", "autobatch", "autobatch-wire", "sync")
#: every request waits as long as valgrind needs (a send under callgrind is ~50x slower)
_PATIENT = 900.0


async def _send_all(producer: Any, count: int) -> None:
    """``count`` sends of 1 KiB through ``producer.send_async``, 1,000 at a time."""
    from rocketq.client.message import Message

    body = b"x" * 1024
    for start in range(0, count, 1000):
        n = min(1000, count - start)
        await asyncio.gather(*[producer.send_async(Message("TIpo", body)) for _ in range(n)])


async def _send_each(producer: Any, count: int) -> None:
    """``count`` sends of 1 KiB through ``producer.send``, each awaited."""
    from rocketq.client.message import Message

    body = b"x" * 1024
    for _ in range(count):
        await producer.send(Message("TIpo", body))


async def _send(count: int, auto_batch: bool = False, each: bool = False) -> None:
    from rocketq.client.message import Message
    from rocketq.client.producer import Producer
    from rocketq.testing import EmbeddedCluster

    async with EmbeddedCluster(busyPollMaxMicros=0, waitTimeMillsInSendQueue=int(_PATIENT * 1000)) as cluster:
        producer = Producer("ipo", namesrv_addr=cluster.namesrv_addr, send_msg_timeout=_PATIENT, auto_batch=auto_batch)
        await producer.start()
        try:
            await producer.send(Message("TIpo", b"route"))
            await (_send_each if each else _send_all)(producer, count)
        finally:
            await producer.shutdown()


async def _autobatch(count: int) -> None:
    from rocketq.client._send_request import MessageBatch
    from rocketq.client.message import Message, SendResult, SendStatus, make_send_result
    from rocketq.client.producer import Producer
    from rocketq.protocol.bodies import MessageQueue
    from rocketq.testing import EmbeddedCluster

    async with EmbeddedCluster(busyPollMaxMicros=0) as cluster:
        producer = Producer("ipo", namesrv_addr=cluster.namesrv_addr, auto_batch=True, send_msg_timeout=_PATIENT)
        await producer.start()
        try:
            await producer.send(Message("TIpo", b"route"))
            mq = MessageQueue("TIpo", "broker-a", 0)

            async def answer(batch: MessageBatch, queue: MessageQueue | None, asynchronous: bool) -> SendResult:
                ids = ",".join(m.properties["UNIQ_KEY"] for m in batch.messages)  # as a broker answers a batch
                return make_send_result(SendStatus.SEND_OK, ids, ids, mq, 0, None, "DefaultRegion", False)

            producer._batch_send = answer  # type: ignore[assignment,method-assign]
            await _send_all(producer, count)
        finally:
            await producer.shutdown()


def _count(src: str, scenario: str, count: int) -> int:
    from rocketq.bench.instructions import collected_instructions, valgrind_command

    env = {**os.environ, "PYTHONPATH": src, "PYTHONHASHSEED": "0"}
    proc = subprocess.run(valgrind_command(sys.executable, __file__, scenario, count), env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"{scenario} x{count} under {src} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return collected_instructions(proc.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", choices=SCENARIOS, default="send")
    ap.add_argument("--small", type=int, default=2000, help="operations in the short run")
    ap.add_argument("--large", type=int, default=8000, help="operations in the long run")
    ap.add_argument("--baseline-src", help="another checkout's src directory, measured beside this one")
    ap.add_argument("--run", nargs=2, metavar=("SCENARIO", "COUNT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.run:
        scenario, count = args.run
        runs = {"send": _send, "autobatch": _autobatch, "autobatch-wire": lambda n: _send(n, auto_batch=True),
                "sync": lambda n: _send(n, each=True)}
        asyncio.run(runs[scenario](int(count)))
        return
    from rocketq.bench.instructions import OpCost

    here = str(Path(__file__).resolve().parents[1] / "src")
    trees = [("this tree", here)] + ([("baseline", args.baseline_src)] if args.baseline_src else [])
    jobs = [(label, src, n) for n in (args.small, args.large) for label, src in trees]
    with ThreadPoolExecutor(max_workers=2) as pool:  # two runs at a time: the machine's two cores
        totals = dict(zip(jobs, pool.map(lambda j: _count(j[1], args.scenario, j[2]), jobs), strict=True))
    costs = {label: OpCost(args.small, args.large, totals[(label, src, args.small)], totals[(label, src, args.large)])
             for label, src in trees}  # fmt: skip
    print(f"{args.scenario}: instructions per operation (runs of {args.small} and {args.large})")
    for label, cost in costs.items():
        print(f"  {label:10} {cost.per_op:12,.0f}")
    if "baseline" in costs:
        ratio = costs["this tree"].per_op / costs["baseline"].per_op
        print(f"  this tree / baseline: {ratio:.4f} ({100 * (ratio - 1):+.2f} %)")


if __name__ == "__main__":
    main()
