"""Telemetry: the client's settings, merged with the server's, and the channel back to the client.

On a ``settings`` command (proxy ``ClientActivity.processAndWriteClientSettings``, rocketmq-5x-grpc.md §3.2):
a producer is registered as a producer of each publishing topic (producer group = topic name, so the
transaction check of its half messages reaches it); a consumer as a member of its group. The reply on the
same stream is ``status OK`` and the merged settings: the producer's back-off (3 attempts, 10 ms … 1 s ×2),
``max_body_size`` = maxMessageSize, ``validate_message_type``; a consumer's batch size 32, long-polling
timeout 20 s, ``fifo`` = the group's consumeMessageOrderly, back-off = the group's retry policy with
``max_attempts`` = retryMaxTimes + 1.
"""

from __future__ import annotations

from google.protobuf import duration_pb2  # type: ignore[import-untyped]  # protobuf ships no stubs

from rocketq.broker.context import BrokerContext
from rocketq.broker.managers.subscription_manager import SubscriptionGroupConfig
from rocketq.grpc.clients import GrpcClient
from rocketq.grpc.names import group_of, topic_of
from rocketq.grpc.proto import messaging_types_pb2 as pb
from rocketq.grpc.status import Code, GrpcRefusal
from rocketq.protocol.bodies import ConsumerData, SubscriptionData

PRODUCER_MAX_ATTEMPTS = 3
PRODUCER_BACKOFF_INITIAL_MS = 10
PRODUCER_BACKOFF_MAX_MS = 1000
PRODUCER_BACKOFF_MULTIPLIER = 2
CONSUMER_BATCH_SIZE = 32
CONSUMER_LONG_POLLING_MS = 20_000
CONSUMER_TYPES = (pb.PUSH_CONSUMER, pb.SIMPLE_CONSUMER)


def duration(ms: int) -> duration_pb2.Duration:
    return duration_pb2.Duration(seconds=ms // 1000, nanos=(ms % 1000) * 1_000_000)


def duration_ms(d: duration_pb2.Duration) -> int:
    return int(d.seconds) * 1000 + int(d.nanos) // 1_000_000


def backoff_of(group: SubscriptionGroupConfig) -> pb.RetryPolicy:
    """The group's retry policy as a 5.x back-off policy."""
    policy = group.retry_policy
    out = pb.RetryPolicy(max_attempts=group.max_delivery_attempts)
    if policy.type == "EXPONENTIAL":
        out.exponential_backoff.CopyFrom(pb.ExponentialBackoff(
            initial=duration(policy.initial_ms), max=duration(policy.max_ms), multiplier=float(policy.multiplier)
        ))  # fmt: skip
    else:
        out.customized_backoff.CopyFrom(pb.CustomizedBackoff(next=[duration(ms) for ms in policy.next_ms]))
    return out


def consume_type(client_type: int) -> str:
    return "CONSUME_PASSIVELY" if client_type == pb.PUSH_CONSUMER else "CONSUME_ACTIVELY"


def filter_of(expression: pb.FilterExpression) -> tuple[str, str]:
    """(type, expression) as the broker names them: SQL92 for SQL, TAG for anything else (proxy's rule)."""
    kind = "SQL92" if expression.type == pb.SQL else "TAG"
    return kind, expression.expression or "*"


def subscriptions_of(sub: pb.Subscription) -> list[SubscriptionData]:
    out = []
    for entry in sub.subscriptions:
        kind, expr = filter_of(entry.expression)
        out.append(SubscriptionData.of(topic_of(entry.topic), expr, kind))
    return out


class SettingsService:
    def __init__(self, ctx: BrokerContext, *, validate_message_type: bool = True) -> None:
        self._ctx = ctx
        self.validate_message_type = validate_message_type

    def register(self, client: GrpcClient, settings: pb.Settings, *, replace_subscriptions: bool = True) -> None:
        """Register the client with the broker's tables as the settings say; ``GrpcRefusal`` for a bad one."""
        ctx = self._ctx
        conn = client.conn
        if settings.HasField("publishing"):
            topics = [topic_of(t) for t in settings.publishing.topics]
            for topic in client.topics:
                if topic not in topics:
                    ctx.producers.unregister(topic, client.client_id)
            for topic in topics:
                ctx.producers.register(conn, client.client_id, topic)
            client.topics = topics
        elif settings.HasField("subscription"):
            sub = settings.subscription
            group = group_of(sub.group)
            if ctx.groups.find_or_create(group) is None:
                raise GrpcRefusal(Code.CONSUMER_GROUP_NOT_FOUND, f"consumer group not found: {group}")
            if replace_subscriptions or client.group is None:
                subs = subscriptions_of(sub)
            else:
                info = ctx.consumers.get(group)
                subs = list(info.subscriptions.values()) if info is not None else subscriptions_of(sub)
            ctx.consumers.register(conn, client.client_id, ConsumerData(
                group, consume_type(settings.client_type), "CLUSTERING", "CONSUME_FROM_LAST_OFFSET", subs,
            ))  # fmt: skip
            client.group = group
        else:
            raise GrpcRefusal(Code.BAD_REQUEST, "there is no publishing or subscription data in settings")
        client.settings = settings

    def unregister(self, client: GrpcClient) -> None:
        for topic in client.topics:
            self._ctx.producers.unregister(topic, client.client_id)
        if client.group is not None:
            self._ctx.consumers.unregister(client.group, client.client_id)

    def merged(self, settings: pb.Settings) -> pb.Settings:
        """The settings the server answers with: the client's own, completed with the server's values."""
        out = pb.Settings()
        out.CopyFrom(settings)
        if settings.HasField("publishing"):
            out.backoff_policy.CopyFrom(pb.RetryPolicy(
                max_attempts=PRODUCER_MAX_ATTEMPTS,
                exponential_backoff=pb.ExponentialBackoff(
                    initial=duration(PRODUCER_BACKOFF_INITIAL_MS), max=duration(PRODUCER_BACKOFF_MAX_MS),
                    multiplier=float(PRODUCER_BACKOFF_MULTIPLIER),
                ),
            ))  # fmt: skip
            out.publishing.max_body_size = self._ctx.config.maxMessageSize
            out.publishing.validate_message_type = self.validate_message_type
        elif settings.HasField("subscription"):
            group = self._ctx.groups.find_or_create(group_of(settings.subscription.group))
            if group is None:
                raise GrpcRefusal(Code.CONSUMER_GROUP_NOT_FOUND, "consumer group not found")
            out.subscription.receive_batch_size = CONSUMER_BATCH_SIZE
            out.subscription.long_polling_timeout.CopyFrom(duration(CONSUMER_LONG_POLLING_MS))
            out.subscription.fifo = group.consume_message_orderly
            out.backoff_policy.CopyFrom(backoff_of(group))
        out.metric.CopyFrom(pb.Metric(on=False))
        return out
