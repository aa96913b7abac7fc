"""Sans-I/O core of the RocketMQ 4.x remoting protocol: frames, headers, bodies and message records."""

from rocketq.protocol.command import (
    FLAG_ONEWAY,
    FLAG_RESPONSE,
    SERIALIZE_JSON,
    SERIALIZE_ROCKETMQ,
    RemotingCommand,
    decode_frame,
    encode,
    encode_parts,
)
from rocketq.protocol.frame import FrameDecoder

__all__ = [
    "FLAG_ONEWAY",
    "FLAG_RESPONSE",
    "SERIALIZE_JSON",
    "SERIALIZE_ROCKETMQ",
    "FrameDecoder",
    "RemotingCommand",
    "decode_frame",
    "encode",
    "encode_parts",
]
