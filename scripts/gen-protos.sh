#!/usr/bin/env bash
# Regenerates the Python gRPC stubs of src/rocketq/grpc/proto/ from its .proto files.
# Needs grpcio-tools (the "dev" extra). tests/unit/test_grpc_protos.py fails when the committed stubs drift.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-python3}"
cd "$root/src"
"$python" -m grpc_tools.protoc -I . \
  --python_out=. --pyi_out=. --grpc_python_out=. \
  rocketq/grpc/proto/messaging_types.proto rocketq/grpc/proto/messaging_service.proto
# the types file declares no service: its empty _grpc module is not kept
rm -f rocketq/grpc/proto/messaging_types_pb2_grpc.py
