"""The RocketMQ quick start ("TopicTest") written with the Apache C++ client's Python wheel.

Run it against `rocketq standalone` (or any RocketMQ 4.x name server):

    pip install rocketmq==0.4.4         # Apache rocketmq-client-cpp inside; Linux x86_64
    python examples/cpp_quickstart.py 127.0.0.1:9876

It sends 100 messages "Hello RocketMQ i" with tag TagA, then consumes TopicTest with a push consumer and
prints what it received. TopicTest is a shared name (the README's snippet writes to it too, and so does an
earlier run whose consumer stopped before committing): the consumer prints every message it gets but counts
only the 100 this run sent, recognised by their message ids.
"""

import sys
import threading
import time

from rocketmq.client import Message, Producer, PushConsumer  # type: ignore[import-not-found]

namesrv = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:9876"
count = 100
sent_ids: set[str] = set()  # filled before the consumer starts; only read by its threads

producer = Producer("please_rename_unique_group_name")
producer.set_namesrv_addr(namesrv)
producer.start()
for i in range(count):
    msg = Message("TopicTest")
    msg.set_tags("TagA")
    msg.set_keys(f"OrderID{i}")
    msg.set_body(f"Hello RocketMQ {i}")
    result = producer.send_sync(msg)
    sent_ids.add(result.msg_id)
    print(f"SendResult status={result.status.name} msgId={result.msg_id} offset={result.offset}", flush=True)
producer.shutdown()

received: set[str] = set()
others: set[str] = set()
all_in = threading.Event()


def on_message(msg) -> None:  # type: ignore[no-untyped-def]
    # Returning normally acknowledges the message (this wheel has no RECONSUME_LATER return value).
    mine = msg.id in sent_ids
    if mine:
        received.add(msg.id)
    else:
        others.add(msg.id)
    note = "" if mine else " (not sent by this run: not counted)"
    print(f"Receive New Message: topic={msg.topic} tags={msg.tags.decode()} body={msg.body.decode()}{note}",
          flush=True)
    if len(received) >= count:
        all_in.set()


consumer = PushConsumer("please_rename_unique_group_name")
consumer.set_namesrv_addr(namesrv)
consumer.subscribe("TopicTest", on_message, "*")
consumer.start()
print("Consumer Started.", flush=True)
all_in.wait(timeout=60)
time.sleep(0.5)
consumer.shutdown()
print(f"received {len(received)} of {count}" + (f" (and {len(others)} sent before this run)" if others else ""),
      flush=True)
sys.exit(0 if len(received) == count else 1)
