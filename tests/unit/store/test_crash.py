"""Crash test: a child appends under SYNC_FLUSH and is SIGKILLed at random moments; nothing acknowledged is lost.

After every kill the parent reopens the store and checks that each acknowledged message is readable byte for
byte through its consume queue (at the acknowledged queue offset and commit-log offset) and by its key, and
that every record visible through a consume queue or the commit log is whole (magic, sizes, body CRC, and the
deterministic content of its sequence number).
"""

from __future__ import annotations

import importlib.util
import os
import queue
import random
import signal
import subprocess
import sys
import threading
from pathlib import Path
from types import ModuleType

import pytest

from rocketq.protocol.message import body_crc, decode_record
from rocketq.store import GetMessageStatus, MessageStore

WRITER = Path(__file__).with_name("crash_writer.py")
CYCLES = 24


def _load_writer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rocketq_store_crash_writer", WRITER)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run_child_and_kill(root: str, first_seq: int, rng: random.Random) -> list[tuple[int, int, int, int]]:
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parents[3] / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen(
        [sys.executable, str(WRITER), root, str(first_seq), "3"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    want = rng.randint(1, 40)
    acks: list[tuple[int, int, int, int]] = []
    eof = False
    try:
        while len(acks) < want:
            line = lines.get(timeout=30)
            if line is None:
                eof = True
                break
            if line.endswith("\n"):
                seq, qid, qoff, phys = (int(x) for x in line.split())
                acks.append((seq, qid, qoff, phys))
        threading.Event().wait(rng.uniform(0, 0.004))
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    reader.join(30)
    while not eof:
        line = lines.get(timeout=30)
        if line is None:
            break
        if line.endswith("\n"):
            seq, qid, qoff, phys = (int(x) for x in line.split())
            acks.append((seq, qid, qoff, phys))
    assert proc.stderr is not None
    err = proc.stderr.read()
    assert proc.returncode == -signal.SIGKILL, err
    return acks


def _verify(store: MessageStore, w: ModuleType, acked: dict[int, tuple[int, int, int]], fresh: set[int],
            rng: random.Random) -> None:
    topic = w.TOPIC
    # every acknowledged message, through its consume queue, byte for byte
    for seq, (qid, qoff, phys) in acked.items():
        r = store.get_message(topic, qid, qoff, 1)
        assert r.status is GetMessageStatus.FOUND, (seq, qid, qoff, r.status)
        try:
            rec = decode_record(r.message_views[0])
        finally:
            r.release()
        assert (rec.commit_log_offset, rec.queue_offset, rec.queue_id) == (phys, qoff, qid)
        assert rec.body == w.body_for(seq) and rec.properties == w.props_for(seq)
        assert body_crc(rec.body) == rec.body_crc
    # and by key: all acknowledged in the last run, a sample of the older ones
    sample = set(rng.sample(sorted(acked), min(len(acked), 30))) | fresh
    for seq in sample:
        found = store.query_message(topic, f"C{seq}", 4, 0, 2**62)
        assert [m.commit_log_offset for m in found] == [acked[seq][2]], seq
        found = store.query_message(topic, f"key{seq}", 4, 0, 2**62)
        assert [m.body for m in found] == [w.body_for(seq)], seq
    # nothing torn is visible: every unit of every queue leads to a whole, correct record
    for qid in store.get_queue_ids(topic):
        offset = store.get_min_offset_in_queue(topic, qid)
        end = store.get_max_offset_in_queue(topic, qid)
        while offset < end:
            r = store.get_message(topic, qid, offset, 32)
            assert r.status is GetMessageStatus.FOUND
            try:
                for q, view in zip(r.queue_offsets, r.message_views, strict=True):
                    rec = decode_record(view)
                    seq = int(rec.properties["UNIQ_KEY"][1:])
                    assert rec.queue_offset == q and rec.body == w.body_for(seq)
                    assert body_crc(rec.body) == rec.body_crc
            finally:
                r.release()
            offset = r.next_begin_offset
    # and the commit log itself holds only whole records up to its end
    file_size = store.config.mapped_file_size_commit_log
    pos, end = store.get_min_phy_offset(), store.get_max_phy_offset()
    while pos < end:
        data = store.get_commit_log_data(pos)
        assert data is not None
        try:
            p, blank = 0, False
            while p < data.size:
                size = int.from_bytes(data.view[p : p + 4], "big")
                if int.from_bytes(data.view[p + 4 : p + 8], "big") == 0xCBD43194:
                    assert data.start_offset + p + size == (pos // file_size + 1) * file_size
                    blank = True
                    break
                rec = decode_record(data.view, p)
                assert body_crc(rec.body) == rec.body_crc and rec.commit_log_offset == data.start_offset + p
                p += size
            assert blank or p == data.size
            pos = (pos // file_size + 1) * file_size if blank else data.start_offset + data.size
        finally:
            data.release()


@pytest.mark.crash
def test_sync_flush_survives_sigkill(tmp_path: Path) -> None:
    w = _load_writer()
    root = str(tmp_path / "store")
    seed = int.from_bytes(os.urandom(4), "big")
    print(f"crash test seed {seed}")
    rng = random.Random(seed)
    acked: dict[int, tuple[int, int, int]] = {}
    total_runs_with_acks = 0
    for cycle in range(CYCLES):
        acks = _run_child_and_kill(root, cycle * 1_000_000, rng)
        total_runs_with_acks += bool(acks)
        fresh = {seq for seq, *_ in acks}
        for seq, qid, qoff, phys in acks:
            acked[seq] = (qid, qoff, phys)
        store = MessageStore(w.crash_config(root))
        assert store.load()
        try:
            _verify(store, w, acked, fresh, rng)
        finally:
            if cycle % 2:
                store.shutdown()  # clean restart for the next child
            else:
                store.abandon()  # the next child recovers from a crash again
    assert total_runs_with_acks == CYCLES
    assert len(acked) >= CYCLES
