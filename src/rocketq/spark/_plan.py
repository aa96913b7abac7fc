"""What PySpark hands a batch reader's ``read`` besides the partitions the reader planned."""

from __future__ import annotations

from pyspark.sql.datasource import InputPartition


def is_empty_plan(partition: InputPartition) -> bool:
    """PySpark 4.3 replaces an empty ``partitions()`` list by one ``InputPartition(None)``: a plan with no rows."""
    return type(partition) is InputPartition and partition.value is None
