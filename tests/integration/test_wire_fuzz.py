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

#: Families of hostile frames known to hit defects that another part of issue 19 is fixing, kept out of the
#: bounded run so the suite stays green until those land (the lead removes these after merging; ``make fuzz``
#: makes them all). Each line: the family pattern (fnmatch on ``CODE_NAME:field``) and the lane fixing it.
EXCLUDED = (
    # validate (a configurable maximum queue count) and persist (admin requests that walk queues run bounded):
    # a topic of 2^31 queues, then GET_TOPIC_STATS_INFO / GET_CONSUME_STATS / INVOKE_BROKER_TO_RESET_OFFSET on it
    # loops on the event loop: nobody is answered and memory grows by ~1 GB every few seconds
    "UPDATE_AND_CREATE_TOPIC:readQueueNums", "UPDATE_AND_CREATE_TOPIC:writeQueueNums",
    # validate: a topic's perm or topicSysFlag past int64 is stored; GET_ALL_TOPIC_CONFIG then fails, and
    # persist: topics.json is never saved again, every later topic creation answers SYSTEM_ERROR, the broker's
    # registration fails (its topics vanish from the name server) and the graceful stop exits 1
    "UPDATE_AND_CREATE_TOPIC:perm", "UPDATE_AND_CREATE_TOPIC:topicSysFlag",
    # validate: a consumer offset (or its queue id) past int64 is stored; every answer listing offsets
    # (GET_ALL_CONSUMER_OFFSET, GET_CONSUME_STATS, GET_BROKER_CONSUME_STATS) then fails with a TypeError, and
    # persist: the offsets file is never saved again, the graceful stop exits 1 and offsets are lost
    "UPDATE_CONSUMER_OFFSET:commitOffset", "UPDATE_CONSUMER_OFFSET:queueId",
    "PULL_MESSAGE:commitOffset", "PULL_MESSAGE:queueId",
    # validate: a SubscriptionGroupConfig number past int64 (brokerId, retryQueueNums, …) is stored;
    # GET_ALL_SUBSCRIPTIONGROUP_CONFIG then fails, and persist: subscriptionGroup.json is never saved again
    "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP:body",
    # validate: a send's flag, sysFlag, bornTimestamp, reconsumeTimes or queueId past the record's field
    # (int32/int64): OverflowError in the commit log's append, SYSTEM_ERROR with a traceback
    "SEND_*:flag", "SEND_*:sysFlag", "SEND_*:bornTimestamp", "SEND_*:reconsumeTimes", "SEND_*:queueId",
    # validate: UPDATE_NAMESRV_CONFIG takes "1e300"/"Infinity" (GET_NAMESRV_CONFIG then fails with an
    # OverflowError) and an expiry that unregisters every live broker within seconds
    "UPDATE_NAMESRV_CONFIG:body",
)


@pytest.mark.timeout(280)
async def test_fuzzed_broker_and_name_server_keep_serving_and_keep_their_state(tmp_path: Path) -> None:
    config = FuzzConfig(frames=FRAMES, seed=19, max_seconds=MAX_SECONDS, probe_every=2_000, excluded=EXCLUDED)
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
