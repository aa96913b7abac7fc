"""rocketq.spark's pure parts: offsets JSON, range planning, the per-trigger limit, option parsing."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.spark import SINK_OPTIONS, SOURCE_OPTIONS, STORE_OPTIONS
from rocketq.spark._offsets import QueueRange, from_json, limit_offsets, plan_ranges, to_json
from rocketq.spark._options import OptionError, SinkOptions, SourceOptions, StoreOptions

A0, A1, A10, B0 = ("T", "a", 0), ("T", "a", 1), ("T", "a", 10), ("T", "b", 0)


def test_offsets_json_is_canonical_whatever_the_insertion_order() -> None:
    one = to_json({A10: 5, B0: 1, A1: 2, ("S", "a", 0): 9})
    two = to_json({("S", "a", 0): 9, A1: 2, B0: 1, A10: 5})
    assert json.dumps(one) == json.dumps(two)
    assert list(one) == ["S", "T"]
    assert list(one["T"]["a"]) == ["1", "10"]  # numeric queue order
    assert from_json(one) == {("S", "a", 0): 9, A1: 2, A10: 5, B0: 1}


def test_plan_ranges_skips_idle_queues_and_splits() -> None:
    ranges = plan_ranges({A0: 0, A1: 7, B0: 3}, {A0: 10, A1: 7, B0: 4}, max_records=4)
    assert ranges == [QueueRange("T", "a", 0, 0, 4), QueueRange("T", "a", 0, 4, 8), QueueRange("T", "a", 0, 8, 10),
                      QueueRange("T", "b", 0, 3, 4)]
    more = plan_ranges({A0: 0}, {A0: 10}, max_records=100, min_partitions=4)
    assert len(more) == 4
    assert [(r.start, r.end) for r in more] == sorted((r.start, r.end) for r in more)
    assert sum(r.size for r in more) == 10


@given(
    st.dictionaries(st.integers(0, 7), st.tuples(st.integers(0, 50), st.integers(0, 500)), min_size=1),
    st.integers(1, 300),
)
def test_limit_offsets_never_exceeds_the_limit_nor_the_latest(queues: dict[int, tuple[int, int]], limit: int) -> None:
    start = {("T", "a", q): s for q, (s, _) in queues.items()}
    latest = {("T", "a", q): s + n for q, (s, n) in queues.items()}
    end = limit_offsets(start, latest, limit)
    moved = sum(end[k] - start[k] for k in start)
    assert moved == min(limit, sum(latest[k] - start[k] for k in start))
    assert all(start[k] <= end[k] <= latest[k] for k in start)


def test_limit_offsets_does_not_starve_a_small_queue() -> None:
    start = {A0: 0, A1: 0}
    latest = {A0: 1_000_000, A1: 3}
    reached = dict(start)
    for _ in range(10):
        reached = limit_offsets(reached, latest, 100)
    assert reached[A1] == 3


def test_source_options() -> None:
    opts = SourceOptions.parse({"nameserver": "h:1", "topic": "A, B,A", "maxoffsetspertrigger": "10"},
                               streaming=True)
    assert opts.topics == ("A", "B")
    assert opts.starting == "latest"
    assert opts.max_offsets_per_trigger == 10
    assert SourceOptions.parse({"nameServer": "h:1", "topic": "A"}, streaming=False).starting == "earliest"
    offsets = SourceOptions.parse({"nameServer": "h:1", "topic": "A",
                                   "startingOffsets": '{"A": {"b": {"0": 5, "1": -2}}}'}, streaming=False)
    assert offsets.starting == {"A": {"b": {0: 5, 1: -2}}}
    cases = [
        ({"topic": "A"}, "'nameServer' is required"),
        ({"nameServer": "h:1", "topic": "A", "topics": "B"}, "unknown option 'topics'"),
        ({"nameServer": "h:1", "topic": "A", "failOnDataLoss": "maybe"}, "true or false"),
        ({"nameServer": "h:1", "topic": "A", "startingOffsets": "first"}, "JSON object"),
        ({"nameServer": "h:1", "topic": "A", "endingOffsets": '{"A": {"b": {"0": -2}}}'}, "not allowed as an end"),
        ({"nameServer": "h:1", "topic": "A", "expressionType": "REGEX"}, "TAG or SQL92"),
        ({"nameServer": "h:1", "topic": "A", "pullBatchSize": "0"}, ">= 1"),
    ]
    for options, message in cases:
        with pytest.raises(OptionError, match=message):
            SourceOptions.parse(options, streaming=False)
    with pytest.raises(OptionError, match="batch reads only"):
        SourceOptions.parse({"nameServer": "h:1", "topic": "A", "endingOffsets": "latest"}, streaming=True)


def test_sink_and_store_options() -> None:
    assert not SinkOptions.parse({"nameServer": "h:1"}, streaming=True).exactly_once
    eo = SinkOptions.parse({"nameServer": "h:1", "deliveryGuarantee": "exactlyOnce", "checkpointLocation": "/x"},
                           streaming=True)
    assert eo.exactly_once and eo.sink_id is None
    with pytest.raises(OptionError, match="'sinkId' and 'batchId'"):
        SinkOptions.parse({"nameServer": "h:1", "deliveryGuarantee": "exactly-once"}, streaming=False)
    with pytest.raises(OptionError, match="at-least-once or exactly-once"):
        SinkOptions.parse({"nameServer": "h:1", "deliveryGuarantee": "twice"}, streaming=False)
    store = StoreOptions.parse({"path": "/s", "topic": "A", "maxBytesPerPartition": "100"})
    assert (store.topics, store.max_bytes_per_partition, store.include_system_topics) == (("A",), 100, False)
    for table in (SOURCE_OPTIONS, SINK_OPTIONS, STORE_OPTIONS):
        assert all(doc for _, doc in table.values())


def test_import_rocketq_never_imports_pyspark() -> None:
    code = "import sys, rocketq, rocketq.client, rocketq.spark; print('pyspark' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_readme_documents_every_option_and_column() -> None:
    from pathlib import Path

    from rocketq.spark import READ_COLUMNS

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    section = readme[readme.index("## Spark") :]
    for table in (SOURCE_OPTIONS, SINK_OPTIONS, STORE_OPTIONS):
        for name in table:
            assert f"`{name}`" in section, f"option {name} is not in the README's Spark section"
    for name, kind, _ in READ_COLUMNS:
        assert f"| {name} | {kind.replace(', ', ',')} |" in section, f"column {name} is not in the schema table"


def test_acl_options_make_credentials_and_go_together() -> None:
    base = {"nameServer": "h:1", "topic": "T"}
    assert SourceOptions.parse(base, streaming=False).credentials is None
    src = SourceOptions.parse({**base, "accessKey": "rocketq-user", "secretKey": "s3cret-key", "securityToken": "tk"},
                              streaming=False)  # fmt: skip
    assert src.credentials is not None
    assert (src.credentials.access_key, src.credentials.secret_key, src.credentials.security_token) == (
        "rocketq-user", "s3cret-key", "tk")
    assert "s3cret-key" not in repr(src)  # options may be logged: the secret is not in their repr
    sink = SinkOptions.parse({**base, "accesskey": "rocketq-user", "secretkey": "s3cret-key"}, streaming=False)
    assert sink.credentials is not None and sink.credentials.security_token is None
    for bad in ({"accessKey": "rocketq-user"}, {"secretKey": "s3cret-key"}, {"securityToken": "tk"}):
        with pytest.raises(OptionError, match="accessKey"):
            SourceOptions.parse({**base, **bad}, streaming=False)
        with pytest.raises(OptionError, match="accessKey"):
            SinkOptions.parse({**base, **bad}, streaming=False)
