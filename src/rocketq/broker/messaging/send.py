"""Sending, transport-neutral: the rules of Java's SendMessageProcessor without its remoting.

``send`` stores one send (single message or batch) and returns a ``SendOutcome``: permission and role,
topic-name rules, auto-creation (``createTopicInSendMessageMethod``), queue-id checks, %RETRY% sends beyond
the group's maximum rerouted to the dead-letter queue (``handleRetryAndDLQ``), transactional half messages
and delivery times (``MessageSemantics``). It never answers: the front end (remoting or gRPC) writes the
outcome, after ``PutAck`` says the put may be answered.

The fast path is the plain run: ``prepare_plain`` turns a send that needs none of those rules — a single
message with no transaction, delay or delivery time, to an existing writable topic that is not a retry topic,
an explicit queue, properties text stored as it came — into a store ``PlainMessage``, and ``put_plain_run``
stores consecutive ones with one store call (one lock, one clock read, one stats update). Both paths write
the same records (tests pin them together).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from rocketq.broker.context import BrokerContext
from rocketq.broker.managers.topic_manager import DLQ_PREFIX, NOT_ALLOWED_SEND_TOPICS, RETRY_PREFIX, topic_name_error
from rocketq.broker.messaging.plainsend import PlainRules, plain_message
from rocketq.broker.messaging.semantics import SPECIAL_PROPERTIES, MessageSemantics
from rocketq.broker.services.requeue import restore
from rocketq.codes import VERSION_V3_4_9, ResponseCode
from rocketq.protocol.bodies import PERM_READ, PERM_WRITE
from rocketq.protocol.headers import ConsumerSendMsgBackRequestHeader, SendMessageRequestHeader
from rocketq.protocol.message import (
    PROP_CLUSTER,
    PROP_DELAY,
    PROP_ORIGIN_MESSAGE_ID,
    PROP_RETRY_TOPIC,
    PROP_TRAN_MSG,
    PROP_WAIT,
    SYSFLAG_TX_MASK,
    Host,
    canonical_properties_text,
    decode_properties,
)
from rocketq.protocol.topics import SINK_COMMIT_TOPIC, SINK_STAGING_TOPIC
from rocketq.store import PutMessageResult, PutMessageStatus, StoreBatch, StoreMessage
from rocketq.store.message import PlainMessage

_SUCCESS = int(ResponseCode.SUCCESS)
#: The exactly-once sink's own topics: only SINK_STAGE_MESSAGES and the broker's commits write there (a forged
#: commit marker would move a sink's watermark on the next master).
_SINK_TOPICS = frozenset({SINK_STAGING_TOPIC, SINK_COMMIT_TOPIC})

#: store put status → (response code, remark), as Java's SendMessageProcessor.handlePutMessageResult
PUT_STATUS_TO_CODE: dict[str, tuple[int, str | None]] = {
    "PUT_OK": (ResponseCode.SUCCESS, None),
    "FLUSH_DISK_TIMEOUT": (ResponseCode.FLUSH_DISK_TIMEOUT, None),
    "FLUSH_SLAVE_TIMEOUT": (ResponseCode.FLUSH_SLAVE_TIMEOUT, None),
    "SLAVE_NOT_AVAILABLE": (ResponseCode.SLAVE_NOT_AVAILABLE, None),
    "CREATE_MAPPED_FILE_FAILED": (ResponseCode.SYSTEM_ERROR, "create mapped file failed, server is busy or broken."),
    # the store's (and Java's) spelling of the same status
    "CREATE_MAPEDFILE_FAILED": (ResponseCode.SYSTEM_ERROR, "create mapped file failed, server is busy or broken."),
    "MESSAGE_ILLEGAL": (ResponseCode.MESSAGE_ILLEGAL, "the message is illegal, maybe msg body or properties too long"),
    "PROPERTIES_SIZE_EXCEEDED": (ResponseCode.MESSAGE_ILLEGAL, "the message properties are too long"),
    "SERVICE_NOT_AVAILABLE": (ResponseCode.SERVICE_NOT_AVAILABLE, None),  # see service_not_available_remark
    "OS_PAGECACHE_BUSY": (ResponseCode.SYSTEM_ERROR, "[PC_SYNCHRONIZED]broker busy, start flow control for a while"),
}
# The same table keyed by the enum member: no ``.name`` descriptor call per message.
_CODE_OF_STATUS = {s: PUT_STATUS_TO_CODE[s.name] for s in PutMessageStatus if s.name in PUT_STATUS_TO_CODE}


def service_not_available_remark(disk_util: str) -> str:
    """Java's remark for SERVICE_NOT_AVAILABLE, with the store's used ratios (``MessageStore.disk_util``)."""
    return (
        "service not available now. It may be caused by one of the following reasons: "
        f"the broker's disk is full [{disk_util}], messages are put to the slave, message store has been shut down, "
        "etc."
    )


def code_of_put_status(status: object, disk_util: Callable[[], str] | None = None) -> tuple[int, str | None]:
    """The response code and remark a put status is answered with (``disk_util`` fills the ratios into the
    SERVICE_NOT_AVAILABLE remark, as Java does)."""
    found: tuple[int, str | None] | None = _CODE_OF_STATUS.get(status)  # type: ignore[call-overload]
    if found is not None:
        if found[0] == ResponseCode.SERVICE_NOT_AVAILABLE:
            return found[0], service_not_available_remark(disk_util() if disk_util is not None else "")
        return found
    name = getattr(status, "name", str(status))
    return PUT_STATUS_TO_CODE.get(name, (ResponseCode.SYSTEM_ERROR, f"UNKNOWN_ERROR {name}"))


#: codes whose answer carries the message id and offsets (the message is stored)
STORED_CODES = frozenset(
    {
        ResponseCode.SUCCESS,
        ResponseCode.FLUSH_DISK_TIMEOUT,
        ResponseCode.FLUSH_SLAVE_TIMEOUT,
        ResponseCode.SLAVE_NOT_AVAILABLE,
    }
)


@dataclass(slots=True)
class SendOutcome:
    """A send's outcome. ``msg_id`` is set when the message was stored; then ``end_offset`` is where its
    bytes end in the commit log (what the flush and replication waits wait for)."""

    code: int
    remark: str | None = None
    msg_id: str | None = None
    queue_id: int = 0
    queue_offset: int = 0
    end_offset: int = 0
    #: the message's ``WAIT`` property was not ``false``: a SYNC_FLUSH answer waits for the flush
    wait_store: bool = True
    #: a topic this send created: it is answered once the name servers know it (Java registers first)
    created_topic: str | None = None
    #: the topic the message was stored in (a DLQ for a %RETRY% send past its maximum)
    topic: str = ""

    @property
    def stored(self) -> bool:
        return self.msg_id is not None

    @property
    def ok(self) -> bool:
        return self.code == _SUCCESS


@dataclass(slots=True)
class SendTarget:
    """Where a send that passed ``SendService.check_target`` goes."""

    queue_id: int
    #: the topic this send created (it is answered once the name servers know it)
    created: str | None = None


def refused(code: int, remark: str) -> SendOutcome:
    return SendOutcome(code, remark)


# A send naming one of these is not stored in a run: the semantics rewrite it, the store rewrites a delay level,
# and the broker's CLUSTER replaces the client's (``send`` re-encodes the properties then).
_NOT_IN_A_RUN = (*SPECIAL_PROPERTIES, PROP_DELAY, PROP_CLUSTER)
# Java 4.9.7 stores a plain single message without its WAIT property (it only tells the broker whether to wait
# for the flush); a message the store encodes again (a delay level, a half message) keeps it there too.
_NOT_STORED = (PROP_WAIT,)


def _waits_for_store(properties: str) -> bool:
    """True when the properties text surely has no ``WAIT`` other than ``true`` (a run's answers all wait);
    an unusual text (``WAIT`` found after a key ending in it) says False, and the send goes the general way."""
    i = properties.find(_WAIT_KEY)
    if i < 0:
        return True
    return (i == 0 or properties[i - 1] == "\x02") and properties.startswith("true", i + len(_WAIT_KEY))


_WAIT_KEY = f"{PROP_WAIT}\x01"
# Topic names already validated (valid and sendable); bounded so random names cannot grow it forever.
_VALID_TOPICS_MAX = 65536

#: a request body as the transport hands it over
Body = bytes | bytearray | memoryview
#: what ``put_plain_run`` gives per message: (commit-log offset, queue offset, size) when stored, else the status
PlainPutResult = tuple[int, int, int] | PutMessageStatus


class SendService:
    def __init__(self, ctx: BrokerContext, semantics: MessageSemantics) -> None:
        self._ctx = ctx
        self._config = ctx.config
        self._semantics = semantics
        self._valid_topics: set[str] = set()
        #: valid, sendable topics that are not retry topics: their plain sends may take the run
        self._plain_topics: set[str] = set()
        #: topics created by a send whose registration with the name servers is still under way
        self._registering: set[str] = set()
        self._cluster_name = ""
        self._cluster_bytes = b""
        #: the topic table itself: the run path reads it directly (one dict lookup per send)
        self._topic_table = ctx.topics.table
        self.runs_open = False
        self._runs_wait = False
        self._open_runs()
        ctx.role.on_change(lambda before, after: self._open_runs())
        ctx.config_listeners.append(self._open_runs)  # the broker's permission may change at run time

    # ------------------------------------------------------------------------------------- plain runs

    def _open_runs(self) -> None:
        """Runs are for a writable master; the answer is kept in ``runs_open`` and worked out again when the
        role or the configuration changes. When answers wait (SYNC_FLUSH, SYNC_MASTER) the processor waits once
        for a whole run's end, and sends whose ``WAIT`` is not true stay out of runs (they are not awaited)."""
        self.runs_open = self._ctx.writable()
        self._runs_wait = not self._ctx.put_ack.immediate

    @property
    def _cluster_property(self) -> bytes:
        """``CLUSTER`` as the broker adds it to every stored message's properties (encoded once per name)."""
        name = self._config.brokerClusterName
        if name != self._cluster_name:
            self._cluster_name = name
            self._cluster_bytes = f"{PROP_CLUSTER}\x01{name}\x02".encode()
        return self._cluster_bytes

    def plain_rules(self) -> PlainRules:
        """What a send must pass to be stored in a run (``plainsend.plain_message``), read now: the send queue
        reads them once per drain, so a topic, role or configuration change applies from the next one."""
        return (
            self._plain_topics, self._topic_table, self._config.maxMessageSize,
            _waits_for_store if self._runs_wait else None, _NOT_IN_A_RUN, self._cluster_property, _NOT_STORED,
            SYSFLAG_TX_MASK, PERM_WRITE,
        )  # fmt: skip

    def prepare_plain(
        self, header: SendMessageRequestHeader, body: Body, born_host: Host, rules: PlainRules | None = None
    ) -> PlainMessage | None:
        """The send as a run's message when it is plain, else None (``send`` takes it). ``rules``: the
        ``plain_rules`` the caller already read (the send queue, once per drain); read now when not given."""
        return plain_message(header, body, born_host, self.plain_rules() if rules is None else rules)

    def put_plain_run(self, run: list[PlainMessage]) -> list[PlainPutResult]:
        """Store a run of plain messages with one store call."""
        return self._ctx.store.put_plain_messages(run, self._ctx.store_host)

    # ------------------------------------------------------------------------------------ general path

    def _remember_valid_topic(self, topic: str) -> None:
        valid = self._valid_topics
        if len(valid) >= _VALID_TOPICS_MAX:
            valid.clear()
            self._plain_topics.clear()
        valid.add(topic)
        if not topic.startswith(RETRY_PREFIX) and topic not in self._registering:
            self._plain_topics.add(topic)

    def route_registered(self, topic: str) -> None:
        """The name servers know ``topic`` now: its plain sends may take the run again."""
        self._registering.discard(topic)
        if topic in self._valid_topics and not topic.startswith(RETRY_PREFIX):
            self._plain_topics.add(topic)

    def check_target(self, header: SendMessageRequestHeader, *, remote: str) -> SendTarget | SendOutcome:
        """Java's ``msgCheck``: may this broker take a send to ``header.topic`` (created here if need be), and on
        which queue. Sends and replies (``ReplyService``) both pass through it; a refusal is a ``SendOutcome``."""
        ctx = self._ctx
        cfg = self._config
        if not cfg.brokerPermission & PERM_WRITE:
            return refused(ResponseCode.NO_PERMISSION, f"the broker[{cfg.brokerIP1}] sending message is forbidden")
        if ctx.role.is_slave:
            # Java's store refuses the put (checkStoreStatus) and the answer carries that status's remark
            return refused(ResponseCode.SERVICE_NOT_AVAILABLE, service_not_available_remark(ctx.store.disk_util()))
        topic = header.topic
        if topic not in self._valid_topics:  # the name rules are a pure function of the name: checked once
            error = topic_name_error(topic)
            if error is not None:
                return refused(ResponseCode.SYSTEM_ERROR, error)
            if topic in NOT_ALLOWED_SEND_TOPICS or topic in _SINK_TOPICS:
                return refused(ResponseCode.NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden.")
            self._remember_valid_topic(topic)
        topics = ctx.topics
        tc = topics.get(topic)
        created: str | None = None
        if tc is None:
            if topic.startswith(RETRY_PREFIX):
                group_cfg = ctx.groups.find_or_create(topic[len(RETRY_PREFIX) :])
                nums = group_cfg.retry_queue_nums if group_cfg else 1
                tc = topics.create_system_if_absent(topic, nums)
                ctx.registrar.kick()
            else:
                tc = topics.create_in_send(topic, header.default_topic, header.default_topic_queue_nums)
                if tc is not None:
                    created = topic
                    self._registering.add(topic)
                    self._plain_topics.discard(topic)
            if tc is None:
                return refused(
                    ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please! (auto-create is off)"
                )
        if not tc.perm & PERM_WRITE:
            return refused(ResponseCode.NO_PERMISSION, f"the topic[{topic}] sending message is forbidden")
        queue_id = header.queue_id
        id_valid = max(tc.read_queue_nums, tc.write_queue_nums)
        if queue_id >= id_valid:
            return refused(
                ResponseCode.SYSTEM_ERROR, f"request queueId[{queue_id}] is illegal, topic: {tc} producer: {remote}"
            )
        if queue_id < 0:
            queue_id = random.randrange(max(1, tc.write_queue_nums))
        return SendTarget(queue_id, created)

    def send(
        self, header: SendMessageRequestHeader, body: Body, born_host: Host, *, client_version: int, remote: str
    ) -> SendOutcome:
        """Store one send (a single message, or a batch when ``header.batch``)."""
        ctx = self._ctx
        cfg = self._config
        target = self.check_target(header, remote=remote)
        if isinstance(target, SendOutcome):
            return target
        topic, queue_id, created = header.topic, target.queue_id, target.created
        is_retry = topic.startswith(RETRY_PREFIX)
        topics = ctx.topics
        if len(body) > cfg.maxMessageSize:
            return refused(ResponseCode.MESSAGE_ILLEGAL, f"the message body size {len(body)} > {cfg.maxMessageSize}")
        properties_text = header.properties or ""
        properties = decode_properties(properties_text)
        reconsume_times = header.reconsume_times or 0
        # %RETRY% sends beyond the group's max go to the dead-letter queue (handleRetryAndDLQ).
        if is_retry:
            group = topic[len(RETRY_PREFIX) :]
            group_cfg = ctx.groups.find_or_create(group)
            if group_cfg is None:
                return refused(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {group}")
            max_times = group_cfg.retry_max_times
            if header.max_reconsume_times is not None and client_version > VERSION_V3_4_9:
                max_times = header.max_reconsume_times
            if reconsume_times >= max_times:
                # 5.1 labels this one with the producer group; the retry topic's own group is the one failing
                ctx.metrics.on_send_to_dlq(group, topic)
                topic = DLQ_PREFIX + group
                topics.create_system_if_absent(topic, 1, PERM_READ | PERM_WRITE)
                ctx.registrar.kick()
                queue_id = 0
        if header.batch:
            outcome = self._send_batch(header, body, born_host, topic, queue_id, properties)
        else:
            outcome = self._send_one(header, body, born_host, topic, queue_id, properties, properties_text,
                                     reconsume_times)  # fmt: skip
        outcome.created_topic = created
        return outcome

    def _send_one(
        self, header: SendMessageRequestHeader, body: Body, born_host: Host, topic: str, queue_id: int,
        properties: dict[str, str], properties_text: str, reconsume_times: int,
    ) -> SendOutcome:  # fmt: skip
        cluster = self._config.brokerClusterName
        wait_store = properties.get(PROP_WAIT) != "false"
        semantics = self._semantics
        plain = semantics.is_plain(properties)
        # The request's own text is stored when it encodes exactly what was decoded (what our clients and
        # Apache's send, Java's without the last separator); anything else is encoded again from the dict, as
        # Java always does. A plain message's WAIT only says whether to wait for the flush: Java does not store it.
        canonical = canonical_properties_text(properties_text, len(properties))
        if plain and PROP_WAIT in properties and not _delayed(properties):
            del properties[PROP_WAIT]  # as Java stores it (see _NOT_STORED)
            canonical = None
        stored_text = (
            f"{canonical}{PROP_CLUSTER}\x01{cluster}\x02"
            if canonical is not None and PROP_CLUSTER not in properties
            else None
        )
        properties[PROP_CLUSTER] = cluster
        msg = StoreMessage(
            topic=topic,
            queue_id=queue_id,
            body=body if type(body) is bytes else bytes(body),
            flag=header.flag,
            properties=properties,
            sys_flag=header.sys_flag,
            born_timestamp=header.born_timestamp,
            born_host=born_host,
            store_host=self._ctx.store_host,
            reconsume_times=reconsume_times,
            prepared_transaction_offset=0,
            tags_code=None,
        )
        if plain:
            msg.properties_str = stored_text
        else:
            msg = semantics.before_put(msg)  # rewrites the properties: the store encodes them itself
        result = self._ctx.store.put_message(msg)
        return _outcome(result, topic, queue_id, wait_store, self._ctx.store.disk_util)

    def _send_batch(
        self, header: SendMessageRequestHeader, body: Body, born_host: Host, topic: str, queue_id: int,
        batch_props: dict[str, str],
    ) -> SendOutcome:  # fmt: skip
        if topic.startswith(RETRY_PREFIX):
            return refused(ResponseCode.MESSAGE_ILLEGAL, "batch request does not support retry group")
        # the body goes to the store as it came: the store's batch encoder writes the records straight from it
        batch_props[PROP_CLUSTER] = self._config.brokerClusterName
        batch = StoreBatch(
            topic=topic,
            queue_id=queue_id,
            sys_flag=header.sys_flag,
            born_timestamp=header.born_timestamp,
            born_host=born_host,
            store_host=self._ctx.store_host,
            body=body if not isinstance(body, bytearray) else bytes(body),
            properties=batch_props,
        )
        result = self._ctx.store.put_messages(batch)
        # WAIT=false on the batch: answered without waiting for the flush, as Java's putMessages does
        return _outcome(result, topic, queue_id, batch_props.get(PROP_WAIT) != "false", self._ctx.store.disk_util)


def _delayed(properties: dict[str, str]) -> bool:
    """A delay level the store acts on (Java's ``getDelayTimeLevel() > 0``)."""
    try:
        return int(properties.get(PROP_DELAY) or 0) > 0
    except ValueError:
        return False


def _outcome(
    result: PutMessageResult, topic: str, queue_id: int, wait_store: bool, disk_util: Callable[[], str]
) -> SendOutcome:
    code, remark = code_of_put_status(result.status, disk_util)
    append = result.append_result
    if append is None or code not in STORED_CODES:
        return SendOutcome(code, remark)
    return SendOutcome(
        code, remark, append.msg_id, queue_id, append.logics_offset, append.wrote_offset + append.wrote_bytes,
        wait_store, None, topic,
    )  # fmt: skip


def send_back(
    ctx: BrokerContext, semantics: MessageSemantics, h: ConsumerSendMsgBackRequestHeader, *, client_version: int
) -> tuple[int, str | None]:
    """CONSUMER_SEND_MSG_BACK: a message its consumer failed goes to the group's retry topic with a delay
    level, or to its dead-letter queue once it has been retried the group's maximum (Java's
    ``SendMessageProcessor.asyncConsumerSendMsgBack``). Returns the answer's (code, remark)."""
    group_cfg = ctx.groups.find_or_create(h.group)
    if group_cfg is None:
        return ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {h.group}"
    if not ctx.config.brokerPermission & PERM_WRITE:
        return ResponseCode.NO_PERMISSION, "the broker sending message is forbidden"
    if group_cfg.retry_queue_nums <= 0:
        return ResponseCode.SUCCESS, None
    original = ctx.store.look_message_by_offset(h.offset)
    if original is None:
        return ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {h.offset}"
    props = dict(original.properties)
    props.setdefault(PROP_RETRY_TOPIC, original.topic)
    props.pop(PROP_TRAN_MSG, None)
    props[PROP_WAIT] = "false"  # Java's setWaitStoreMsgOK(false): it stays in the stored properties
    max_times = group_cfg.retry_max_times
    if h.max_reconsume_times is not None and client_version >= VERSION_V3_4_9:
        max_times = h.max_reconsume_times
    delay = h.delay_level
    if original.reconsume_times >= max_times or delay < 0:
        ctx.metrics.on_send_to_dlq(h.group, h.origin_topic or props[PROP_RETRY_TOPIC])  # 5.1: the header's
        topic = DLQ_PREFIX + h.group
        ctx.topics.create_system_if_absent(topic, 1, PERM_READ | PERM_WRITE)
        queue_id = 0
        props[PROP_DELAY] = "0"  # Java's setDelayTimeLevel(0): no delay, written down
    else:
        topic = RETRY_PREFIX + h.group
        ctx.topics.create_system_if_absent(topic, max(1, group_cfg.retry_queue_nums), PERM_READ | PERM_WRITE)
        queue_id = random.randrange(max(1, group_cfg.retry_queue_nums))
        if delay == 0:
            delay = 3 + original.reconsume_times
        props[PROP_DELAY] = str(delay)
    ctx.registrar.kick()
    # the first failed message's id: Java keeps an existing one unless it is blank (UtilAll.isBlank), else
    # takes the offset id of the message it looked up (the header's originMsgId is not used)
    if not props.get(PROP_ORIGIN_MESSAGE_ID, "").strip():
        props[PROP_ORIGIN_MESSAGE_ID] = original.offset_msg_id
    msg = restore(original, topic, queue_id, props, reconsume_times=original.reconsume_times + 1)
    result = ctx.store.put_message(semantics.before_put(msg))
    if result.status.name == "PUT_OK":
        ctx.metrics.on_send_back(props[PROP_RETRY_TOPIC], h.group)
        return ResponseCode.SUCCESS, None
    return ResponseCode.SYSTEM_ERROR, f"send back failed: {result.status.name}"
