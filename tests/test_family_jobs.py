"""A family brings its own kinds of background job, and its own commands, with its
registration: a toy family registered here, with a job kind and a command of its own, has its
jobs checked by the queue and run by a worker and its command run as a user would, with no
line of the queue, the workers or the command line written for it.
"""

from __future__ import annotations

import argparse
import json
import sys
import types
from collections.abc import Iterator, Mapping, Sequence

import anyio
import numpy as np
import pytest

from memo_solver.cli import main as memo_cli
from memo_solver.cli.command import Command, FamilyCommands, on_store
from memo_solver.cli.common import Output, UsageError
from memo_solver.core.game import Block, Packed
from memo_solver.games import registry
from memo_solver.games.entry import GameEntry, GameFamily, JobKind, JobRun, Parameter
from memo_solver.jobs.queue import Job, JobError, JobQueue
from memo_solver.jobs.settings import WorkerSettings
from memo_solver.jobs.storage import Location, open_store_and_queue
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

    def values_below(self, key: str) -> int:
        return int(key) + 1

    def successors(self, key: str) -> Sequence[str]:
        return [str(int(key) - 1)] if int(key) else []

    def layers(self, key: str) -> Sequence[Sequence[str]]:
        return [[str(rung)] for rung in range(int(key) + 1)]

    def block_cost(self, key: str) -> float:
        return 1.0

    def pack(self, key: str, block: Block) -> Packed:
        return block

    def unpack(self, key: str, packed: Block) -> Block:
        return packed

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


# --- one toy family with a command and a job kind of its own -----------------------------


def _climb_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("rung", help="the rung whose height a worker computes")
    sub.add_argument("--rungs", type=int, default=3, choices=(2, 3), help="the ladder's size")


def _climb(args: argparse.Namespace, location: Location, out: Output) -> int:
    """Queue a ``climb`` job for the workers: the family's command, beside its job kind."""
    job = Job.parse({"kind": "climb", "rules": f"ladder-{args.rungs}", "state": args.rung})

    async def enqueue() -> None:
        store, queue = open_store_and_queue(location)
        if queue is None:
            raise UsageError("climb: the workers' jobs need a Redis store (--redis URL)")
        async with store:
            await queue.enqueue(job)

    anyio.run(enqueue)
    out.emit({"job": job.id}, f"queued {job.id}")
    return 0


@pytest.fixture
def ladder_with_a_command(monkeypatch: pytest.MonkeyPatch, with_ladder: None) -> None:
    """The ladder's command-line module, where the command line looks for a family's (by
    its name): registered in this process, no file written and none edited."""
    module = types.ModuleType("memo_solver.cli.games.ladder")
    climb_command = Command("climb", "queue a ladder's climb", _climb_options, on_store(_climb))
    module.CLI = FamilyCommands(commands=(climb_command,))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)


@pytest.mark.slow
@pytest.mark.usefixtures("ladder_with_a_command")
def test_a_familys_own_command_queues_its_own_job_kind_and_a_worker_runs_it(
    redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The whole of a new game's surfaces from its registration alone: its command, run as
    a user would, queues a job of its own kind, and a worker runs it."""
    assert memo_cli.main(["climb", "--redis", redis_url, "02", "--json"]) == 0
    job_id = json.loads(capsys.readouterr().out)["job"]

    async def work() -> dict[str, str]:
        async with RedisStore(redis_url) as store:
            queue = JobQueue(store)
            settings = WorkerSettings(redis_url=redis_url, worker_id="w-climb", heartbeat_s=0.2)
            worker = Worker(settings, JobQueue(RedisStore(redis_url)))
            async with anyio.create_task_group() as tg:
                tg.start_soon(worker.run)
                # As above: the bound only catches a job never run.
                with anyio.fail_after(60):
                    while (record := await queue.record(job_id) or {}).get("status") != "done":
                        assert record.get("status") != "failed", record
                        await anyio.sleep(0.05)
                tg.cancel_scope.cancel()
        return record

    record = anyio.run(work)
    assert json.loads(record["result"]) == {"rung": 2, "height": 3.0}
    assert memo_cli.main(["climb", "--redis", redis_url, "7"]) == 2
    assert "no rung '7' on ladder-3" in capsys.readouterr().err
