"""Lets PySpark find ``format("rocketmq-store")`` without registration (it imports ``pyspark_*`` modules)."""

from rocketq.spark.store_reader import RocketMQStoreDataSource as DefaultSource

__all__ = ["DefaultSource"]
