"""Work that walks queues or offsets on the event loop, done in slices so it never holds the loop.

An admin request that walks every queue of a topic (topic stats, consume stats, an offset reset) costs time
in proportion to the topic's queue count, which a client chooses. Done in one go on the event loop, a large
walk answers nobody else and lets no signal in until it ends; in slices, the loop serves every other client
(and a shutdown, which cancels the walk at its next pause) between two slices.
"""

from __future__ import annotations

import asyncio

#: units of work (queues, offsets, answer entries) an admin walk does before it lets the loop serve others
WALK_SLICE = 512


class Pacer:
    """Counts a walk's units and pauses (one turn of the loop) after every ``every`` of them.

    ``await pacer.step()`` in the walk's loop; the pause is where the loop answers other requests, and where a
    cancelled walk (a shutdown, a closed connection) stops.
    """

    __slots__ = ("_left", "every", "visited")

    def __init__(self, every: int = WALK_SLICE) -> None:
        self.every = max(1, every)
        self._left = self.every
        #: queues the request has visited so far, over all its topics and groups (``visit``)
        self.visited = 0

    def visit(self, queues: int, limit: int) -> bool:
        """Count ``queues`` more visited by this request; False once the request's total passes ``limit`` (one
        request walking every group's topics must stay bounded, not only each topic's walk)."""
        self.visited += queues
        return self.visited <= limit

    async def step(self, units: int = 1) -> None:
        self._left -= units
        if self._left <= 0:
            self._left = self.every
            await asyncio.sleep(0)
