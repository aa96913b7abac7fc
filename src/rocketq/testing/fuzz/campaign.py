"""One whole fuzz campaign: start ``rocketq standalone``, make the kept state, fuzz, check, restart, check.

Used by ``make fuzz`` (``python -m rocketq.testing.fuzz``) and by tests/integration/test_wire_fuzz.py, which
asserts on the result.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

from rocketq.testing.fuzz.runner import FuzzConfig, FuzzReport, FuzzRunner, Target
from rocketq.testing.fuzz.state import StateKeeper
from rocketq.testing.process import StandaloneProcess

PROBE_TOPIC = "KeepTopicA"
#: a generous bound for a graceful stop (it saves every manager and closes the store)
STOP_TIMEOUT = 120.0


@dataclass(slots=True)
class CampaignResult:
    report: FuzzReport
    #: what did not work after the run: normal operations, the kept state, the graceful stop, the restart
    problems: list[str] = field(default_factory=list)
    stop_exit_code: int | None = None
    #: tracebacks in the log during the operations after the run and around the restart
    later_tracebacks: int = 0


class Campaign:
    def __init__(self, data_dir: Path, log_path: Path, config: FuzzConfig) -> None:
        self.data_dir = data_dir
        self.log_path = log_path
        self.config = config

    async def run(self) -> CampaignResult:
        proc = await StandaloneProcess.start(self.data_dir, log_path=self.log_path)
        try:
            keeper = StateKeeper(proc.namesrv_addr, proc.broker_addr)
            try:
                await keeper.remember_config()
                problems = await keeper.add_topic(PROBE_TOPIC)
                problems += await keeper.add_group("KeepGroupA", PROBE_TOPIC)
                if problems:
                    raise RuntimeError(f"cannot make the kept state before fuzzing: {problems}")
                target = Target(proc.namesrv_addr, proc.broker_addr, proc.proc.pid, self.log_path, PROBE_TOPIC,
                                lambda: proc.proc.returncode is None, proc.kill9)  # fmt: skip
                runner = FuzzRunner(target, self.config)
                report = await runner.run()
                result = CampaignResult(report)
                if report.crashed:
                    why = " (killed by the run: memory above the cap)" if report.killed_for_memory else ""
                    result.problems.append(f"the server exited with {proc.proc.returncode} during the run{why}")
                    return result
                state = keeper.state
                if not report.hangs:
                    # normal operations after the run: a send, a new topic, a new group's pull
                    result.problems += await keeper.restore_config()
                    result.problems += await keeper.check()
                    result.problems += await keeper.add_topic("KeepTopicB")
                    result.problems += await keeper.add_group("KeepGroupB", PROBE_TOPIC)
                    result.problems += await keeper.add_group("KeepGroupC", "KeepTopicB")
            finally:
                await keeper.close()
            result.stop_exit_code = await self._stop(proc, result)
        finally:
            proc.kill9()
            await proc.proc.wait()
        # a restart on the same store: everything kept is still there, and it still takes new work
        proc = await StandaloneProcess.start(self.data_dir, log_path=self.log_path)
        try:
            keeper = StateKeeper(proc.namesrv_addr, proc.broker_addr, state)
            try:
                result.problems += [f"after the restart: {p}" for p in await keeper.check()]
                result.problems += [f"after the restart: {p}" for p in await keeper.add_topic("KeepTopicC")]
            finally:
                await keeper.close()
            await self._stop(proc, result, "after the restart ")
        finally:
            proc.kill9()
            await proc.proc.wait()
        runner.scanner.scan()
        result.later_tracebacks = runner.scanner.tracebacks - report.tracebacks
        return result

    async def _stop(self, proc: StandaloneProcess, result: CampaignResult, when: str = "") -> int | None:
        """SIGTERM, and the exit code; a stop that does not finish within ``STOP_TIMEOUT`` is a problem."""
        try:
            async with asyncio.timeout(STOP_TIMEOUT):
                code = await proc.stop()
        except TimeoutError:
            result.problems.append(f"the graceful stop {when}did not finish within {STOP_TIMEOUT:.0f} s")
            return None
        if code != 0:
            result.problems.append(f"the graceful stop {when}exited with {code}")
        return code
