"""A read's consecutive requests of a code registered with ``register_stretch`` reach its processor in one call."""

from __future__ import annotations

from rocketq.protocol import RemotingCommand, encode
from rocketq.protocol.command import FLAG_RESPONSE
from rocketq.remoting import Connection, RemotingDispatcher


class _Transport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))

    def writelines(self, parts: list[bytes]) -> None:
        self.writes.append(b"".join(parts))

    def is_closing(self) -> bool:
        return False

    def get_extra_info(self, name: str) -> None:
        return None


def wire(*cmds: RemotingCommand) -> bytes:
    return b"".join(encode(c) for c in cmds)


def connection(dispatcher: RemotingDispatcher) -> Connection:
    conn = Connection(dispatcher)
    conn.connection_made(_Transport())  # type: ignore[arg-type]
    return conn


def setup() -> tuple[RemotingDispatcher, list[tuple[str, list[int]]]]:
    dispatcher = RemotingDispatcher()
    seen: list[tuple[str, list[int]]] = []
    dispatcher.register(7, lambda conn, cmd: seen.append(("one", [cmd.opaque])) and None)
    dispatcher.register(8, lambda conn, cmd: seen.append(("other", [cmd.opaque])) and None)
    dispatcher.register_stretch(7, lambda conn, cmds: seen.append(("stretch", [c.opaque for c in cmds])))
    return dispatcher, seen


async def test_consecutive_requests_of_a_stretch_code_go_together_in_order() -> None:
    dispatcher, seen = setup()
    conn = connection(dispatcher)
    python = RemotingCommand(7, 6, 0, "PYTHON")
    conn.data_received(wire(*(RemotingCommand(7, i) for i in (1, 2, 3)), RemotingCommand(8, 4),
                            RemotingCommand(7, 5), python))  # fmt: skip
    # another code ends a stretch, and so does another language (the connection's language rule is per request)
    assert seen == [("stretch", [1, 2, 3]), ("other", [4]), ("stretch", [5]), ("stretch", [6])]
    assert conn.language == "PYTHON"


async def test_a_response_between_requests_settles_its_waiter_and_splits_the_stretch() -> None:
    dispatcher, seen = setup()
    conn = connection(dispatcher)
    conn.data_received(wire(RemotingCommand(7, 1), RemotingCommand(0, 99, FLAG_RESPONSE), RemotingCommand(7, 2)))
    assert seen == [("stretch", [1]), ("stretch", [2])]


async def test_request_hooks_see_each_request_so_stretches_wait_for_none() -> None:
    dispatcher, seen = setup()
    hooked: list[int] = []
    dispatcher.request_hooks.append(lambda conn, cmd: hooked.append(cmd.opaque))
    conn = connection(dispatcher)  # the hook is registered after the connection was made: still seen
    conn.data_received(wire(RemotingCommand(7, 1), RemotingCommand(7, 2)))
    assert hooked == [1, 2] and seen == [("one", [1]), ("one", [2])]


async def test_a_failing_stretch_processor_answers_each_request_with_an_error() -> None:
    dispatcher = RemotingDispatcher()

    def broken(conn: Connection, cmds: list[RemotingCommand]) -> None:
        raise RuntimeError("processor broke")

    dispatcher.register(7, lambda conn, cmd: None)
    dispatcher.register_stretch(7, broken)
    conn = connection(dispatcher)
    conn.data_received(wire(RemotingCommand(7, 1), RemotingCommand(7, 2)))
    assert dict(dispatcher.answer_counts) == {(7, 1): 2}  # SYSTEM_ERROR, each
