"""The instruction-count benchmark's arithmetic: the total valgrind prints, the cost per operation."""

from __future__ import annotations

import pytest

from rocketq.bench.instructions import OpCost, collected_instructions, per_op, valgrind_command


def test_the_last_collected_total_is_read() -> None:
    stderr = "==11669== Callgrind, a call-graph generating cache profiler\n==11669== Collected : 3873759744\n"
    assert collected_instructions(stderr) == 3_873_759_744
    assert collected_instructions("==1== Collected : 5\n==2== Collected : 7\n") == 7  # a child's would come last
    with pytest.raises(ValueError, match="no 'Collected' total"):
        collected_instructions("python: can't open file\n")


def test_start_up_cancels_and_bad_pairs_are_refused() -> None:
    assert per_op(2000, 3_000_000 + 2000 * 150, 8000, 3_000_000 + 8000 * 150) == 150
    assert OpCost(4000, 16000, 3_827_494_065, 4_575_078_972).per_op == pytest.approx(62_298.75)
    with pytest.raises(ValueError, match="more operations"):
        per_op(8000, 1, 2000, 2)
    with pytest.raises(ValueError, match="failed early"):
        per_op(2000, 3_900_000_000, 8000, 3_800_000_000)


def test_the_command_runs_the_scenario_under_callgrind_without_keeping_its_profile() -> None:
    cmd = valgrind_command("/venv/bin/python", "bench.py", "send", 2000)
    assert cmd[:3] == ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    assert cmd[3:] == ["/venv/bin/python", "bench.py", "--run", "send", "2000"]
