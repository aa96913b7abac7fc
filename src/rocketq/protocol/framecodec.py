"""Received bytes → commands and a command → its frame head: the compiled twin if built, else the pure one.

``decode_frames(buf, max_frame_size) -> (commands, consumed, error)``, ``encode_head(cmd) -> bytes``,
``request_run_end(commands, start) -> int`` and ``encode_send_reply(...) -> bytes`` (specified in
``_framecodec_py``). ``ROCKETQ_NO_EXTENSIONS=1`` forces the pure twin.
"""

from __future__ import annotations

from collections.abc import Callable

from rocketq.common.native import choose
from rocketq.errors import ProtocolError
from rocketq.protocol import _framecodec_py as pure
from rocketq.protocol.command import RemotingCommand

impl, compiled = choose(pure, "rocketq.protocol._framecodec_c")

#: "c" or "python": which twin splits and decodes frames
IMPLEMENTATION = "python" if impl is pure else "c"

decode_frames: Callable[[bytearray, int], tuple[list[RemotingCommand], int, ProtocolError | None]]
decode_frames = impl.decode_frames
encode_head: Callable[[RemotingCommand], bytes] = impl.encode_head
#: where one read's stretch of requests of one code and language ends (see ``_framecodec_py``)
request_run_end: Callable[[list[RemotingCommand], int], int] = impl.request_run_end
#: the head of a stored send's JSON answer without building the command (see ``_framecodec_py``)
encode_send_reply: Callable[[int, int, str, int, int, int, str, str], bytes] = impl.encode_send_reply
