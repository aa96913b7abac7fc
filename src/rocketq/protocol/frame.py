"""Incremental frame splitter: feed bytes in, get whole RemotingCommands out (no I/O)."""

from __future__ import annotations

from rocketq.errors import ProtocolError
from rocketq.protocol.command import DEFAULT_MAX_FRAME_SIZE, RemotingCommand
from rocketq.protocol.framecodec import decode_frames


class FrameDecoder:
    """Accumulates received bytes and yields complete commands.

    A length that is negative, shorter than the header-length word, or larger than ``max_frame_size``
    raises ``ProtocolError``; after that the decoder is poisoned and the connection should be closed.

    Frames decoded before a bad one in the same ``feed`` are still returned (Netty hands them on before it
    reports the error); ``error`` is then set and the next ``feed`` raises it.
    """

    __slots__ = ("_buf", "_failed", "error", "max_frame_size")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self._buf = bytearray()
        self._failed = False
        self.error: ProtocolError | None = None
        self.max_frame_size = max_frame_size

    def feed(self, data: bytes | bytearray | memoryview) -> list[RemotingCommand]:
        if self._failed:
            raise self.error or ProtocolError("decoder already failed")
        buf = self._buf
        buf += data
        out, consumed, error = decode_frames(buf, self.max_frame_size)
        if error is not None:
            self._failed = True
            self.error = error
            # Drop the buffer without resizing it: the traceback may still hold views of it.
            self._buf = bytearray()
            if not out:
                raise error
            return out
        if consumed:
            del buf[:consumed]
        return out

    @property
    def buffered(self) -> int:
        """Bytes received of frames not yet complete."""
        return len(self._buf)

    def discard(self) -> None:
        """Give the buffered bytes back and refuse every later ``feed`` (the connection is going away)."""
        if not self._failed:
            self._failed = True
            self.error = ProtocolError("the connection was closed")
        self._buf = bytearray()
