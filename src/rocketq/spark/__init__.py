"""PySpark connector: the ``rocketmq`` source/sink and the ``rocketmq-store`` commit-log reader.

Needs the ``[spark]`` extra (``pip install 'rocketq[spark]'``: pyspark 4.3, pyarrow). Importing this package
does not import pyspark; ``register(spark)`` and the data-source classes do. Both formats are also found
without registration, through the top-level modules ``pyspark_rocketq`` and ``pyspark_rocketq_store``
(PySpark looks up ``pyspark_*`` modules that define ``DefaultSource``).

::

    from rocketq.spark import register
    register(spark)
    df = (spark.read.format("rocketmq").option("nameServer", "127.0.0.1:9876").option("topic", "Orders")
          .load())

See ``docs/spark.md`` for options, the read schema and the delivery guarantees.
"""

from __future__ import annotations

from typing import Any

from rocketq.spark._options import SINK_OPTIONS, SOURCE_OPTIONS, STORE_OPTIONS, OptionError
from rocketq.spark._schema import READ_COLUMNS, READ_SCHEMA_DDL

FORMAT = "rocketmq"
STORE_FORMAT = "rocketmq-store"

__all__ = [
    "FORMAT",
    "READ_COLUMNS",
    "READ_SCHEMA_DDL",
    "SINK_OPTIONS",
    "SOURCE_OPTIONS",
    "STORE_FORMAT",
    "STORE_OPTIONS",
    "OptionError",
    "RocketMQDataSource",
    "RocketMQStoreDataSource",
    "register",
]


def register(spark: Any) -> None:
    """Register both formats with a SparkSession (optional: they are also discovered automatically)."""
    from rocketq.spark.source import RocketMQDataSource
    from rocketq.spark.store_reader import RocketMQStoreDataSource

    spark.dataSource.register(RocketMQDataSource)
    spark.dataSource.register(RocketMQStoreDataSource)


def __getattr__(name: str) -> Any:
    if name == "RocketMQDataSource":
        from rocketq.spark.source import RocketMQDataSource

        return RocketMQDataSource
    if name == "RocketMQStoreDataSource":
        from rocketq.spark.store_reader import RocketMQStoreDataSource

        return RocketMQStoreDataSource
    raise AttributeError(f"module 'rocketq.spark' has no attribute {name!r}")
