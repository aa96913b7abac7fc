"""The body CRC: zlib-ng's crc32 where installed (``make test`` installs it), the same values as zlib's, in the
Python helpers and in the compiled twins."""

from __future__ import annotations

import os
import zlib

from hypothesis import given
from hypothesis import strategies as st

from rocketq.common import crc
from rocketq.protocol.message import body_crc
from rocketq.store import _appendcodec_py, appendcodec


@given(st.binary(max_size=5000))
def test_the_same_values_as_zlib(data: bytes) -> None:
    assert crc.crc32(data) == zlib.crc32(data)
    assert body_crc(data) == zlib.crc32(data) & 0x7FFFFFFF


def test_make_test_runs_zlib_ng() -> None:
    assert crc.crc32 is not zlib.crc32, "zlib-ng is a dependency (pyproject.toml): pip install zlib-ng"


@given(st.binary(max_size=3000))
def test_a_compiled_record_carries_zlibs_crc(body: bytes) -> None:
    """The compiled twin calls zlib-ng through Python, or zlib when that fails: the record is the pure twin's."""
    assert appendcodec.compiled is not None or os.environ.get("ROCKETQ_NO_EXTENSIONS")
    out = []
    for twin in [_appendcodec_py, *([appendcodec.compiled] if appendcodec.compiled else [])]:
        buf = bytearray(4200)
        args = (buf, 0, body, b"\x01T", b"A\x01b\x02", 1, 0, 7, 100, 0, 5, bytes(8), 6, bytes(8), 0, 0)
        twin.write_record(*args)
        out.append(bytes(buf))
    assert len(set(out)) == 1
    assert int.from_bytes(out[0][8:12], "big") == zlib.crc32(body) & 0x7FFFFFFF
