"""The Redis Streams peer of ``benchmarks/peer_compare.py``: a ``redis-server`` child and the same scenarios as
``rocketq bench``, driven with redis-py (asyncio) over hiredis.

The server is Debian's ``redis-server`` (``apt-get install redis-server``; the bench installs nothing itself),
started on a free 127.0.0.1 port in a temporary directory with the durability closest to rocketq's default
ASYNC_FLUSH: the append-only file on, fsync once a second (``appendfsync everysec``), RDB snapshots off.

Scenarios, each message one ``XADD`` of a 1 KiB field to one stream:

* ``sync``: one XADD at a time, each awaited (the round trip a caller waits for);
* ``async``: pipelined windows of 1,000 XADDs on one connection (Redis's way to keep 1,000 in flight);
* ``drain``: a stored backlog read by a consumer group, ``XREADGROUP COUNT 128`` then one ``XACK`` of the batch.

Server CPU per message is ``redis-server``'s user + system time (``/proc/PID/stat``) over the measured window
divided by the messages; the load generator's is this process's.

The append-only files' pages further than ``AOF_CACHED_BYTES`` behind their end are evicted from the page cache
every 50 ms, from this process: the same recycling rocketq's broker does for its commit log
(``commitLogCachedBytes``, which the comparison sets to the same figure), so both peers run in the steady state of
a long-running server whose page cache the kernel recycles. Without it, on this VM, each new page of Redis's
AOF costs ~2.5 µs per KiB of the guest's fresh memory (docs/performance.md, "Recycled pages").
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

__all__ = ["AOF_CACHED_BYTES", "PeerRun", "RedisServer", "evict_file_behind", "redis_drain", "redis_send",
           "redis_server"]  # fmt: skip

FIELD = b"body"
STREAM = "bench-stream"
GROUP = "bench-group"
#: what stays cached of each append-only file, behind its end
AOF_CACHED_BYTES = 512 << 20
_RECYCLE_INTERVAL = 0.05


class RedisUnavailable(RuntimeError):
    """redis-server or redis-py/hiredis is missing: the message says how to install it."""


@dataclass
class RedisServer:
    port: int
    directory: Path
    proc: asyncio.subprocess.Process
    #: bytes of its append-only files evicted from the page cache so far
    aof_evicted: int = 0

    @property
    def pid(self) -> int:
        return self.proc.pid


def _import_redis() -> Any:
    try:
        import hiredis  # noqa: F401  # redis-py parses replies with it when it is installed
        import redis.asyncio as aioredis
    except ImportError as exc:
        raise RedisUnavailable(f"the Redis peer needs redis-py and hiredis (pip install '.[bench]'): {exc}") from None
    return aioredis


def evict_file_behind(path: str, keep: int) -> int:
    """Evict the pages of ``path`` more than ``keep`` bytes before its end from the page cache (the kernel drops
    the clean ones and skips pages not yet written back); returns the bytes advised, 0 when the file is gone."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return 0  # rewritten and removed meanwhile
    try:
        end = os.fstat(fd).st_size - keep
        if end <= 0:
            return 0
        os.posix_fadvise(fd, 0, end, os.POSIX_FADV_DONTNEED)
        return end
    finally:
        os.close(fd)


async def _recycle_aof(server: RedisServer, keep: int) -> None:
    """Until cancelled: every append-only file's pages older than ``keep`` evicted, every 50 ms."""
    while True:
        for path in server.directory.rglob("*.aof"):
            server.aof_evicted += evict_file_behind(str(path), keep)
        await asyncio.sleep(_RECYCLE_INTERVAL)


