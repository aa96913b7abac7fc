"""Client-side unique message ids (``UNIQ_KEY``), laid out like Java's ``MessageClientIDSetter``.

Upper-case hex of 16 bytes for an IPv4 client (28 for IPv6)::

    ip (4|16) | pid (2, low 16 bits) | class-loader hash (4; here: a random per-process int)
    | ms since the start of the current month, local time (4) | counter (2, wraps)

The first part is fixed per process; the time and counter change per id. ``id_ip``/``id_pid``/``id_time_ms``
read an id back (Java ``getIPFromID``/``getPidFromID``/``getNearlyTimeFromID``); they raise ValueError for text
that is not a message id (``id_bytes`` checks it).
"""

from __future__ import annotations

import datetime as _dt
import ipaddress
import itertools
import os
import random
import struct
import threading
import time
from collections.abc import Callable, Iterator

_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_U16 = struct.Struct(">H")
_time_ns = time.time_ns
_HEX2 = [f"{i:02X}" for i in range(256)]


def _month_window(now_ms: int) -> tuple[int, int]:
    """Start of the month containing ``now_ms`` and start of the next one, local time, in epoch ms."""
    local = _dt.datetime.fromtimestamp(now_ms / 1000)
    start = local.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    nxt = start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(month=start.month + 1)
    return int(start.timestamp() * 1000), int(nxt.timestamp() * 1000)


class UniqIdGenerator:
    """Thread-safe generator of UNIQ_KEY ids. ``clock`` returns epoch ms (injectable for tests)."""

    def __init__(
        self,
        ip: str,
        pid: int | None = None,
        loader_hash: int | None = None,
        clock: Callable[[], int] | None = None,
    ) -> None:
        try:
            ip_bytes = ipaddress.ip_address(ip).packed
        except ValueError:
            ip_bytes = _fake_ip()
        pid = os.getpid() if pid is None else pid
        loader_hash = random.getrandbits(32) if loader_hash is None else loader_hash
        self._fix = (ip_bytes + _U16.pack(pid & 0xFFFF) + _U32.pack(loader_hash & 0xFFFFFFFF)).hex().upper()
        self._clock = clock  # None: the wall clock, read inline in create()
        self._counter = itertools.count()
        self._lock = threading.Lock()
        #: (start of the current month, start of the next one); replaced as a whole, so reading it needs no lock
        self._window = _month_window(self._now())
        self._prefix: tuple[int, int, str] = (-1, -1, "")  # (now ms, window start, id text without counter)

    def _now(self) -> int:
        return time.time_ns() // 1_000_000 if self._clock is None else self._clock()

    def create(self) -> str:
        # Lock-free on the common path: the window and the cached prefix are single tuple reads, next() on an
        # itertools.count is atomic. Ids made in the same millisecond share their prefix text (formatting it
        # is most of the cost of an id).
        clock = self._clock
        now = _time_ns() // 1_000_000 if clock is None else clock()
        start, next_start = self._window
        if now >= next_start:
            with self._lock:
                if now >= self._window[1]:
                    self._window = _month_window(now)
                start = self._window[0]
        count = next(self._counter)
        cached_now, cached_start, prefix = self._prefix
        if cached_now != now or cached_start != start:
            diff = now - start
            if -1_000_000 < diff < 0:  # clock stepped back a little (NTP): Java clamps to 0
                diff = 0
            prefix = f"{self._fix}{diff & 0xFFFFFFFF:08X}"
            self._prefix = (now, start, prefix)
        return prefix + _HEX2[(count >> 8) & 0xFF] + _HEX2[count & 0xFF]

    def id_source(self) -> tuple[str, Iterator[int]]:
        """What a batch's ids are made from in one call (``batchcodec.encode_batch``): the text of an id of this
        millisecond less its counter, and the counter; an id is the text + the counter's low 16 bits as 4 hex
        digits, as ``create`` makes it. The text is cut from an id made here, so one counter value per call goes
        unused (ids stay unique; ``create`` keeps its one call per id)."""
        return self.create()[:-4], self._counter


def _fake_ip() -> bytes:
    # Java createFakeIP: the low 4 bytes of the current time in ms.
    return struct.pack(">q", time.time_ns() // 1_000_000)[4:]


def id_bytes(msg_id: str) -> bytes:
    """The 16 (IPv4) or 28 (IPv6) bytes of a message id; ValueError saying what is wrong with anything else.

    Client ids (UNIQ_KEY) and broker offset ids have the same two lengths, so this checks the shape of both.
    """
    try:
        raw = bytes.fromhex(msg_id)
    except ValueError:
        raise ValueError(f"{msg_id!r} is not a message id: it is not hexadecimal") from None
    if len(raw) not in (16, 28):
        raise ValueError(
            f"{msg_id!r} is not a message id: it has {len(msg_id)} hex digits, a message id has 32 (56 for IPv6)"
        )
    return raw


def id_ip(msg_id: str) -> str:
    raw = id_bytes(msg_id)
    return str(ipaddress.ip_address(raw[:16] if len(raw) == 28 else raw[:4]))


def id_pid(msg_id: str) -> int:
    raw = id_bytes(msg_id)
    return int(_U16.unpack_from(raw, len(raw) - 12)[0])


def id_time_ms(msg_id: str, now_ms: int | None = None) -> int:
    """Approximate creation time of an id (within the current or the previous month, like Java)."""
    raw = id_bytes(msg_id)
    span = int(_U32.unpack_from(raw, len(raw) - 6)[0])
    now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    start, _ = _month_window(now)
    if start + span >= now:
        prev = _dt.datetime.fromtimestamp(start / 1000 - 1)
        start, _ = _month_window(int(prev.timestamp() * 1000))
    return start + span
