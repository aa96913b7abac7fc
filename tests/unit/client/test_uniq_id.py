"""UNIQ_KEY ids: Java MessageClientIDSetter layout (ip + pid + loader hash + ms in month + counter)."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from rocketq.client._uniq_id import UniqIdGenerator, _month_window, id_ip, id_pid, id_time_ms


def _ms(*args: int) -> int:
    return int(dt.datetime(*args).timestamp() * 1000)


def test_layout_and_fields() -> None:
    now = _ms(2024, 3, 15, 12, 0, 0)
    gen = UniqIdGenerator("10.1.2.3", pid=0x12345, loader_hash=0xCAFEBABE, clock=lambda: now)
    a, b = gen.create(), gen.create()
    assert re.fullmatch(r"[0-9A-F]{32}", a)
    assert a[:8] == "0A010203"  # ip
    assert a[8:12] == "2345"  # pid, low 16 bits
    assert a[12:20] == "CAFEBABE"  # class-loader hash
    start, _ = _month_window(now)
    assert int(a[20:28], 16) == now - start  # ms since the start of the month (local time)
    assert a[28:] == "0000" and b[28:] == "0001"  # counter
    assert id_ip(a) == "10.1.2.3"
    assert id_pid(a) == 0x2345
    assert id_time_ms(a, now_ms=now + 1000) == now


def test_month_rollover_and_ipv6() -> None:
    t = [_ms(2024, 1, 31, 23, 59, 59)]
    gen = UniqIdGenerator("::1", pid=1, loader_hash=1, clock=lambda: t[0])
    first = gen.create()
    assert len(first) == 56  # 16-byte ip
    t[0] = _ms(2024, 2, 1, 0, 0, 1)
    assert int(gen.create()[44:52], 16) == 1000  # the month restarted


def test_counter_wraps_at_16_bits() -> None:
    gen = UniqIdGenerator("127.0.0.1", pid=1, loader_hash=1, clock=lambda: _ms(2024, 5, 2))
    ids = [gen.create() for _ in range(0x10001)]
    assert ids[0][-4:] == "0000" and ids[0xFFFF][-4:] == "FFFF" and ids[0x10000][-4:] == "0000"


def test_bad_ip_uses_a_fake_one() -> None:
    assert len(UniqIdGenerator("not-an-ip").create()) == 32


def _reference_id(fix: str, now: int, start: int, count: int) -> str:
    diff = now - start
    if -1_000_000 < diff < 0:
        diff = 0
    return fix + f"{diff & 0xFFFFFFFF:08X}{count & 0xFFFF:04X}"


def test_ids_follow_the_clock_within_and_across_milliseconds() -> None:
    base = _ms(2024, 3, 15, 12, 0, 0)
    start, _ = _month_window(base)
    # same ms several times, forward, a small step back (clamped only below the month start), a big jump forward
    times = [base, base, base, base + 1, base + 1, base - 5, base + 7, start - 10, start - 10, base + 3_600_000]
    t = [0]
    gen = UniqIdGenerator("10.1.2.3", pid=7, loader_hash=9, clock=lambda: times[t[0]])
    fix = "0A010203" + "0007" + "00000009"
    for i in range(len(times)):
        t[0] = i
        assert gen.create() == _reference_id(fix, times[i], start, i)


def test_ids_are_unique_across_threads() -> None:
    import threading

    gen = UniqIdGenerator("10.1.2.3")
    out: list[list[str]] = [[] for _ in range(4)]

    def work(k: int) -> None:
        out[k].extend(gen.create() for _ in range(10_000))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    ids = [i for part in out for i in part]
    assert len(set(ids)) == len(ids) == 40_000
    assert all(re.fullmatch(r"[0-9A-F]{32}", i) for i in ids)


@pytest.mark.parametrize("bad", ["FFFF", "", "ZZ" * 16, "AB" * 15, "AB" * 17, "AB" * 27 + "A"])
def test_reading_a_malformed_id_says_what_is_wrong(bad: str) -> None:
    # was struct.error from unpack_from on a short id ("FFFF"), a bare fromhex ValueError for non-hex text
    for read in (id_ip, id_pid, id_time_ms):
        with pytest.raises(ValueError, match="is not a message id"):
            read(bad)
