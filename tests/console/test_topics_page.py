"""Topics in a real Chromium: the list matches the admin API; create, send a test message (read back by its id),
reset a group's offsets and delete, each through the page's forms."""

from __future__ import annotations

import re
from collections.abc import Callable

from rocketq.client.sync import run
from rocketq.testing.browser import ConsoleCluster, ConsolePage

TOPIC = "ConsoleTopicT1"
GROUP = "console-reset-group"


def test_topic_list_matches_the_admin_api(console: ConsolePage, console_cluster: ConsoleCluster) -> None:
    admin = console_cluster.admin
    assert admin is not None
    console.open("/topics?normal=1&retry=1&dlq=1&system=1")
    listed = [r[0] for r in console.rows("topics-table")]
    assert listed == admin.topic_list()
    console.open("/topics")  # normal topics only by default: no system topic among them
    normal = [r[0] for r in console.rows("topics-table")]
    assert "TBW102" not in normal and set(normal) <= set(listed)


def test_create_send_reset_and_delete_a_topic_from_the_page(
    console: ConsolePage, console_cluster: ConsoleCluster, shot: Callable[[str], None]
) -> None:
    admin = console_cluster.admin
    assert admin is not None
    console.open("/topics")
    console.fill({"create-topic": TOPIC, "create-write-queues": "4", "create-read-queues": "4"})
    console.submit("create-topic-submit", then="topic-name")
    assert "created/updated" in console.text("flash")
    route = admin.topic_route(TOPIC)
    assert [(q.read_queue_nums, q.write_queue_nums, q.perm) for q in route.queue_datas] == [(4, 4, 6)]
    assert len(console.rows("status-table")) == 4

    # send from the page, read the message back through the admin API by the id the page reports
    console.fill({"send-tags": "TagA", "send-keys": "order-42", "send-body": "hello from the console"})
    console.submit("send-submit", then="flash")
    sent = console.text("flash")
    m = re.search(r"sent SEND_OK: msgId=(\S+) offsetMsgId=(\S+)", sent)
    assert m is not None, sent
    found = admin.query_message_by_id(m.group(1), TOPIC)
    assert [(x.body, x.tags, x.keys) for x in found] == [(b"hello from the console", "TagA", ["order-42"])]
    assert console.text("topic-total") == "1"

    # reset an (offline) group's offsets: to the latest (-1: every queue's max offset), then to 0 (the first)
    console.fill({"reset-group": GROUP, "reset-time": "-1"})
    console.submit("reset-submit", then="flash")
    assert f"offsets of {GROUP} on {TOPIC} reset" in console.text("flash")
    progress = admin.consume_progress(GROUP, TOPIC)
    assert len(progress) == 4 and all(q.consumer_offset == q.broker_offset for q in progress)
    assert sum(q.broker_offset for q in progress) == 1
    assert GROUP in console.text("topic-groups")  # its offsets make it a consumer of the topic
    assert run(admin.aio.groups_consuming(TOPIC)) == [GROUP]
    shot("topic")
    console.fill({"reset-group": GROUP, "reset-time": "0"})
    console.submit("reset-submit", then="flash")
    progress = admin.consume_progress(GROUP, TOPIC)
    assert all(q.consumer_offset == 0 for q in progress) and sum(q.lag for q in progress) == 1

    console.by_id("delete-confirm").click()
    console.submit("delete-submit", then="topics-table")
    assert f"topic {TOPIC} deleted" in console.text("flash")
    assert TOPIC not in admin.topic_list()
    assert TOPIC not in [r[0] for r in console.rows("topics-table")]
    console.open("/topics")
    shot("topics")


def test_a_bad_topic_name_is_an_error_page(console: ConsolePage) -> None:
    console.open("/topics")
    console.fill({"create-topic": "bad topic!"})
    console.submit("create-topic-submit", then="error-message")
    assert "illegal characters" in console.text("error-message")
