"""Lets PySpark find ``format("rocketmq")`` without registration (it imports ``pyspark_*`` modules)."""

from rocketq.spark.source import RocketMQDataSource as DefaultSource

__all__ = ["DefaultSource"]
