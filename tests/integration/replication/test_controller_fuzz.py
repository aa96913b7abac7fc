"""Seeded random requests for every controller code against an embedded controller: each is answered, none
logs a traceback, and the controller still serves a well-formed request afterwards."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from rocketq.codes import ControllerRequestCode as Code
from rocketq.codes import ResponseCode
from rocketq.namesrv import NamesrvConfig, NamesrvServer
from rocketq.protocol import RemotingCommand
from rocketq.protocol import controller_headers as h
from rocketq.remoting import RemotingClient

SEED = 20261125
REQUESTS = 800
WAIT = 5.0

HEADERS = {
    Code.BROKER_HEARTBEAT: h.BrokerHeartbeatRequestHeader,
    Code.CONTROLLER_ALTER_SYNC_STATE_SET: h.AlterSyncStateSetRequestHeader,
    Code.CONTROLLER_ELECT_MASTER: h.ElectMasterRequestHeader,
    Code.CONTROLLER_REGISTER_BROKER: h.RegisterBrokerToControllerRequestHeader,
    Code.CONTROLLER_GET_REPLICA_INFO: h.GetReplicaInfoRequestHeader,
    Code.CONTROLLER_GET_METADATA_INFO: None,
    Code.CONTROLLER_GET_SYNC_STATE_DATA: None,
    Code.CLEAN_BROKER_DATA: h.CleanBrokerDataRequestHeader,
    Code.CONTROLLER_GET_NEXT_BROKER_ID: h.GetNextBrokerIdRequestHeader,
    Code.CONTROLLER_APPLY_BROKER_ID: h.ApplyBrokerIdRequestHeader,
    Code.GET_CONTROLLER_CONFIG: None,
    Code.UPDATE_CONTROLLER_CONFIG: None,
}
HOSTILE = ["", "-1", "0", "1", "2", "9223372036854775807", "9223372036854775808", "-9223372036854775809",
           "2147483648", "abc", "1.5", "true", "NaN", "g0", "g1", "C", "10.0.0.1:10911", "x;1", ";;", "1;2;x",
           "\u00e9" * 40]  # fmt: skip
BODIES = [b"", b"{}", b"[]", b'{"syncStateSet":[1,2],"syncStateSetEpoch":1}', b'{"syncStateSet":"x"}',
          b'["g0","g1"]', b"[1,2]", b"null", b"\xff\xfe", b"[" * 5000, b"enableElectUncleanMaster=true\n",
          b"scanNotActiveBrokerInterval=-5\n", b"controllerStorePath=/x\n"]  # fmt: skip


def random_request(rng: random.Random) -> RemotingCommand:
    code = rng.choice(list(HEADERS))
    ext: dict[str, str] = {}
    header = HEADERS[code]
    if header is not None:
        for f in dataclasses.fields(header):
            if rng.random() < 0.85:
                ext[f.metadata["wire"]] = rng.choice(HOSTILE)
    return RemotingCommand.request(code, ext, rng.choice(BODIES))


async def test_random_controller_requests_are_answered_without_a_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rng = random.Random(SEED)
    config = NamesrvConfig(listen_host="127.0.0.1", listen_port=0, home_dir=tmp_path, enable_controller_in_namesrv=True)
    client = RemotingClient()
    try:
        async with NamesrvServer(config) as server:
            codes: set[int] = set()
            for _ in range(REQUESTS):
                resp = await client.invoke(server.address, random_request(rng), timeout=WAIT)
                codes.add(resp.code)
                assert resp.code != ResponseCode.REQUEST_CODE_NOT_SUPPORTED
            assert server.controller is not None
            await server.controller.scan_now()
            ok = await client.invoke(server.address, RemotingCommand.request(Code.CONTROLLER_GET_METADATA_INFO), WAIT)
            assert ok.code == ResponseCode.SUCCESS
            assert ResponseCode.SUCCESS in codes and ResponseCode.SYSTEM_ERROR in codes and len(codes) > 4
    finally:
        await client.close()
    assert not [r.getMessage() for r in caplog.records if r.exc_info or r.levelname == "ERROR"]
