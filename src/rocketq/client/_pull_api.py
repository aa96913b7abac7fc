"""Pull requests and their results (Java ``PullAPIWrapper``).

``pull_kernel`` sends PULL_MESSAGE to the broker the last response suggested (master by default; the
COMMIT_OFFSET flag is cleared for a slave). ``process_pull_result`` decodes the records, drops messages whose
tag is not subscribed (the broker filters by hash code only), and stamps MIN_OFFSET / MAX_OFFSET.
"""

from __future__ import annotations

from rocketq.client._api import RawPullResult
from rocketq.client._instance import ClientInstance
from rocketq.client.errors import BrokerNotFoundError
from rocketq.client.message import MessageExt, PullResult, PullStatus, decode_body
from rocketq.protocol.bodies import MessageQueue, SubscriptionData
from rocketq.protocol.headers import PULL_FLAG_COMMIT_OFFSET, PullMessageRequestHeader
from rocketq.protocol.message import PROP_MAX_OFFSET, PROP_MIN_OFFSET
from rocketq.protocol.pullcodec import decode_messages
from rocketq.protocol.route import MASTER_ID


def build_pull_sys_flag(
    commit_offset: bool, suspend: bool, subscription: bool, class_filter: bool = False, lite_pull: bool = False
) -> int:
    """Java ``PullSysFlag.buildSysFlag``."""
    flag = 0
    if commit_offset:
        flag |= 0x1
    if suspend:
        flag |= 0x2
    if subscription:
        flag |= 0x4
    if class_filter:
        flag |= 0x8
    if lite_pull:
        flag |= 0x10
    return flag


class PullAPIWrapper:
    def __init__(self, instance: ClientInstance, consumer_group: str) -> None:
        self.instance = instance
        self.consumer_group = consumer_group
        self.pull_from_which_node: dict[MessageQueue, int] = {}

    async def pull_kernel(
        self,
        mq: MessageQueue,
        sub_expression: str | None,
        expression_type: str,
        sub_version: int,
        offset: int,
        max_nums: int,
        sys_flag: int,
        commit_offset: int,
        broker_suspend_max_ms: int,
        timeout: float,
    ) -> RawPullResult:
        broker_id = self.pull_from_which_node.get(mq, MASTER_ID)
        found = self.instance.find_broker_address_in_subscribe(mq.broker_name, broker_id, False)
        if found is None:
            await self.instance.update_topic_route(mq.topic)
            found = self.instance.find_broker_address_in_subscribe(mq.broker_name, broker_id, False)
        if found is None:
            raise BrokerNotFoundError(mq.broker_name)
        addr, slave = found
        if slave:
            sys_flag &= ~PULL_FLAG_COMMIT_OFFSET
        header = PullMessageRequestHeader(
            consumer_group=self.consumer_group,
            topic=mq.topic,
            queue_id=mq.queue_id,
            queue_offset=offset,
            max_msg_nums=max_nums,
            sys_flag=sys_flag,
            commit_offset=commit_offset,
            suspend_timeout_millis=broker_suspend_max_ms,
            subscription=sub_expression,
            sub_version=sub_version,
            expression_type=expression_type,
        )
        return await self.instance.api.pull_message(addr, header, mq.broker_name, timeout)

    def process_pull_result(self, mq: MessageQueue, raw: RawPullResult, sub: SubscriptionData) -> PullResult:
        header = raw.header
        self.pull_from_which_node[mq] = header.suggest_which_broker_id
        result = PullResult(
            raw.status, header.next_begin_offset, header.min_offset, header.max_offset, [],
            header.suggest_which_broker_id,
        )  # fmt: skip
        if raw.status is not PullStatus.FOUND:
            return result
        # One call per pull (compiled twin where built): records → MessageExt, MIN/MAX_OFFSET set on each.
        offsets = {PROP_MIN_OFFSET: str(header.min_offset), PROP_MAX_OFFSET: str(header.max_offset)}
        msgs: list[MessageExt] = decode_messages(raw.body, MessageExt, mq.broker_name, offsets, decode_body)
        if sub.tags_set and not sub.class_filter_mode:
            tags = set(sub.tags_set)
            msgs = [m for m in msgs if m.tags is not None and m.tags in tags]
        result.messages = msgs
        return result
