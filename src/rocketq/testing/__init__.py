"""Test helpers for applications and for rocketq's own suite: an in-process name server + broker.

``EmbeddedCluster`` needs no JVM and no container::

    async with EmbeddedCluster(tmp_path) as cluster:
        producer = Producer("pg", namesrv=cluster.namesrv_addr)

The pytest plugin (``rocketq.testing.pytest_plugin``) provides the ``rocketq_cluster`` fixture.
"""

from rocketq.testing.cluster import EmbeddedCluster

__all__ = ["EmbeddedCluster"]
