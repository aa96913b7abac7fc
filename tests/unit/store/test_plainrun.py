"""``write_plain_run``: both twins write the same records and collect the same dispatch, and stop where the
general path must take over (``put_plain_messages`` as a whole is held to single puts in test_put_plain.py)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

from rocketq.protocol.message import decode_record, encode_host
from rocketq.store import _plainrun_py, plainrun
from rocketq.store.fast_hash import hash_with_prefix, index_key_hash, tags_code_of, unsigned_hash

TWINS: dict[str, Callable[..., tuple[int, int]]] = {"py": _plainrun_py.write_plain_run}
if plainrun.compiled is not None:
    TWINS["c"] = plainrun.compiled.write_plain_run

V4 = ("10.0.0.1", 5000)
V6 = ("::1", 6000)
STORE_V4 = ("10.0.0.2", 10911)
STORE_V6 = ("fe80::2", 10911)


def _message(i: int, topic: str = "TA", **over: Any) -> tuple[Any, ...]:
    m: dict[str, Any] = dict(
        topic=topic, queue_id=i % 3, body=bytes([i % 256]) * (100 + i), props=f"UNIQ_KEY\x01U{i}\x02".encode(),
        flag=i, sys_flag=0, born_ts=1_000 + i, born=V6 if i % 4 == 1 else V4, reconsume=i % 2,
        tags=f"t{i % 2}" if i % 3 == 0 else None, uniq=f"U{i}", keys=f"k{i} shared" if i % 2 else None,
    )  # fmt: skip
    m.update(over)
    return tuple(m.values())


class Run:
    """One call's inputs, with every cache filled for TA and TB, and what it collected."""

    def __init__(self, store_host: Any = STORE_V4, size: int = 64 * 1024, index: bool = True) -> None:
        self.mm = bytearray(size)
        self.store_b = encode_host(store_host)
        self.topics = {t: bytes([len(t)]) + t.encode() for t in ("TA", "TB")}
        self.hosts = {h: encode_host(h) for h in (V4, V6)}
        self.tags = {t: tags_code_of(t) for t in ("t0", "t1")}
        self.queues: dict[tuple[str, int], int] = {("TA", 1): 41}
        self.prefixes = {t: unsigned_hash(t + "#")[0] for t in ("TA", "TB")} if index else None
        self.out: list[Any] = []
        self.units: dict[Any, list[Any]] = {}
        self.keys: list[int] = []
        self.arrivals: list[Any] = []
        self.stats: dict[str, list[int]] = {}

    def call(self, twin: str, messages: list[tuple[Any, ...]], pos: int = 16, start: int = 0,
             limit: int | None = None, max_body: int = 4096) -> tuple[int, int]:  # fmt: skip
        return TWINS[twin](
            self.mm, pos, len(self.mm) - 8 if limit is None else limit, 1 << 30, messages, start, self.store_b, 777,
            max_body, self.topics, self.hosts, self.tags, self.queues, self.prefixes, self.out, self.units, self.keys,
            self.arrivals, self.stats,
        )  # fmt: skip

    def collected(self) -> tuple[Any, ...]:
        units = {k: (v[0], bytes(v[1])) for k, v in self.units.items()}
        return bytes(self.mm), self.out, units, self.keys, self.arrivals, self.stats, self.queues


@pytest.mark.parametrize("store_host", [STORE_V4, STORE_V6])
def test_the_twins_write_and_collect_the_same(store_host: Any) -> None:
    messages = [_message(i, "TA" if i % 5 else "TB") for i in range(40)] + [_message(40, tags="", keys="")]
    runs = {name: Run(store_host) for name in TWINS}
    results = {name: run.call(name, messages) for name, run in runs.items()}
    assert len(set(results.values())) == 1
    collected = [run.collected() for run in runs.values()]
    assert all(c == collected[0] for c in collected)
    run = runs["py"]
    end = results["py"][1]
    assert results["py"][0] == len(messages)
    # what was collected is what was written
    pos = 16
    for (phys, queue_offset, size), m in zip(run.out, messages, strict=True):
        rec = decode_record(bytes(run.mm[pos : pos + size]))
        assert (rec.commit_log_offset, rec.queue_offset, rec.store_size) == (phys, queue_offset, size)
        assert phys == (1 << 30) + pos and (rec.topic, rec.queue_id, rec.body) == m[:3]
        assert (rec.born_host, rec.store_host, rec.store_timestamp) == (m[7], store_host, 777)
        pos += size
    assert pos == end and not any(run.mm[end:])
    assert run.queues[("TA", 1)] == 41 + sum(1 for m in messages if m[:2] == ("TA", 1))
    first, packed = run.units[("TA", 1)]
    assert first == 41 and len(packed) == 20 * (run.queues[("TA", 1)] - 41)
    assert run.arrivals[0] == ("TB", 0, 1, tags_code_of("t0"))  # message 0: TB, queue 0, tags t0
    assert run.keys[:2] == [index_key_hash("TB#U0"), (1 << 30) + 16]
    assert hash_with_prefix(run.prefixes["TA"], "shared") == unsigned_hash("TA#shared")[0]  # type: ignore[index]
    assert run.stats["TB"][0] == 8 and sum(s[0] for s in run.stats.values()) == len(messages)


STOPS: dict[str, Callable[[Run], tuple[Any, ...]]] = {
    "a topic not cached": lambda r: _message(2, "TC"),
    "a born host not cached": lambda r: _message(2, born=("10.9.9.9", 1)),
    "tags not cached": lambda r: _message(2, tags="new"),
    "an index prefix not cached": lambda r: (r.prefixes.pop("TB"), _message(2, "TB"))[1],  # type: ignore[union-attr]
    "a body over the maximum": lambda r: _message(2, body=b"x" * 4097),
    "properties over 32767 bytes": lambda r: _message(2, props=b"p" * 32768),
    "a record past the limit": lambda r: _message(2, body=b"x" * 4000),
}


@pytest.mark.parametrize("twin", sorted(TWINS))
@pytest.mark.parametrize("why", sorted(STOPS))
def test_each_uncommon_message_stops_the_call_before_anything_is_written_for_it(twin: str, why: str) -> None:
    run = Run(size=2048)
    messages = [_message(0), _message(1), STOPS[why](run), _message(3)]
    nxt, end = run.call(twin, messages, limit=2040)
    assert nxt == 2 and len(run.out) == 2 and end == 16 + sum(size for _, _, size in run.out)
    assert not any(run.mm[end:])
    again = Run(size=2048)  # resuming past it goes on
    assert again.call(twin, messages, start=3)[0] == 4 and len(again.out) == 1


@pytest.mark.parametrize("twin", sorted(TWINS))
def test_without_an_index_no_keys_are_collected_and_none_stop_the_call(twin: str) -> None:
    run = Run(index=False)
    assert run.call(twin, [_message(i, "TB") for i in range(5)])[0] == 5
    assert run.keys == [] and len(run.arrivals) == 5


def test_make_test_runs_the_compiled_twin() -> None:
    assert plainrun.IMPLEMENTATION == "c" or os.environ.get("ROCKETQ_NO_EXTENSIONS"), (
        "rocketq.store._plainrun_c was not built (C compiler?)"
    )
