"""The pass over the work meetings left off their utterance path: each job once, busy meetings next time, and
the event loop never held for long."""

import asyncio
import time

from delegate.server.session.later import Later


class Job:
    def __init__(self, name: str, ran: list[str], cpu_s: float = 0.0) -> None:
        self.name, self.ran, self.cpu_s = name, ran, cpu_s
        self.busy = False

    async def run_due(self) -> None:
        end = time.perf_counter() + self.cpu_s
        while time.perf_counter() < end:  # work that holds the loop, as an extraction does
            pass
        self.ran.append(self.name)


async def until_done(later: Later) -> None:
    for _ in range(500):
        await asyncio.sleep(0.005)
        if not len(later):
            return


async def test_a_job_added_twice_runs_once_and_a_busy_one_waits_for_the_next_pass() -> None:
    ran: list[str] = []
    later = Later(delay_s=0.01)
    a, b = Job("a", ran), Job("b", ran)
    b.busy = True
    later.add(a)
    later.add(a)
    later.add(b)
    await asyncio.sleep(0.05)
    assert ran == ["a"] and len(later) == 1  # b's meeting is in the middle of a frame
    b.busy = False
    await until_done(later)
    assert ran == ["a", "b"]


async def test_a_long_pass_lets_the_loop_run_other_tasks_between_its_jobs() -> None:
    ran: list[str] = []
    later = Later(delay_s=0)
    for k in range(30):
        later.add(Job(f"job{k}", ran, cpu_s=0.001))

    async def other() -> None:
        while len([r for r in ran if r.startswith("job")]) < 30:
            ran.append("other")
            await asyncio.sleep(0)

    await asyncio.wait_for(other(), 10)
    jobs = [k for k, r in enumerate(ran) if r.startswith("job")]
    assert any(r == "other" for r in ran[jobs[0] : jobs[-1]])  # a decision would have gone in between


async def test_one_failing_job_does_not_stop_the_others() -> None:
    ran: list[str] = []

    class Failing(Job):
        async def run_due(self) -> None:
            raise RuntimeError("extractor broke")

    later = Later(delay_s=0)
    later.add(Failing("x", ran))
    later.add(Job("y", ran))
    await until_done(later)
    assert ran == ["y"]
