"""Options of the ``rocketmq`` and ``rocketmq-store`` formats: one table per role, parsed and checked once.

Spark hands options over as a case-insensitive map of strings (keys lower-cased). Unknown options are
refused, so a typo fails the query at once instead of being ignored (a recurring complaint about other
connectors' docs); the tables here are the single source of the README's option table.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rocketq.client import SessionCredentials

#: option name (as documented) → (default, one-line meaning). Defaults are strings, as Spark passes them.
SOURCE_OPTIONS: dict[str, tuple[str | None, str]] = {
    "nameServer": (None, "name server address(es), host:port[;host:port] (required)"),
    "topic": (None, "topic(s) to read, comma-separated (required)"),
    "subExpression": ("*", "broker-side filter: a tag expression (TagA || TagB) or, with expressionType=SQL92, "
                           "an SQL92 property filter"),
    "expressionType": ("TAG", "TAG or SQL92 (the broker needs enablePropertyFilter=true)"),
    "startingOffsets": (None, "earliest | latest | group | JSON {topic: {broker: {queueId: offset}}} "
                              "(-2 earliest, -1 latest); default latest for streams, earliest for batches"),
    "startingTimestamp": (None, "epoch ms: start each queue at its first message stored at or after it "
                                "(wins over startingOffsets)"),
    "endingOffsets": ("latest", "batch only: latest | group | JSON (exclusive ends, -1 latest)"),
    "endingTimestamp": (None, "batch only: epoch ms: end each queue before its first message stored at or "
                              "after it"),
    "maxOffsetsPerTrigger": (None, "streaming: at most this many offsets per micro-batch, split over the queues "
                                   "in proportion to their backlog (also under trigger(availableNow=True))"),
    "maxRecordsPerPartition": ("500000", "split a queue range into Spark partitions of at most this many "
                                         "offsets"),
    "minPartitions": (None, "split queue ranges further until there are at least this many partitions"),
    "failOnDataLoss": ("true", "fail when offsets to read were removed by retention (false: skip them, "
                               "logging a warning)"),
    "consumerGroup": (None, "commit processed offsets to this group (lag display only; recovery uses the "
                            "checkpoint); also the group read by startingOffsets=group"),
    "pullBatchSize": ("32", "messages asked for per pull request"),
    "pullTimeoutMs": ("10000", "timeout of one request to a broker or the name server"),
    "failoverWaitMs": ("30000", "how long a read task whose broker stopped answering keeps asking the name "
                                "server for another replica of the queue's broker group"),
    "accessKey": (None, "ACL account: sign every request with this access key (brokers with aclEnable=true)"),
    "secretKey": (None, "the ACL account's secret key (required with accessKey)"),
    "securityToken": (None, "optional ACL security token, signed too"),
}

SINK_OPTIONS: dict[str, tuple[str | None, str]] = {
    "nameServer": (None, "name server address(es) (required)"),
    "topic": (None, "topic for every row; overrides the topic column (one of the two is required)"),
    "deliveryGuarantee": ("at-least-once", "at-least-once | exactly-once"),
    "sinkId": (None, "exactly-once: the sink's identity on the brokers; default the streaming query id; "
                     "required for batch writes"),
    "batchId": (None, "exactly-once batch writes: this write's number; a write whose number is not above "
                      "the sink's last committed one stores nothing"),
    "producerGroup": ("rocketq-spark-sink", "producer group of the at-least-once sink"),
    "sendTimeoutMs": ("10000", "timeout of one send or stage request"),
    "failoverWaitMs": ("30000", "exactly-once: how long a stage or commit keeps asking the name server for a "
                                "new master of a broker group whose master stopped answering"),
    "accessKey": (None, "ACL account: sign every request with this access key (brokers with aclEnable=true)"),
    "secretKey": (None, "the ACL account's secret key (required with accessKey)"),
    "securityToken": (None, "optional ACL security token, signed too"),
}

STORE_OPTIONS: dict[str, tuple[str | None, str]] = {
    "path": (None, "a broker's store directory (the one holding commitlog/) or its commitlog directory "
                   "(required; load(path) sets it)"),
    "topic": (None, "only these topics, comma-separated"),
    "includeSystemTopics": ("false", "also read SCHEDULE_TOPIC_XXXX, RMQ_SYS_*/RQ_SYS_* and other internal "
                                     "topics"),
    "brokerName": (None, "value of the brokerName column"),
    "maxBytesPerPartition": (None, "split commit-log files into partitions of about this many bytes (default: "
                                   "one partition per file)"),
}


class OptionError(ValueError):
    """A missing, unknown or malformed option; the message names it."""


#: Options Spark itself passes to every data source (e.g. a stream's checkpoint); not ours to check.
_SPARK_OPTIONS = frozenset({"checkpointlocation", "path", "queryname"})


def _canonical(options: Mapping[str, str], table: dict[str, tuple[str | None, str]], fmt: str) -> dict[str, str]:
    names = {k.lower(): k for k in table}
    out: dict[str, str] = {}
    for key, value in options.items():
        name = names.get(key.lower())
        if name is None:
            if key.lower() in _SPARK_OPTIONS:
                continue
            known = ", ".join(sorted(table))
            raise OptionError(f"unknown option {key!r} for format {fmt!r}; known options: {known}")
        out[name] = value
    for name, (default, _) in table.items():
        if name not in out and default is not None:
            out[name] = default
    return out


def _int(opts: dict[str, str], name: str, minimum: int = 0) -> int | None:
    raw = opts.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise OptionError(f"option {name!r} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise OptionError(f"option {name!r} must be >= {minimum}, got {value}")
    return value


def _bool(opts: dict[str, str], name: str) -> bool:
    raw = opts[name].strip().lower()
    if raw not in ("true", "false"):
        raise OptionError(f"option {name!r} must be true or false, got {opts[name]!r}")
    return raw == "true"


def _required(opts: dict[str, str], name: str) -> str:
    value = (opts.get(name) or "").strip()
    if not value:
        raise OptionError(f"option {name!r} is required")
    return value


def _credentials(opts: dict[str, str]) -> SessionCredentials | None:
    """The ACL account of ``accessKey``/``secretKey``/``securityToken``; one without the other is an error."""
    ak = (opts.get("accessKey") or "").strip()
    sk = opts.get("secretKey") or ""
    token = opts.get("securityToken") or None
    if not ak and not sk:
        if token:
            raise OptionError("option 'securityToken' needs the options 'accessKey' and 'secretKey'")
        return None
    if not ak or not sk:
        raise OptionError("options 'accessKey' and 'secretKey' go together: give both or neither")
    return SessionCredentials(ak, sk, token)


def _topics(raw: str) -> tuple[str, ...]:
    topics = tuple(dict.fromkeys(t.strip() for t in raw.split(",") if t.strip()))
    if not topics:
        raise OptionError("option 'topic' names no topic")
    return topics


#: A position option: a keyword or explicit offsets ``{topic: {broker: {queueId: offset}}}``.
Position = str | dict[str, dict[str, dict[int, int]]]


def parse_position(name: str, raw: str, keywords: tuple[str, ...]) -> Position:
    text = raw.strip()
    if text.lower() in keywords:
        return text.lower()
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        raise OptionError(f"option {name!r} must be one of {', '.join(keywords)} or a JSON object, "
                          f"got {raw!r}") from None
    if not isinstance(obj, dict):
        raise OptionError(f"option {name!r}: JSON must be an object {{topic: {{broker: {{queueId: offset}}}}}}")
    out: dict[str, dict[str, dict[int, int]]] = {}
    try:
        for topic, brokers in obj.items():
            for broker, queues in brokers.items():
                for qid, off in queues.items():
                    if isinstance(off, bool) or not isinstance(off, int):
                        raise TypeError(f"offset {off!r}")
                    out.setdefault(str(topic), {}).setdefault(str(broker), {})[int(qid)] = off
    except (AttributeError, TypeError, ValueError) as exc:
        raise OptionError(f"option {name!r}: bad JSON offsets ({exc}); expected "
                          "{topic: {brokerName: {queueId: offset}}}") from None
    return out


@dataclass(frozen=True, slots=True)
class SourceOptions:
    name_server: str
    topics: tuple[str, ...]
    sub_expression: str
    expression_type: str
    starting: Position
    starting_timestamp: int | None
    ending: Position
    ending_timestamp: int | None
    max_offsets_per_trigger: int | None
    max_records_per_partition: int
    min_partitions: int | None
    fail_on_data_loss: bool
    consumer_group: str | None
    pull_batch_size: int
    timeout: float
    #: the ACL account every request is signed with (None: unsigned); its repr hides the secret
    credentials: SessionCredentials | None = None
    failover_wait: float = 30.0

    @classmethod
    def parse(cls, options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
        opts = _canonical(options, SOURCE_OPTIONS, "rocketmq")
        expression_type = opts["expressionType"].strip().upper()
        if expression_type not in ("TAG", "SQL92"):
            raise OptionError(f"option 'expressionType' must be TAG or SQL92, got {opts['expressionType']!r}")
        group = (opts.get("consumerGroup") or "").strip() or None
        starting_raw = opts.get("startingOffsets") or ("latest" if streaming else "earliest")
        starting = parse_position("startingOffsets", starting_raw, ("earliest", "latest", "group"))
        ending = parse_position("endingOffsets", opts["endingOffsets"], ("latest", "group"))
        if streaming:
            for name in ("endingOffsets", "endingTimestamp"):
                if name in options or name.lower() in options:
                    raise OptionError(f"option {name!r} is for batch reads only (a stream has no end)")
        elif "maxOffsetsPerTrigger" in opts:
            raise OptionError("option 'maxOffsetsPerTrigger' is for streaming reads only")
        if "group" in (starting, ending) and group is None:
            raise OptionError("startingOffsets/endingOffsets=group needs the consumerGroup option")
        if isinstance(ending, dict) and any(o == -2 for b in ending.values() for q in b.values()
                                            for o in q.values()):
            raise OptionError("option 'endingOffsets': -2 (earliest) is not allowed as an end")
        return cls(
            name_server=_required(opts, "nameServer"),
            topics=_topics(_required(opts, "topic")),
            sub_expression=opts["subExpression"].strip() or "*",
            expression_type=expression_type,
            starting=starting,
            starting_timestamp=_int(opts, "startingTimestamp"),
            ending=ending,
            ending_timestamp=_int(opts, "endingTimestamp"),
            max_offsets_per_trigger=_int(opts, "maxOffsetsPerTrigger", 1),
            max_records_per_partition=_int(opts, "maxRecordsPerPartition", 1) or 500_000,
            min_partitions=_int(opts, "minPartitions", 1),
            fail_on_data_loss=_bool(opts, "failOnDataLoss"),
            consumer_group=group,
            pull_batch_size=_int(opts, "pullBatchSize", 1) or 32,
            timeout=(_int(opts, "pullTimeoutMs", 1) or 10_000) / 1000.0,
            credentials=_credentials(opts),
            failover_wait=(_int(opts, "failoverWaitMs", 0) or 0) / 1000.0,
        )


EXACTLY_ONCE = "exactly-once"
AT_LEAST_ONCE = "at-least-once"
_GUARANTEES = {"exactly-once": EXACTLY_ONCE, "exactlyonce": EXACTLY_ONCE, "at-least-once": AT_LEAST_ONCE,
               "atleastonce": AT_LEAST_ONCE}


@dataclass(frozen=True, slots=True)
class SinkOptions:
    name_server: str
    topic: str | None
    delivery: str
    sink_id: str | None
    batch_id: int | None
    producer_group: str
    timeout: float
    credentials: SessionCredentials | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    failover_wait: float = 30.0

    @property
    def exactly_once(self) -> bool:
        return self.delivery == EXACTLY_ONCE

    @classmethod
    def parse(cls, options: Mapping[str, str], *, streaming: bool) -> SinkOptions:
        opts = _canonical(options, SINK_OPTIONS, "rocketmq")
        delivery = _GUARANTEES.get(opts["deliveryGuarantee"].strip().lower().replace("_", "-"))
        if delivery is None:
            raise OptionError(f"option 'deliveryGuarantee' must be at-least-once or exactly-once, "
                              f"got {opts['deliveryGuarantee']!r}")
        sink_id = (opts.get("sinkId") or "").strip() or None
        batch_id = _int(opts, "batchId")
        if delivery == EXACTLY_ONCE and not streaming and (sink_id is None or batch_id is None):
            raise OptionError("an exactly-once batch write needs the options 'sinkId' and 'batchId' (a rerun with "
                              "the same sinkId and a batchId not above the last committed one stores nothing)")
        if streaming and batch_id is not None:
            raise OptionError("option 'batchId' is for batch writes; a stream numbers its micro-batches itself")
        return cls(
            name_server=_required(opts, "nameServer"),
            topic=(opts.get("topic") or "").strip() or None,
            delivery=delivery,
            sink_id=sink_id,
            batch_id=batch_id,
            producer_group=opts["producerGroup"],
            timeout=(_int(opts, "sendTimeoutMs", 1) or 10_000) / 1000.0,
            credentials=_credentials(opts),
            failover_wait=(_int(opts, "failoverWaitMs", 0) or 0) / 1000.0,
        )


@dataclass(frozen=True, slots=True)
class StoreOptions:
    path: str
    topics: tuple[str, ...] | None
    include_system_topics: bool
    broker_name: str | None
    max_bytes_per_partition: int | None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> StoreOptions:
        opts = _canonical(options, STORE_OPTIONS, "rocketmq-store")
        raw_topics = (opts.get("topic") or "").strip()
        return cls(
            path=_required(opts, "path"),
            topics=_topics(raw_topics) if raw_topics else None,
            include_system_topics=_bool(opts, "includeSystemTopics"),
            broker_name=(opts.get("brokerName") or "").strip() or None,
            max_bytes_per_partition=_int(opts, "maxBytesPerPartition", 1),
        )
