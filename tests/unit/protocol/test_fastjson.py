"""The lenient JSON readers: fastjson's dialect for clients, bare integer keys for the name server."""

from __future__ import annotations

import pytest

from rocketq.errors import ProtocolError
from rocketq.protocol.bodies import MessageQueue
from rocketq.protocol.fastjson import loads, loads_lenient, mq_from_key


def test_fastjson_dialect() -> None:
    assert loads(b'{"a":1}') == {"a": 1}
    obj = loads(b'{"brokerAddrs":{0:"h:1",1:"h:2"},"t":true,"n":null,"f":-1.5e2}')
    assert obj == {"brokerAddrs": {"0": "h:1", "1": "h:2"}, "t": True, "n": None, "f": -150.0}
    table = loads(b'{"offsetTable":{{"topic":"T","queueId":1,"brokerName":"b"}:{"maxOffset":3}},'
                  b'"consumeTps":1.0}')  # fmt: skip
    (key, value), = table["offsetTable"].items()
    assert mq_from_key(key) == MessageQueue("T", "b", 1)
    assert value == {"maxOffset": 3}


def test_loads_lenient() -> None:
    assert loads_lenient(b'{"a":{0:"x",12:"y"}}') == {"a": {"0": "x", "12": "y"}}
    with pytest.raises(ProtocolError):
        loads_lenient(b"{nope")


@pytest.mark.parametrize("body", [b"{nope", b"", b'{"a":1}x', b"{{1:2}"])
def test_both_readers_raise_protocol_error(body: bytes) -> None:
    with pytest.raises(ProtocolError):
        loads(body)
    with pytest.raises(ProtocolError):
        loads_lenient(body)


def test_lenient_reader_stays_narrower_than_the_fastjson_one() -> None:
    # The name server keeps rejecting object keys (see the module docstring).
    body = b'{"t":{{"topic":"T","queueId":1,"brokerName":"b"}:1}}'
    assert loads(body)
    with pytest.raises(ProtocolError):
        loads_lenient(body)
