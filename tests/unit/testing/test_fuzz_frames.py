"""The wire fuzzer's frames reach what the issue asks for: every request code, every header field given a
hostile value, both serialisations, the oneway/response flags, garbage the server must refuse, and frames cut
short; an excluded family is never made; the same seed makes the same frames."""

from __future__ import annotations

import random
import struct
from collections import Counter
from pathlib import Path

import pytest

from rocketq.codes import RequestCode
from rocketq.protocol.command import FLAG_ONEWAY, FLAG_RESPONSE, SERIALIZE_JSON, SERIALIZE_ROCKETMQ, decode_frame
from rocketq.protocol.headers import _V2_KEYS
from rocketq.protocol.requests import REQUESTS
from rocketq.testing.fuzz.frames import BROKER, NAMESRV, NAMESRV_HEADERS, Frame, FrameFactory
from rocketq.testing.fuzz.logscan import LogScanner
from rocketq.testing.fuzz.pools import Pools, build_pools

N = 20_000


@pytest.fixture(scope="module")
def pools() -> Pools:
    return build_pools(19, 150)


@pytest.fixture(scope="module")
def frames(pools: Pools) -> list[Frame]:
    factory = FrameFactory(random.Random(5), pools)
    return [factory.frame(BROKER if i % 3 else NAMESRV) for i in range(N)]


def test_every_request_code_and_unknown_codes_are_sent(frames: list[Frame]) -> None:
    codes = {f.code for f in frames if f.kind == "request"}
    assert set(REQUESTS) <= codes
    assert set(NAMESRV_HEADERS) <= codes
    assert codes - {int(c) for c in RequestCode}  # codes no server knows


def test_every_header_field_of_every_broker_request_gets_hostile_values(frames: list[Frame]) -> None:
    families = {fam for f in frames for fam in f.families}
    missing = []
    for code, spec in REQUESTS.items():
        if spec.header is None:
            continue
        for field in spec.header._field_specs():
            if f"{RequestCode(code).name}:{field.key}" not in families:
                missing.append(f"{RequestCode(code).name}:{field.key}")
    assert missing == []
    assert {f"{RequestCode(c).name}:body" for c in (34, 41, 200, 320, 25, 318)} <= families
    # a V2 send's families name its fields by their V1 names
    assert not [fam for fam in families if fam.startswith("SEND_MESSAGE_V2:") and fam.split(":")[1] in _V2_KEYS]


def test_frames_cover_both_serialisations_flags_and_the_refusal_paths(frames: list[Frame]) -> None:
    kinds = Counter(f.kind for f in frames)
    assert kinds["request"] > N // 2 and kinds["mutated"] > 0 and kinds["garbage"] > 0
    serialisations: Counter[int] = Counter()
    flags: Counter[int] = Counter()
    for f in frames:
        if f.kind != "request" or f.closes or f.partial:
            continue
        cmd = decode_frame(f.data[4:])
        serialisations[cmd.serialize_type] += 1
        flags[cmd.flag & (FLAG_ONEWAY | FLAG_RESPONSE)] += 1
    assert serialisations[SERIALIZE_JSON] > 0 and serialisations[SERIALIZE_ROCKETMQ] > 0
    assert all(flags[flag] > 0 for flag in (0, FLAG_ONEWAY, FLAG_RESPONSE, FLAG_ONEWAY | FLAG_RESPONSE))
    assert sum(f.closes for f in frames) > N // 20 and sum(f.partial for f in frames) > 0
    # lengths that lie: shorter than the header-length word, negative, header longer than the frame
    totals = {struct.unpack(">i", f.data[:4])[0] for f in frames if f.kind == "garbage" and len(f.data) >= 4}
    assert -1 in totals and 3 in totals
    # huge strings and integers past int64 inside otherwise plausible requests
    assert any(len(f.data) > 60_000 for f in frames if f.kind == "request")
    assert any(str(2**70).encode() in f.data for f in frames if f.kind == "request")


def test_an_excluded_family_is_never_made(pools: Pools) -> None:
    factory = FrameFactory(random.Random(5), pools, excluded=["SEND_*:bornTimestamp", "HEART_BEAT:*"])
    made = [factory.frame(BROKER) for _ in range(5_000)]
    families = {fam for f in made for fam in f.families}
    assert not [fam for fam in families if fam.startswith("SEND_") and fam.endswith(":bornTimestamp")]
    assert "SEND_MESSAGE:queueId" in families or "SEND_MESSAGE_V2:queueId" in families
    assert RequestCode.HEART_BEAT not in {f.code for f in made if f.kind == "request"}


def test_the_same_seed_makes_the_same_frames(pools: Pools) -> None:
    def run() -> list[bytes]:
        factory = FrameFactory(random.Random(11), pools)
        return [factory.frame(BROKER).data for _ in range(500)]

    # plausible timestamps are "now", so compare what does not depend on the clock: lengths and leading bytes
    assert [(len(x), x[:16]) for x in run()] == [(len(y), y[:16]) for y in run()]


def test_the_log_scanner_groups_tracebacks_by_site_and_names_the_request(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    entry = (
        "2026-11-24 19:38:02,202 ERROR rocketq.remoting.server request.failed code=201 opaque=2415 remote=x:1\n"
        "Traceback (most recent call last):\n"
        '  File "/src/rocketq/remoting/server.py", line 85, in dispatch\n'
        "    resp = sync(conn, cmd)\n"
        '  File "/src/rocketq/protocol/bodies.py", line 41, in dumps\n'
        "    return orjson.dumps(obj)\n"
        "TypeError: Integer exceeds 64-bit range\n"
    )
    log.write_text(entry + "2026-11-24 19:38:03,000 WARNING rocketq.remoting frame.rejected remote=x:2\n")
    scanner = LogScanner(log)
    (site,) = scanner.scan()
    assert (site.code, site.opaque, site.count) == (201, 2415, 1)
    assert site.frames[0] == "rocketq/protocol/bodies.py:41 in dumps"
    with log.open("a") as f:
        f.write(entry[: len(entry) // 2])  # half written: counted once the rest arrives
    assert scanner.scan() == [] and scanner.tracebacks == 2
    with log.open("a") as f:
        f.write(entry[len(entry) // 2 :])
    assert scanner.scan() == []  # the same site again
    assert (scanner.tracebacks, scanner.error_lines, site.count) == (2, 2, 2)


def test_an_error_after_an_admin_change_is_counted_apart(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(
        "2026-11-24 19:59:41,185 ERROR rocketq.broker.services.schedule schedule.reput_failed topic=T "
        "status=MESSAGE_ILLEGAL\n"
        "2026-11-24 19:59:42,000 ERROR rocketq.broker.controller scheduled.failed name=persist-offsets\n"
    )
    scanner = LogScanner(log)
    scanner.scan()
    assert (scanner.error_lines, scanner.operational_errors) == (1, 1)
