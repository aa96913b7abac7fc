"""Administration client (the parts of Java ``DefaultMQAdminExt`` that ``mqadmin`` uses most).

::

    async with AdminClient(namesrv_addr="127.0.0.1:9876") as admin:
        await admin.create_topic("Orders", cluster="DefaultCluster", read_queue_nums=8, write_queue_nums=8)
        for q in await admin.consume_progress("order-service"):
            print(q.message_queue, q.lag)

Topic creation and deletion go to every master of a cluster (or one broker address); everything that needs a
broker finds it through the name server. Broker replies in fastjson's non-standard JSON (object map keys) are
understood.
"""

from __future__ import annotations

from rocketq.client.admin._base import mq_table
from rocketq.client.admin._types import (
    BrokerConsumeStats,
    BrokerInfo,
    ConnectionInfo,
    ConsumerConnection,
    GroupSummary,
    GroupTopicStats,
    PopInflight,
    QueueProgress,
    SubscriptionGroupInfo,
    TopicGroupStats,
    TopicQueueStatus,
)
from rocketq.client.admin.browse import BrowseAdmin
from rocketq.client.admin.clients import ClientsAdmin
from rocketq.client.admin.config import ConfigAdmin
from rocketq.client.admin.groups import GroupAdmin
from rocketq.client.admin.messages import MessageAdmin
from rocketq.client.admin.security import SecurityAdmin
from rocketq.client.admin.stats import StatsAdmin
from rocketq.client.admin.subscriptions import SubscriptionAdmin
from rocketq.client.admin.topics import TopicAdmin

__all__ = [
    "AdminClient",
    "BrokerConsumeStats",
    "BrokerInfo",
    "ConnectionInfo",
    "ConsumerConnection",
    "GroupSummary",
    "GroupTopicStats",
    "PopInflight",
    "QueueProgress",
    "SubscriptionGroupInfo",
    "TopicGroupStats",
    "TopicQueueStatus",
    "mq_table",
]


class AdminClient(
    TopicAdmin,
    SubscriptionAdmin,
    GroupAdmin,
    ClientsAdmin,
    MessageAdmin,
    BrowseAdmin,
    StatsAdmin,
    ConfigAdmin,
    SecurityAdmin,
):
    """The admin client: one class, its requests grouped by area in this package's modules (each a mixin over
    ``AdminBase``, which holds the connection and the cluster view they share)."""
