"""The RabbitMQ peer of ``benchmarks/peer_compare.py`` for the SYNC_FLUSH row (optional: ``--peers ...,rabbitmq
--scenarios ...,syncflush``): a ``rabbitmq-server`` node of its own, and publishes with publisher confirms,
driven with aio-pika.

The server is Debian's ``rabbitmq-server`` (``apt-get install rabbitmq-server``; the bench installs nothing
itself), started from ``/usr/lib/rabbitmq/bin`` as a node of its own: a private node name, AMQP and
distribution ports and an Erlang port mapper (epmd) on free 127.0.0.1 ports, its database and logs in a
temporary directory, no plugins, and Erlang's scheduler busy-waiting off (an idle node leaves the shared
cores to the other peers). A persistent message published to a durable classic queue is confirmed once
the queue has written it to disk and synced it (RabbitMQ groups the fsyncs of the messages that arrive
meanwhile): the durability of rocketq's SYNC_FLUSH, whose group commit flushes before it answers.

Scenario ``syncflush``: windows of 1,000 persistent 1 KiB publishes on one confirming channel, each window's
confirms awaited (rocketq's side is ``send_async`` with 1,000 in flight to a SYNC_FLUSH broker).

Server CPU per message is the node's (``beam.smp``) user + system time over the measured window divided by
the messages; the load generator's is this process's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rocketq.bench.peer_run import PeerRun, free_port, measured_sends, stop_session
from rocketq.bench.stats import LatencyRecorder

__all__ = ["RabbitServer", "RabbitUnavailable", "rabbit_confirmed_send", "rabbitmq_server"]

SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server"  # Debian's; /usr/sbin's wrapper would switch to its own user
_WINDOW = 1000
_START_TIMEOUT = 90.0


class RabbitUnavailable(RuntimeError):
    """rabbitmq-server or aio-pika is missing: the message says how to install it."""


@dataclass
class RabbitServer:
    port: int
    epmd_port: int
    directory: Path
    proc: asyncio.subprocess.Process
    #: the node's own process (``beam.smp``, a child of the start script): the one whose CPU is counted
    node_pid: int = 0

    @property
    def pid(self) -> int:
        return self.node_pid or self.proc.pid

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}/"


def _import_aio_pika() -> Any:
    try:
        import aio_pika
    except ImportError as exc:
        raise RabbitUnavailable(f"the RabbitMQ peer needs aio-pika (pip install '.[bench]'): {exc}") from None
    return aio_pika


def node_environment(directory: Path, port: int, dist_port: int, epmd_port: int) -> dict[str, str]:
    """The environment of a node of its own under ``directory``: nothing shared with a system RabbitMQ."""
    (directory / "enabled_plugins").write_text("[].\n")
    return {
        **os.environ,
        "HOME": str(directory),  # the node's Erlang cookie goes here
        "RABBITMQ_NODENAME": f"rocketq-bench-{os.getpid()}-{port}@localhost",
        "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
        "RABBITMQ_NODE_PORT": str(port),
        "RABBITMQ_DIST_PORT": str(dist_port),
        "ERL_EPMD_PORT": str(epmd_port),
        "ERL_EPMD_ADDRESS": "127.0.0.1",
        "RABBITMQ_MNESIA_BASE": str(directory / "mnesia"),
        "RABBITMQ_LOG_BASE": str(directory / "log"),
        "RABBITMQ_PID_FILE": str(directory / "node.pid"),
        "RABBITMQ_ENABLED_PLUGINS_FILE": str(directory / "enabled_plugins"),
        # Erlang's schedulers spin for a while after their work runs out; the other peers share these cores,
        # so an idle node must not keep one busy between its own runs (its CPU per message is counted anyway)
        "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "+sbwt none +sbwtdcpu none +sbwtdio none",
    }


@contextlib.asynccontextmanager
async def rabbitmq_server(base: Path | None = None) -> AsyncIterator[RabbitServer]:
    """A RabbitMQ node on free loopback ports; stopped, its epmd with it, and its files removed on exit."""
    if not os.access(SERVER, os.X_OK):
        raise RabbitUnavailable("rabbitmq-server is not installed (Debian: apt-get install rabbitmq-server)")
    aio_pika = _import_aio_pika()
    directory = Path(tempfile.mkdtemp(prefix="rocketq-rabbitmq-", dir=base))
    port, dist_port, epmd_port = free_port(), free_port(), free_port()
    env = node_environment(directory, port, dist_port, epmd_port)
    proc = await asyncio.create_subprocess_exec(
        SERVER, env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    server = RabbitServer(port, epmd_port, directory, proc)
    try:
        async with asyncio.timeout(_START_TIMEOUT):
            while True:
                try:
                    connection = await aio_pika.connect(server.url, timeout=2)
                except Exception:  # refused until the node listens; aio-pika words it several ways
                    if proc.returncode is not None:
                        raise RuntimeError(f"rabbitmq-server exited with {proc.returncode}") from None
                    await asyncio.sleep(0.2)
                    continue
                await connection.close()
                break
        server.node_pid = int((directory / "node.pid").read_text().strip())  # written once the node is up
        yield server
    finally:
        await _stop(server, env)
        shutil.rmtree(directory, ignore_errors=True)


async def _stop(server: RabbitServer, env: dict[str, str]) -> None:
    await stop_session(server.proc, 30)  # the start script's whole session: the node and its helpers
    epmd = shutil.which("epmd")  # the node started its own port mapper (a daemon): stop it too
    if epmd is not None:
        await asyncio.to_thread(subprocess.run, [epmd, "-kill"], env=env, capture_output=True, timeout=10,
                                check=False)  # fmt: skip


async def rabbit_confirmed_send(server: RabbitServer, *, duration: float, warmup: float, body_size: int = 1024,
                                inflight: int = _WINDOW) -> PeerRun:  # fmt: skip
    """Windows of ``inflight`` persistent publishes to a durable queue, each window's confirms awaited."""
    aio_pika = _import_aio_pika()
    connection = await aio_pika.connect(server.url)
    try:
        channel = await connection.channel(publisher_confirms=True)
        queue = await channel.declare_queue(f"bench-{os.urandom(4).hex()}", durable=True)
        body = os.urandom(body_size)

        async def send_for(seconds: float, recorder: LatencyRecorder | None) -> int:
            return await _publish_for(aio_pika, channel, queue.name, body, inflight, seconds)

        run = await measured_sends(server.pid, send_for, warmup=warmup, duration=duration, latency=False)
        await queue.delete(if_unused=False, if_empty=False)  # keep the node's disk flat between scenarios
    finally:
        await connection.close()
    return run


async def _publish_for(aio_pika: Any, channel: Any, queue: str, body: bytes, inflight: int, seconds: float) -> int:
    perf = time.perf_counter
    deadline = perf() + seconds
    publish = channel.default_exchange.publish
    persistent = aio_pika.DeliveryMode.PERSISTENT
    done = 0
    while perf() < deadline:
        window = [publish(aio_pika.Message(body, delivery_mode=persistent), routing_key=queue) for _ in range(inflight)]
        done += len(await asyncio.gather(*window))
    return done
