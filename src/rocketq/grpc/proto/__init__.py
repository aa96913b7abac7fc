"""protoc's stubs for rocketq's transcription of apache.rocketmq.v2 (regenerate: scripts/gen-protos.sh)."""
