"""The store's MessageFilter for a subscription: tag hash codes on the consume queue, SQL92 on properties."""

from __future__ import annotations

from rocketq.protocol.bodies import SUB_ALL, SubscriptionData
from rocketq.protocol.message import decode_record


class FilterBuildError(ValueError):
    pass


class TagCodeFilter:
    """Matches consume-queue entries whose tags code is in the subscription's code set."""

    __slots__ = ("codes",)

    def __init__(self, codes: frozenset[int]) -> None:
        self.codes = codes

    def is_matched_by_consume_queue(self, tags_code: int) -> bool:
        return tags_code in self.codes

    def is_matched_by_commit_log(self, record: memoryview) -> bool:
        return True


class SqlFilter:
    """Evaluates a compiled SQL92 expression over the message's properties."""

    __slots__ = ("expr",)

    def __init__(self, expr: object) -> None:
        self.expr = expr

    def is_matched_by_consume_queue(self, tags_code: int) -> bool:
        return True

    def is_matched_by_commit_log(self, record: memoryview) -> bool:
        props = decode_record(record, with_body=False).properties
        return bool(self.expr.matches(props))  # type: ignore[attr-defined]


def build_filter(sub: SubscriptionData) -> TagCodeFilter | SqlFilter | None:
    if sub.expression_type == "TAG" or not sub.expression_type:
        if not sub.sub_string or sub.sub_string.strip() == SUB_ALL or not sub.code_set:
            return None
        return TagCodeFilter(frozenset(sub.code_set))
    if sub.expression_type == "SQL92":
        from rocketq.filter.sql92 import compile_sql92  # lazily: only SQL subscribers pay for it

        try:
            return SqlFilter(compile_sql92(sub.sub_string))
        except ValueError as exc:
            raise FilterBuildError(f"the SQL92 expression is invalid: {exc}") from exc
    raise FilterBuildError(f"unknown expression type {sub.expression_type!r}")
