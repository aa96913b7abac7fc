"""The RocketMQ 5.x gRPC endpoint (``apache.rocketmq.v2.MessagingService``), in the broker's process.

An adapter over the broker's transport-neutral services (``broker/messaging/``); it holds no business rules.
``proto/`` holds rocketq's own transcription of the published API and protoc's stubs (docs/grpc.md).
"""
