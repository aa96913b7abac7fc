"""rocketq client SDK: producers and consumers speaking the RocketMQ 4.x remoting protocol.

Asyncio-native (``Producer``, ``PushConsumer``, ``LitePullConsumer``, ``SimpleConsumer`` — 5.x POP —,
``AdminClient``); ``rocketq.client.sync`` wraps them for blocking code. See ``docs/client.md``.
"""

from rocketq.client._pop_push import PopPushConsumer
from rocketq.client.admin import AdminClient
from rocketq.client.allocate import (
    AllocateMachineRoomNearby,
    AllocateMessageQueueAveragely,
    AllocateMessageQueueAveragelyByCircle,
    AllocateMessageQueueByConfig,
    AllocateMessageQueueByMachineRoom,
    AllocateMessageQueueConsistentHash,
    AllocateMessageQueueStrategy,
)
from rocketq.client.config import ClientConfig, ClientTls
from rocketq.client.credentials import SessionCredentials
from rocketq.client.errors import (
    BrokerNotFoundError,
    ClientNotStartedError,
    InvalidMessageError,
    InvalidMessageIdError,
    InvalidOffsetError,
    NoRouteError,
    QueueNotAssignedError,
    SendFailedError,
    SendTimeoutError,
)
from rocketq.client.lite_pull_consumer import LitePullConsumer
from rocketq.client.message import Message, MessageExt, MessageQueue, PullResult, PullStatus, SendResult, SendStatus
from rocketq.client.offset_store import LocalFileOffsetStore, OffsetStore, ReadOffsetType, RemoteBrokerOffsetStore
from rocketq.client.process_queue import ProcessQueue
from rocketq.client.producer import Producer
from rocketq.client.push_consumer import (
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    PushConsumer,
)
from rocketq.client.selectors import MessageQueueSelector, select_by_hash, select_by_random
from rocketq.client.simple_consumer import MessageView, SimpleConsumer
from rocketq.client.subscription import ConsumeFromWhere, ExpressionType, MessageModel, MessageSelector
from rocketq.client.transaction_producer import (
    LocalTransactionState,
    TransactionListener,
    TransactionProducer,
    TransactionSendResult,
)

__all__ = [
    "AdminClient",
    "AllocateMachineRoomNearby",
    "AllocateMessageQueueAveragely",
    "AllocateMessageQueueAveragelyByCircle",
    "AllocateMessageQueueByConfig",
    "AllocateMessageQueueByMachineRoom",
    "AllocateMessageQueueConsistentHash",
    "AllocateMessageQueueStrategy",
    "BrokerNotFoundError",
    "ClientConfig",
    "ClientNotStartedError",
    "ClientTls",
    "ConsumeConcurrentlyContext",
    "ConsumeConcurrentlyStatus",
    "ConsumeFromWhere",
    "ConsumeOrderlyContext",
    "ConsumeOrderlyStatus",
    "ExpressionType",
    "InvalidMessageError",
    "InvalidMessageIdError",
    "InvalidOffsetError",
    "LitePullConsumer",
    "LocalFileOffsetStore",
    "LocalTransactionState",
    "Message",
    "MessageExt",
    "MessageModel",
    "MessageQueue",
    "MessageQueueSelector",
    "MessageSelector",
    "MessageView",
    "NoRouteError",
    "OffsetStore",
    "PopPushConsumer",
    "ProcessQueue",
    "Producer",
    "PullResult",
    "PullStatus",
    "PushConsumer",
    "QueueNotAssignedError",
    "ReadOffsetType",
    "RemoteBrokerOffsetStore",
    "SendFailedError",
    "SendResult",
    "SendStatus",
    "SendTimeoutError",
    "SessionCredentials",
    "SimpleConsumer",
    "TransactionListener",
    "TransactionProducer",
    "TransactionSendResult",
    "select_by_hash",
    "select_by_random",
]
