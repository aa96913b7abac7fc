"""The peer comparison's arithmetic: order, medians, ratios, targets, table."""

from __future__ import annotations

from rocketq.bench.compare import Sample, Target, check_targets, markdown_table, medians, rotation


def test_rotation_moves_every_peer_through_every_position() -> None:
    peers = ["rocketq", "redis", "java"]
    orders = [rotation(peers, 1, i) for i in range(3)]
    assert orders[0] == ["redis", "java", "rocketq"]
    for position in range(3):
        assert sorted(o[position] for o in orders) == sorted(peers)
    assert rotation(peers, 2, 0) == rotation(peers, 1, 1)  # the next round starts where the scenario moved to
    assert rotation([], 1, 1) == []


def sample(peer: str, scenario: str, rate: float | None, cpu: float | None = None, rnd: int = 1) -> Sample:
    return Sample(rnd, peer, scenario, msgs_per_s=rate, server_cpu_us_per_msg=cpu)


def test_medians_skip_failed_samples_and_take_the_middle_round() -> None:
    table = medians([sample("redis", "sync", 100, 5), sample("redis", "sync", 300, 7),
                     sample("redis", "sync", 200, None), sample("redis", "sync", None, 1)])  # fmt: skip
    m = table[("redis", "sync")]
    assert m.rounds == 3 and m.msgs_per_s == 200 and m.server_cpu_us_per_msg == 6  # median of 5 and 7
    assert ("rocketq", "sync") not in table


def test_a_target_needs_the_ratio_and_when_asked_the_cpu() -> None:
    table = medians([sample("rocketq", "async", 110, 4.0), sample("redis", "async", 100, 4.5),
                     sample("rocketq", "batched", 190, 2.0), sample("rocketq", "drain", 90, 1.0),
                     sample("redis", "drain", 100, 2.0)])  # fmt: skip
    results = check_targets(table, [
        Target("async", "redis", 1.0, cpu_at_most_peer=True),
        Target("async", "redis", 2.0, rocketq_scenario="batched"),
        Target("drain", "redis", 1.0),
        Target("sync", "redis", 1.0),
    ])  # fmt: skip
    met = [m for _, m, _ in results]
    assert met == [True, False, False, False]
    assert "1.10×" in results[0][2] and "4.0 vs 4.5" in results[0][2]
    assert "1.90×" in results[1][2]
    assert results[3][2] == "no figure for one side"


def test_a_target_with_more_cpu_than_the_peer_fails_even_when_faster() -> None:
    table = medians([sample("rocketq", "async", 200, 9.0), sample("redis", "async", 100, 4.5)])
    [(_, met, why)] = check_targets(table, [Target("async", "redis", 1.0, cpu_at_most_peer=True)])
    assert not met and "9.0 vs 4.5" in why


def test_the_table_has_a_row_per_scenario_and_compares_mapped_scenarios() -> None:
    table = medians([sample("rocketq", "async", 150, 3.0), sample("redis", "async", 100, 4.0),
                     sample("rocketq", "batched", 300, 1.0)])  # fmt: skip
    text = markdown_table(table, [("async", "1,000 in flight"), ("batched", "1,000 in flight, autoBatch")],
                          ["rocketq", "redis"], {"redis": "Redis"}, against={"batched": "async"})  # fmt: skip
    lines = text.splitlines()
    assert lines[0] == (
        "| scenario | rocketq msg/s | rocketq server µs/msg | Redis msg/s | Redis server µs/msg | rocketq / Redis |"
    )
    assert lines[2] == "| 1,000 in flight | 150 | 3.0 | 100 | 4.0 | 1.50× |"
    assert lines[3] == "| 1,000 in flight, autoBatch | 300 | 1.0 | 100 | 4.0 | 3.00× |"
