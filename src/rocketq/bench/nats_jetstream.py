"""The NATS JetStream peer of ``benchmarks/peer_compare.py`` (optional: ``--peers ...,nats``): a ``nats-server``
child with JetStream on, and the same scenarios as ``rocketq bench``, driven with nats-py (asyncio).

The server is Debian's ``nats-server`` (``apt-get install nats-server``; the bench installs nothing itself),
started on a free 127.0.0.1 port with its JetStream store in a temporary directory. One stream with file
storage holds the messages; JetStream writes each message to its block file before it acknowledges the
publish and leaves the fsync to the kernel (nats-server 2.9 has no per-message fsync setting): the durability
closest to rocketq's ASYNC_FLUSH and Redis's ``appendfsync everysec``.

Scenarios, each message one JetStream publish of a 1 KiB payload to one subject:

* ``sync``: ``js.publish``, each awaited (the publish and its PubAck);
* ``async``: windows of 1,000 ``js.publish_async`` whose PubAcks are then awaited (NATS's way to keep 1,000 in
  flight, as Redis pipelines its windows);
* ``drain``: a stored backlog read by a durable pull consumer, ``fetch(128)`` and then one ``ack_sync`` of the
  batch's last message (AckPolicy ALL acknowledges everything up to it, as one XACK does a Redis batch).

Server CPU per message is ``nats-server``'s user + system time over the measured window divided by the
messages; the load generator's is this process's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rocketq.bench.peer_run import (
    PeerRun,
    close_window,
    free_port,
    measured_sends,
    open_window,
    send_each,
    stop_session,
)
from rocketq.bench.stats import LatencyRecorder

__all__ = ["NatsServer", "NatsUnavailable", "nats_drain", "nats_send", "nats_server"]

_WINDOW = 1000


class NatsUnavailable(RuntimeError):
    """nats-server or nats-py is missing: the message says how to install it."""


@dataclass
class NatsServer:
    port: int
    directory: Path
    proc: asyncio.subprocess.Process

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"


def _import_nats() -> Any:
    try:
        import nats
    except ImportError as exc:
        raise NatsUnavailable(f"the NATS peer needs nats-py (pip install '.[bench]'): {exc}") from None
    return nats


async def _quiet(exc: Exception) -> None:
    """nats-py's error callback while the server starts: a refused connection is expected then, not logged."""


@contextlib.asynccontextmanager
async def nats_server(base: Path | None = None) -> AsyncIterator[NatsServer]:
    """``nats-server -js`` on a free loopback port; stopped and its store removed on exit."""
    binary = shutil.which("nats-server")
    if binary is None:
        raise NatsUnavailable("nats-server is not installed (Debian: apt-get install nats-server)")
    nats = _import_nats()
    directory = Path(tempfile.mkdtemp(prefix="rocketq-nats-", dir=base))
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        binary, "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", str(directory),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        async with asyncio.timeout(30):
            while True:
                try:
                    nc = await nats.connect(f"nats://127.0.0.1:{port}", allow_reconnect=False, connect_timeout=1,
                                            error_cb=_quiet)  # fmt: skip
                except Exception:  # nats-py raises its own errors and OSError while the port is not open yet
                    if proc.returncode is not None:
                        raise RuntimeError(f"nats-server exited with {proc.returncode}") from None
                    await asyncio.sleep(0.05)
                    continue
                await nc.close()
                break
        yield NatsServer(port, directory, proc)
    finally:
        await stop_session(proc, 15)
        shutil.rmtree(directory, ignore_errors=True)


async def _stream(server: NatsServer, name: str) -> tuple[Any, Any, str]:
    """A connection, its JetStream context and a new file-storage stream ``name`` on subject ``name``."""
    nats = _import_nats()
    from nats.js.api import StorageType, StreamConfig

    nc = await nats.connect(server.url, allow_reconnect=False)
    js = nc.jetstream(publish_async_max_pending=2 * _WINDOW)
    await js.add_stream(StreamConfig(name=name, subjects=[name], storage=StorageType.FILE))
    return nc, js, name


async def nats_send(server: NatsServer, mode: str, *, duration: float, warmup: float, body_size: int = 1024,
                    inflight: int = _WINDOW) -> PeerRun:  # fmt: skip
    """``sync`` (one publish awaited at a time) or ``async`` (windows of ``inflight`` publishes, then their acks)."""
    if mode not in ("sync", "async"):
        raise ValueError(f"unknown send mode {mode!r}")
    nc, js, subject = await _stream(server, f"bench-{mode}-{os.urandom(4).hex()}")
    body = os.urandom(body_size)

    async def send_for(seconds: float, recorder: LatencyRecorder | None) -> int:
        if mode == "sync":
            return await send_each(lambda: js.publish(subject, body), seconds, recorder)
        return await _windows(js, subject, body, inflight, seconds)

    try:
        run = await measured_sends(server.pid, send_for, warmup=warmup, duration=duration, latency=mode == "sync")
        await js.delete_stream(subject)  # keep the server's store flat from one scenario to the next
    finally:
        await nc.close()
    return run


async def _windows(js: Any, subject: str, body: bytes, inflight: int, seconds: float) -> int:
    """Windows of ``inflight`` ``publish_async`` for ``seconds``, each window's PubAcks awaited."""
    perf = time.perf_counter
    deadline = perf() + seconds
    done = 0
    publish_async = js.publish_async
    while perf() < deadline:
        acks = [await publish_async(subject, body) for _ in range(inflight)]
        done += len(await asyncio.gather(*acks))
    return done


async def nats_drain(server: NatsServer, *, backlog: int, count: int = 128, body_size: int = 1024) -> PeerRun:
    """Store ``backlog`` messages, then read them with a durable pull consumer, ``count`` per fetch, each batch
    acknowledged by one ``ack_sync`` of its last message (AckPolicy ALL); measured from the first fetch to the
    last ack."""
    from nats.js.api import AckPolicy, ConsumerConfig

    nc, js, subject = await _stream(server, f"bench-drain-{os.urandom(4).hex()}")
    body = os.urandom(body_size)
    run = PeerRun()
    try:
        stored = 0
        while stored < backlog:
            acks = [await js.publish_async(subject, body) for _ in range(min(_WINDOW, backlog - stored))]
            stored += len(await asyncio.gather(*acks))
        sub = await js.pull_subscribe(subject, "bench-consumer",
                                      config=ConsumerConfig(ack_policy=AckPolicy.ALL, max_ack_pending=-1))  # fmt: skip
        start = open_window(server.pid)
        got = 0
        while got < backlog:
            try:
                msgs = await sub.fetch(min(count, backlog - got), timeout=5)
            except TimeoutError:
                run.notes.append(f"the consumer read {got:,} of {backlog:,} and then nothing")
                break
            got += len(msgs)
            await msgs[-1].ack_sync()
        run.messages = got
        close_window(run, server.pid, start)
        await js.delete_stream(subject)
    finally:
        await nc.close()
    return run
