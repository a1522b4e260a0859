"""A family brings its own kinds of background job with its registration: a toy family
registered here, with a job kind of its own, has it checked by the queue and run by a
worker, with no line of the queue or the workers written for it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence

import anyio
import numpy as np
import pytest

from memo_solver.core.game import Block
from memo_solver.games import registry
from memo_solver.games.entry import GameEntry, GameFamily, JobKind, JobRun, Parameter
from memo_solver.jobs.queue import Job, JobError, JobQueue
from memo_solver.jobs.settings import WorkerSettings
from memo_solver.jobs.worker import Worker
from memo_solver.stores.redis import RedisStore


class Ladder:
    """A toy game: rung ``k`` holds k + 1, one more than the rung below it."""

    def __init__(self, rungs: int) -> None:
        self.rungs = rungs

    @property
    def name(self) -> str:
        return f"ladder-{self.rungs}"

    @property
    def fingerprint(self) -> str:
        return f"ladder-v1-{self.rungs}"

    @property
    def block_count(self) -> int:
        return self.rungs + 1

    def root(self) -> str:
        return str(self.rungs)

    def is_key(self, key: str) -> bool:
        return key.isdigit() and int(key) <= self.rungs

    def block_shape(self, key: str) -> tuple[int, ...]:
        return (1,)

    def successors(self, key: str) -> Sequence[str]:
        return [str(int(key) - 1)] if int(key) else []

    def layers(self, key: str) -> Sequence[Sequence[str]]:
        return [[str(rung)] for rung in range(int(key) + 1)]

    def solve(self, key: str, successors: Mapping[str, Block]) -> Block:
        below = sum(float(successors[s][0]) for s in self.successors(key))
        return np.array([below + 1.0])

    def solve_many(self, keys: Sequence[str], successors: Mapping[str, Block]) -> Sequence[Block]:
        return [self.solve(key, successors) for key in keys]


def ladder(rungs: int) -> GameEntry:
    async def warm(engine: object, text: str) -> None:
        raise NotImplementedError

    return GameEntry(
        game=Ladder(rungs),
        description=f"a ladder of {rungs} rungs",
        summarize_root=lambda root: (f"top {float(root[0])}", {"value": float(root[0])}),
        canonical_state=lambda text: text,
        warm=warm,
    )


def rung(entry: GameEntry, text: str) -> str:
    """The ``climb`` job's state: a rung of the ladder, written without leading zeros."""
    if not entry.game.is_key(text.strip()):
        raise ValueError(f"no rung {text!r} on {entry.name}")
    return str(int(text))


async def climb(run: JobRun) -> None:
    """The height of a rung, solved on the shared memo and kept in the job's record."""
    height = float((await run.engine.block(run.state))[0])
    await run.record(result=json.dumps({"rung": int(run.state), "height": height}))


LADDER = GameFamily(
    name="ladder",
    parameter=Parameter(
        "--rungs", "rungs", default=2, game_name=lambda n: f"ladder-{n}", type=int, choices=(2, 3)
    ),
    entries=lambda: [ladder(2), ladder(3)],
    job_kinds=(JobKind("climb", climb, rung),),
)


@pytest.fixture
def with_ladder(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The ladder registered after the built-in families, the registry built afresh."""
    monkeypatch.setattr(registry, "FAMILIES", (*registry.FAMILIES, LADDER))
    registry.registry.cache_clear()
    yield
    registry.registry.cache_clear()


def test_a_familys_job_kind_comes_with_its_registration() -> None:
    with pytest.raises(JobError, match=r"unknown job kind 'climb' \(kinds: precompute, warm, "):
        Job.parse({"kind": "climb", "rules": "yahtzee", "state": "1"})


@pytest.mark.usefixtures("with_ladder")
def test_the_queue_checks_a_familys_job_with_the_familys_own_rule() -> None:
    assert Job.parse({"kind": "climb", "rules": "ladder-3", "state": " 02"}).state == "2"
    with pytest.raises(JobError, match="no rung '4' on ladder-3"):
        Job.parse({"kind": "climb", "rules": "ladder-3", "state": "4"})
    with pytest.raises(JobError, match="kinds: precompute, warm, block, stats, climb"):
        Job.parse({"kind": "descend", "rules": "ladder-3", "state": "1"})


@pytest.mark.slow
@pytest.mark.usefixtures("with_ladder")
async def test_a_worker_runs_a_familys_own_job_kind(redis_url: str) -> None:
    job = Job.parse({"kind": "climb", "rules": "ladder-3", "state": "2"})
    async with RedisStore(redis_url) as store:
        queue = JobQueue(store)
        await queue.enqueue(job)
        settings = WorkerSettings(redis_url=redis_url, worker_id="w-ladder", heartbeat_s=0.2)
        worker = Worker(settings, JobQueue(RedisStore(redis_url)))
        async with anyio.create_task_group() as tg:
            tg.start_soon(worker.run)
            # The worker opens an engine per game of the registry, then takes the job: a
            # few seconds on a loaded machine; the bound only catches a job never run.
            with anyio.fail_after(60):
                while (record := await queue.record(job.id) or {}).get("status") != "done":
                    assert record.get("status") != "failed", record
                    await anyio.sleep(0.05)
            tg.cancel_scope.cancel()
    assert json.loads(record["result"]) == {"rung": 2, "height": 3.0}
    assert record["worker"] == "w-ladder"
