"""POP consumption (RocketMQ 5's message-level load balancing), transport-neutral.

``PopService`` (``service.py``) is the one place the rules live: pop with long polling, ack, change invisible
time, checkpoints persisted in the revive topic, revive into the group's retry topic with delivery attempt + 1,
the dead-letter queue after the group's max attempts, FIFO queues. The remoting processors
(``broker/processors/pop.py``) and the gRPC adapter (``rocketq.grpc``) call it. docs/pop.md.
"""
