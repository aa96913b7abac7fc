"""Test helpers for applications and for rocketq's own suite: an in-process name server + broker.

``EmbeddedCluster`` needs no JVM and no container; it runs in the caller's event loop::

    from rocketq.client import Message, Producer
    from rocketq.testing import EmbeddedCluster

    async with EmbeddedCluster(tmp_path) as cluster:
        async with Producer("pg", namesrv_addr=cluster.namesrv_addr) as producer:
            result = await producer.send(Message("Orders", b"hello"))

``BackgroundCluster`` runs one on its own loop in a background thread (``with BackgroundCluster() as c:``),
for blocking code. The pytest plugin ``rocketq.testing.pytest_plugin``, enabled by installing rocketq,
provides it as the ``rocketq_cluster`` fixture.
"""

from rocketq.testing.background import BackgroundCluster
from rocketq.testing.cluster import EmbeddedCluster

__all__ = ["BackgroundCluster", "EmbeddedCluster"]
