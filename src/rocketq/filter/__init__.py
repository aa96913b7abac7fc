"""Message filtering: tag subscriptions (``TAG``) and the SQL92 property filter (``SQL92``).

Pure functions and immutable objects only: no I/O, no asyncio.
"""

from rocketq.filter.sql92 import FilterEvaluationError, FilterSyntaxError, SqlFilter, compile_sql92
from rocketq.filter.tags import SUB_ALL, TagExpression, java_string_hash, tags_code

__all__ = [
    "SUB_ALL",
    "FilterEvaluationError",
    "FilterSyntaxError",
    "SqlFilter",
    "TagExpression",
    "compile_sql92",
    "java_string_hash",
    "tags_code",
]
