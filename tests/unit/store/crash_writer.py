"""Child process of the crash test: appends under SYNC_FLUSH and prints one line per acknowledged message.

Usage: python crash_writer.py STORE_DIR FIRST_SEQ THREADS

Line format: ``seq queue_id queue_offset commit_log_offset`` — printed only after ``put_message_and_wait``
(or ``put_messages_and_wait``) returned PUT_OK, i.e. after the bytes were flushed. The parent kills this
process with SIGKILL at random moments.
"""

from __future__ import annotations

import hashlib
import sys
import threading

from rocketq.protocol.message import BatchItem
from rocketq.store import MessageStore, StoreBatch, StoreConfig, StoreMessage

TOPIC = "Crash"
QUEUES = 3


def crash_config(root: str) -> StoreConfig:
    return StoreConfig(
        store_path_root_dir=root,
        flush_disk_type="SYNC_FLUSH",
        mapped_file_size_commit_log=16 * 1024,
        mapped_file_size_consume_queue=20 * 50,
        max_hash_slot_num=256,
        max_index_num=4000,
        clean_resource_interval=0,
    )


def body_for(seq: int) -> bytes:
    """Deterministic content, 0..1499 bytes, so the parent can check every byte."""
    digest = hashlib.sha256(str(seq).encode()).digest()
    n = int.from_bytes(digest[:2], "big") % 1500
    return (digest * (n // 32 + 1))[:n]


def props_for(seq: int) -> dict[str, str]:
    return {"UNIQ_KEY": f"C{seq}", "KEYS": f"key{seq}", "TAGS": f"t{seq % 5}"}


def main() -> None:
    root, first, n_threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    store = MessageStore(crash_config(root))
    if not store.load():
        raise SystemExit("load failed")
    store.start()
    out_lock = threading.Lock()
    seq_lock = threading.Lock()
    counter = [first]

    def next_seqs(n: int) -> list[int]:
        with seq_lock:
            start = counter[0]
            counter[0] += n
        return list(range(start, start + n))

    def writer(tid: int) -> None:
        i = 0
        while True:
            i += 1
            queue_id = (tid + i) % QUEUES
            if i % 5 == 0:
                seqs = next_seqs(3)
                items = [BatchItem(flag=0, body=body_for(s), properties=props_for(s)) for s in seqs]
                r = store.put_messages_and_wait(StoreBatch(topic=TOPIC, items=items, queue_id=queue_id))
                if r.is_ok and r.append_result is not None and r.append_result.record_offsets is not None:
                    lines = [
                        f"{s} {queue_id} {r.append_result.logics_offset + k} {off}\n"
                        for k, (s, off) in enumerate(zip(seqs, r.append_result.record_offsets, strict=True))
                    ]
                    with out_lock:
                        sys.stdout.write("".join(lines))
                        sys.stdout.flush()
            else:
                (s,) = next_seqs(1)
                msg = StoreMessage(topic=TOPIC, body=body_for(s), queue_id=queue_id, properties=props_for(s))
                r = store.put_message_and_wait(msg)
                if r.is_ok and r.append_result is not None:
                    with out_lock:
                        ar = r.append_result
                        sys.stdout.write(f"{s} {queue_id} {ar.logics_offset} {ar.wrote_offset}\n")
                        sys.stdout.flush()

    threads = [threading.Thread(target=writer, args=(t,), daemon=True) for t in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
