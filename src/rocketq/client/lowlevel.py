"""The client SDK's wire layer, for code that builds on it (the Spark connector, tools, benchmarks).

``rocketq.client`` offers producers and consumers with their policies (retries, rebalance, offsets). This
module offers the pieces they are made of, as ``trio.lowlevel`` does for trio: use them when the high-level
objects do not fit, and accept that they do less for you.

* ``MQClientAPI`` — one method per request code (Java ``MQClientAPIImpl``), no policy: it builds the request
  as a Java 4.9 client does, sends it over a ``RemotingClient`` and turns an error answer into a
  ``rocketq.errors.BrokerError`` (``call`` does the same for any request code). Name-server calls move on to
  the next name server when one cannot be reached.
* ``RemotingClient`` — the connections ``MQClientAPI`` sends over (one per address, opened on first use);
  ``await close()`` when done. For a broker with ACL on, give it ``before_request=SessionCredentials(ak,
  sk).sign`` and every request it sends is signed.
* ``RawPullResult`` — a pull answer before decoding: status, offsets, and the body of records.
* ``RouteCache`` — routes by topic and broker addresses by broker name, the tables ``ClientInstance`` keeps:
  the one place that decides which address serves a broker name. It does no I/O; fetch routes with
  ``MQClientAPI.get_topic_route`` and hand them in.
* Route helpers: the route classes of ``rocketq.protocol.route``, ``to_publish_info`` (the queues a producer
  may send to), ``to_subscribe_info`` (the queues a consumer may read), ``with_default_queue_nums`` (a
  route shaped for an unknown topic, from the ``TBW102`` route), ``MASTER_ID``.
* ``UniqIdGenerator`` — message ids (``UNIQ_KEY``) laid out like Java's ``MessageClientIDSetter``; ``id_bytes``
  checks that a text is a message id (client or offset id: 32 hex digits, 56 for IPv6) and says what is wrong.
* ``check_message`` — the checks a producer makes before sending (topic name, forbidden topics, body size).

Example: the master address of every broker serving a topic::

    from rocketq.client.lowlevel import MQClientAPI, RemotingClient, RouteCache

    remoting = RemotingClient()
    api = MQClientAPI(remoting, ["127.0.0.1:9876"])
    routes = RouteCache()
    route = await api.get_topic_route("Orders", timeout=3.0)
    routes.put("Orders", route)
    masters = {bd.broker_name: routes.master_addr(bd.broker_name) for bd in route.broker_datas}
    await remoting.close()
"""

from rocketq.client._api import MQClientAPI, RawPullResult
from rocketq.client._route import TopicPublishInfo, to_publish_info
from rocketq.client._route_cache import RouteCache
from rocketq.client._uniq_id import UniqIdGenerator, id_bytes
from rocketq.client._validators import check_message
from rocketq.protocol.route import (
    MASTER_ID,
    BrokerData,
    QueueData,
    TopicRouteData,
    to_subscribe_info,
    with_default_queue_nums,
)
from rocketq.remoting.client import RemotingClient

__all__ = [
    "MASTER_ID",
    "BrokerData",
    "MQClientAPI",
    "QueueData",
    "RawPullResult",
    "RemotingClient",
    "RouteCache",
    "TopicPublishInfo",
    "TopicRouteData",
    "UniqIdGenerator",
    "check_message",
    "id_bytes",
    "to_publish_info",
    "to_subscribe_info",
    "with_default_queue_nums",
]
