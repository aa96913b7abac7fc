#!/usr/bin/env python3
"""Screenshots of every web console page into docs/console/*.png (docs/console.md shows them).

Starts a ``rocketq standalone`` serving the console (a temporary directory), puts a little life in it — a topic,
a producer sending a few messages a second, a consumer group consuming them — lets the Dashboard take a few
samples, then opens every page of the navigation (the ones added later too: it reads the nav bar) and a few
detail pages in headless Chromium and saves each whole page. A second standalone with ACL on gives the login
page. About a minute::

    PYTHONPATH=src .venv/bin/python scripts/console-screenshots.py [--out docs/console] [--samples 5]
"""

from __future__ import annotations

import argparse
import re
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote, urlparse

from rocketq.client import ClientConfig, ConsumeConcurrentlyStatus, Message
from rocketq.client.sync import Producer, PushConsumer
from rocketq.testing.browser import ConsoleCluster, ConsolePage, start_chromium

TOPIC, PRODUCER_GROUP, CONSUMER_GROUP = "DemoOrders", "demo-order-producer", "demo-order-consumer"
DASHBOARD_SAMPLE_SECONDS = 10.5  # just over the dashboard's sampling interval
ACL_YAML = "accounts:\n  - accessKey: console-admin\n    secretKey: console-admin-secret\n    admin: true\n"


def _send_loop(producer: Producer, stop: threading.Event) -> None:
    i = 0
    while not stop.is_set():
        producer.send(Message(TOPIC, f'{{"order": {i}, "amount": {i * 7 % 100}}}', tags="created", keys=f"order-{i}"))
        i += 1
        stop.wait(0.2 if i % 40 < 20 else 0.05)  # a rate that changes, so the charts have a shape


def _slug(path: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", path.strip("/").lower()) or "index"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "docs" / "console")
    parser.add_argument("--samples", type=int, default=5, help="dashboard samples before its screenshot")
    args = parser.parse_args()
    cluster = ConsoleCluster().start()
    driver = start_chromium(width=1400, height=900)
    stop = threading.Event()
    saved: list[Path] = []
    producer = consumer = None
    try:
        admin = cluster.admin
        assert admin is not None
        admin.create_topic(TOPIC, write_queue_nums=4, read_queue_nums=4)
        config = ClientConfig(namesrv_addr=cluster.namesrv_addr, heartbeat_broker_interval=1.0)
        producer = Producer(PRODUCER_GROUP, config=config)
        producer.start()
        consumer = PushConsumer(CONSUMER_GROUP, config=config)
        consumer.subscribe(TOPIC, "*")
        consumer.register_message_listener(lambda msgs, ctx: ConsumeConcurrentlyStatus.CONSUME_SUCCESS)
        consumer.start()
        sender = threading.Thread(target=_send_loop, args=(producer, stop), daemon=True)
        sender.start()

        page = ConsolePage(driver, cluster.url)

        def shoot(path: str, name: str | None = None) -> None:
            page.open(path)
            target = args.out / f"{name or _slug(urlparse(path).path)}.png"
            page.screenshot(target)
            saved.append(target)

        for _ in range(max(1, args.samples) - 1):  # each visit after the interval adds one sample
            page.open("/dashboard?refresh=0")
            time.sleep(DASHBOARD_SAMPLE_SECONDS)
        nav = [
            urlparse(a.get_attribute("href")).path
            for a in page.open("/ops").find_elements("css selector", "header nav a")
        ]
        for path in nav:
            shoot(path + ("?refresh=0" if path == "/dashboard" else ""), _slug(path))
        broker = admin.brokers()[0]
        shoot(f"/cluster/broker?addr={quote(broker.addr)}", "cluster-broker")
        shoot(f"/topics/detail?topic={TOPIC}", "topics-detail")
        shoot(f"/producers?topic={TOPIC}&group={PRODUCER_GROUP}", "producers")
    finally:
        stop.set()
        for client in (consumer, producer):
            if client is not None:
                client.shutdown()
        cluster.stop()
    acl = ConsoleCluster(acl_yaml=ACL_YAML).start()
    try:
        page = ConsolePage(driver, acl.url)
        page.open("/login")
        page.fill({"login-access-key": "console-admin", "login-secret-key": "wrong"})
        page.submit("login-submit", then="login-error")
        target = args.out / "login.png"
        page.screenshot(target)
        saved.append(target)
    finally:
        acl.stop()
        driver.quit()
    for path in dict.fromkeys(saved):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
