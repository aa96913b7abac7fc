"""The bare request/response server of the echo baseline (stdlib + uvloop only; see ``rocketq.bench.echo``).

python -m rocketq.bench._echo_server --reply-size 245     # prints "port N", serves until SIGTERM
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import struct
from typing import cast

_LEN = struct.Struct(">I")


def canned_frame(total_size: int) -> bytes:
    """A frame of exactly ``total_size`` bytes: a valid length prefix and zero padding."""
    if total_size < 8:
        raise ValueError("a frame has at least 8 bytes")
    return _LEN.pack(total_size - 4) + bytes(total_size - 4)


def split_frames(buf: bytearray) -> int:
    """Count the complete frames at the front of ``buf`` and remove them; a partial frame stays."""
    pos, n, size = 0, 0, len(buf)
    while size - pos >= 4:
        (length,) = _LEN.unpack_from(buf, pos)
        if size - pos - 4 < length:
            break
        pos += 4 + length
        n += 1
    if pos:
        del buf[:pos]
    return n


class _EchoServerProtocol(asyncio.Protocol):
    def __init__(self, reply: bytes) -> None:
        self._reply = reply
        self._buf = bytearray()
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self._buf += data
        n = split_frames(self._buf)
        assert self._transport is not None
        write = self._transport.write
        for _ in range(n):
            write(self._reply)


async def _serve(reply_size: int) -> None:
    loop = asyncio.get_running_loop()
    reply = canned_frame(reply_size)
    server = await loop.create_server(lambda: _EchoServerProtocol(reply), "127.0.0.1", 0)
    print(f"port {server.sockets[0].getsockname()[1]}", flush=True)
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    server.close()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m rocketq.bench.echo")
    ap.add_argument("--reply-size", type=int, required=True)
    args = ap.parse_args(argv)
    try:
        import uvloop

        runner = asyncio.Runner(loop_factory=uvloop.new_event_loop)
    except ImportError:  # pragma: no cover
        runner = asyncio.Runner()
    with runner, contextlib.suppress(KeyboardInterrupt):
        runner.run(_serve(args.reply_size))


if __name__ == "__main__":
    main()
