"""The committed gRPC stubs are what scripts/gen-protos.sh makes of the .proto files today."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROTO_DIR = ROOT / "src" / "rocketq" / "grpc" / "proto"
GENERATED = (
    "messaging_types_pb2.py",
    "messaging_types_pb2.pyi",
    "messaging_service_pb2.py",
    "messaging_service_pb2.pyi",
    "messaging_service_pb2_grpc.py",
)


def test_generated_stubs_match_the_protos(tmp_path: Path) -> None:
    work = tmp_path / "rocketq" / "grpc" / "proto"
    work.mkdir(parents=True)
    for proto in PROTO_DIR.glob("*.proto"):
        shutil.copy(proto, work / proto.name)
    protos = sorted(str(p.relative_to(tmp_path)) for p in work.glob("*.proto"))
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", "-I", ".", "--python_out=.", "--pyi_out=.",
         "--grpc_python_out=.", *protos],
        cwd=tmp_path, check=True,
    )
    stale = [name for name in GENERATED if (work / name).read_bytes() != (PROTO_DIR / name).read_bytes()]
    assert not stale, f"out of date with the .proto files, run scripts/gen-protos.sh: {stale}"


def test_stubs_carry_the_wire_names_5x_clients_call() -> None:
    from rocketq.grpc.proto import messaging_service_pb2, messaging_types_pb2

    service = messaging_service_pb2.DESCRIPTOR.services_by_name["MessagingService"]
    assert service.full_name == "apache.rocketmq.v2.MessagingService"
    assert service.methods_by_name["ReceiveMessage"].server_streaming
    assert messaging_types_pb2.Code.Value("CLIENT_ID_REQUIRED") == 40017
    fields = messaging_types_pb2.SystemProperties.DESCRIPTOR.fields_by_name
    assert fields["delivery_attempt"].number == 16
