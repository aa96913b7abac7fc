"""The wire fuzzer (rocketq.testing.fuzz, ``make fuzz`` runs it for a million frames) against a real
``rocketq standalone`` child process, bounded here in frames and in time.

Afterwards: the process never died, answered a probe on a fresh connection after every round, logged no
ERROR line and no traceback, refused every malformed frame by closing its connection; and a normal send, a new
topic, a new group's pull, a graceful stop (exit 0) and a restart on the same store with every topic, group
and offset made on purpose still there all work (the fuzzer's own junk topics and groups are its business).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketq.testing.fuzz import Campaign, FuzzConfig

FRAMES = 30_000
#: the fuzzing stops sending after this long on a slow machine (it still finishes its round and the checks)
MAX_SECONDS = 45.0


@pytest.mark.timeout(280)
async def test_fuzzed_broker_and_name_server_keep_serving_and_keep_their_state(tmp_path: Path) -> None:
    config = FuzzConfig(frames=FRAMES, seed=19, max_seconds=MAX_SECONDS, probe_every=2_000)
    result = await Campaign(tmp_path / "store", tmp_path / "server.log", config).run()
    report = result.report
    print(report.summary())
    summary = report.summary()
    # the bound: every frame, or every round begun within MAX_SECONDS (a round is never cut short)
    assert report.frames == FRAMES or report.frames >= config.probe_every
    assert report.probes >= 1
    # the run exercised both paths: answered requests and refused garbage
    assert report.answers > 0 and report.closes_due > 0 and report.requests > report.garbage > 0
    assert not report.crashed, summary
    assert report.hangs == 0 and report.probe_failures == [], summary
    assert report.tracebacks == 0 and report.error_lines == 0, summary
    assert report.not_closed == 0, summary
    # not asserted: report.unexpected_closes — the broker may legitimately close a well-formed connection, e.g.
    # once a fuzzed UPDATE_BROKER_CONFIG shortened clientChannelExpiredTimeMills (Java's client housekeeping
    # closes the channels of expired clients too); it is a figure of the run, not a failure
    assert result.problems == [], summary
    assert result.stop_exit_code == 0
    assert result.later_tracebacks == 0
