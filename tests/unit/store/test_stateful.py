"""Hypothesis state machine: append (single, runs of plain messages, batches) / read / query / reopen (clean or
crashed), against a list model."""

from __future__ import annotations

import shutil
import tempfile

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from rocketq.protocol.message import BatchItem, decode_record, encode_properties
from rocketq.store import GetMessageStatus, MessageStore, StoreBatch, StoreConfig, StoreMessage
from rocketq.store.message import PlainMessage

QUEUES = 3


class StoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="rocketq-store-sm-")
        self.config = StoreConfig(
            store_path_root_dir=self.dir,
            mapped_file_size_commit_log=4096,
            mapped_file_size_consume_queue=100,
            max_hash_slot_num=8,
            max_index_num=16,
            clean_resource_interval=0,
        )
        self.now = 1_700_000_000_000
        self.store = self._open()
        self.model: list[list[bytes]] = [[] for _ in range(QUEUES)]
        self.seq = 0

    def _clock(self) -> int:
        return self.now

    def _open(self) -> MessageStore:
        store = MessageStore(self.config, clock=self._clock)
        assert store.load()
        store.start()
        return store

    def teardown(self) -> None:
        self.store.shutdown()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _props(self, seq: int) -> dict[str, str]:
        return {"UNIQ_KEY": f"U{seq}", "KEYS": f"K{seq % 7}"}

    @rule(queue=st.integers(0, QUEUES - 1), body=st.binary(max_size=700))
    def put(self, queue: int, body: bytes) -> None:
        self.now += 1
        r = self.store.put_message(StoreMessage(topic="S", body=body, queue_id=queue, properties=self._props(self.seq)))
        self.seq += 1
        assert r.is_ok and r.append_result is not None
        assert r.append_result.logics_offset == len(self.model[queue])
        self.model[queue].append(body)

    @rule(queue=st.integers(0, QUEUES - 1), bodies=st.lists(st.binary(max_size=300), min_size=1, max_size=4))
    def put_batch(self, queue: int, bodies: list[bytes]) -> None:
        self.now += 1
        items = []
        for b in bodies:
            items.append(BatchItem(flag=0, body=b, properties=self._props(self.seq)))
            self.seq += 1
        r = self.store.put_messages(StoreBatch(topic="S", items=items, queue_id=queue))
        assert r.is_ok and r.append_result is not None
        assert r.append_result.logics_offset == len(self.model[queue])
        self.model[queue].extend(bodies)

    @rule(
        run=st.lists(
            st.tuples(st.integers(0, QUEUES - 1), st.binary(max_size=300), st.sampled_from([None, "a", "b"])),
            min_size=1,
            max_size=6,
        )
    )
    def put_plain(self, run: list[tuple[int, bytes, str | None]]) -> None:
        """A run as the broker sends it: queues mixed, properties encoded, TAGS/UNIQ_KEY/KEYS beside them."""
        self.now += 1
        messages: list[PlainMessage] = []
        for queue, body, tags in run:
            props = self._props(self.seq)
            if tags is not None:
                props["TAGS"] = tags
            messages.append(
                ("S", queue, body, encode_properties(props).encode(), 0, 0, self.now, ("10.0.0.1", 5000), 0, tags,
                 props["UNIQ_KEY"], props["KEYS"])
            )  # fmt: skip
            self.seq += 1
        results = self.store.put_plain_messages(messages, ("10.0.0.2", 10911))
        for (queue, body, _), result in zip(run, results, strict=True):
            assert isinstance(result, tuple)
            assert result[1] == len(self.model[queue])
            self.model[queue].append(body)

    @rule(queue=st.integers(0, QUEUES - 1), data=st.data(), max_n=st.integers(1, 40))
    def read(self, queue: int, data: st.DataObject, max_n: int) -> None:
        expected = self.model[queue]
        offset = data.draw(st.integers(0, len(expected) + 2))
        r = self.store.get_message("S", queue, offset, max_n)
        try:
            if not expected:
                assert r.status in (GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, GetMessageStatus.NO_MESSAGE_IN_QUEUE)
            elif offset == len(expected):
                assert (r.status, r.next_begin_offset) == (GetMessageStatus.OFFSET_OVERFLOW_ONE, offset)
            elif offset > len(expected):
                assert (r.status, r.next_begin_offset) == (GetMessageStatus.OFFSET_OVERFLOW_BADLY, len(expected))
            else:
                assert r.status is GetMessageStatus.FOUND
                n = r.message_count
                assert 1 <= n <= max_n
                assert [decode_record(v).body for v in r.message_views] == expected[offset : offset + n]
                assert r.next_begin_offset == offset + n
        finally:
            r.release()

    @precondition(lambda self: self.seq > 0)
    @rule(data=st.data())
    def query(self, data: st.DataObject) -> None:
        seq = data.draw(st.integers(0, self.seq - 1))
        found = self.store.query_message("S", f"U{seq}", 4, 0, 2**62)
        assert [m.properties["UNIQ_KEY"] for m in found] == [f"U{seq}"]

    @rule()
    def reopen_clean(self) -> None:
        self.store.shutdown()
        self.store = self._open()

    @rule()
    def reopen_after_crash(self) -> None:
        self.store.abandon()
        self.store = self._open()

    @invariant()
    def offsets_match_model(self) -> None:
        for q in range(QUEUES):
            assert self.store.get_max_offset_in_queue("S", q) == len(self.model[q])


StoreMachine.TestCase.settings = settings(
    max_examples=50, stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestStoreMachine = StoreMachine.TestCase