@contextlib.asynccontextmanager
async def redis_server(
    base: Path | None = None, aof_cached_bytes: int = AOF_CACHED_BYTES
) -> AsyncIterator[RedisServer]:
    """``redis-server`` with AOF everysec on a free loopback port; stopped and its files removed on exit.
    ``aof_cached_bytes``: the append-only files' pages further behind their end are evicted (0: never)."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RedisUnavailable("redis-server is not installed (Debian: apt-get install redis-server)")
    aioredis = _import_redis()
    directory = Path(tempfile.mkdtemp(prefix="rocketq-redis-", dir=base))
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(directory), "--save", "",
        "--appendonly", "yes", "--appendfsync", "everysec", "--daemonize", "no", "--loglevel", "warning",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        client = aioredis.Redis(host="127.0.0.1", port=port)
        try:
            async with asyncio.timeout(30):
                while True:
                    with contextlib.suppress(OSError, aioredis.ConnectionError):
                        if await client.ping():
                            break
                    if proc.returncode is not None:
                        raise RuntimeError(f"redis-server exited with {proc.returncode}")
                    await asyncio.sleep(0.05)
        finally:
            await client.aclose()
        server = RedisServer(port, directory, proc)
        recycler = asyncio.create_task(_recycle_aof(server, aof_cached_bytes)) if aof_cached_bytes > 0 else None
        try:
            yield server
        finally:
            if recycler is not None:
                recycler.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await recycler
    finally:
        await stop_session(proc, 15)
        shutil.rmtree(directory, ignore_errors=True)


async def redis_send(server: RedisServer, mode: str, *, duration: float, warmup: float, body_size: int = 1024,
                     inflight: int = 1000) -> PeerRun:  # fmt: skip
    """``sync`` (one XADD awaited at a time) or ``async`` (pipelined windows of ``inflight`` XADDs)."""
    if mode not in ("sync", "async"):
        raise ValueError(f"unknown send mode {mode!r}")
    aioredis = _import_redis()
    client = aioredis.Redis(host="127.0.0.1", port=server.port)
    body = os.urandom(body_size)
    stream = f"{STREAM}-{mode}-{os.urandom(4).hex()}"
    fields = {FIELD: body}

    async def send_for(seconds: float, recorder: LatencyRecorder | None) -> int:
        if mode == "sync":
            return await send_each(lambda: client.xadd(stream, fields), seconds, recorder)
        return await _pipelined(client, stream, fields, inflight, seconds)

    try:
        run = await measured_sends(server.pid, send_for, warmup=warmup, duration=duration, latency=mode == "sync")
        await client.delete(stream)  # keep the server's memory flat from one scenario to the next
    finally:
        await client.aclose()
    return run


async def _pipelined(client: Any, stream: str, fields: dict[bytes, bytes], inflight: int, seconds: float) -> int:
    """Pipelined windows of ``inflight`` XADDs for ``seconds``."""
    perf = time.perf_counter
    deadline = perf() + seconds
    done = 0
    while perf() < deadline:
        pipe = client.pipeline(transaction=False)
        for _ in range(inflight):
            pipe.xadd(stream, fields)
        done += len(await pipe.execute())
    return done


async def redis_drain(server: RedisServer, *, backlog: int, count: int = 128, body_size: int = 1024) -> PeerRun:
    """Store ``backlog`` messages, then read them through a consumer group, ``count`` per XREADGROUP, each batch
    acknowledged with one XACK; measured from the first read to the last ack."""
    aioredis = _import_redis()
    client = aioredis.Redis(host="127.0.0.1", port=server.port)
    stream = f"{STREAM}-drain-{os.urandom(4).hex()}"
    body = os.urandom(body_size)
    run = PeerRun()
    try:
        stored = 0
        while stored < backlog:
            pipe = client.pipeline(transaction=False)
            for _ in range(min(1000, backlog - stored)):
                pipe.xadd(stream, {FIELD: body})
            stored += len(await pipe.execute())
        await client.xgroup_create(stream, GROUP, id="0")
        start = open_window(server.pid)
        got = 0
        while got < backlog:
            answer = await client.xreadgroup(GROUP, "bench-consumer", {stream: ">"}, count=count)
            if not answer:
                run.notes.append(f"the group read {got:,} of {backlog:,} and then nothing")
                break
            ids = [entry_id for entry_id, _ in answer[0][1]]
            got += len(ids)
            await client.xack(stream, GROUP, *ids)
        run.messages = got
        close_window(run, server.pid, start)
        await client.delete(stream)
    finally:
        await client.aclose()
    return run
