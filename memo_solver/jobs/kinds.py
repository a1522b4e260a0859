"""The kinds of background job, one entry each: how its message is checked (the queue) and
how a worker runs it. The kinds every game has are here; a family brings its own through
its registration (:attr:`memo_solver.games.entry.GameFamily.job_kinds`), so that neither
the queue nor the workers name a kind.
"""

from __future__ import annotations

import json
import random
import time
from typing import Final

import anyio

from memo_solver.core.engine import first_failure
from memo_solver.core.errors import UserError
from memo_solver.games import registry
from memo_solver.games.entry import GameEntry, JobKind, JobRun

_PROGRESS_S: Final = 0.5
_PROGRESS_SPAN: Final = 49
"""A precompute's progress report waits this many times its own time: 2 % of the job's."""


class JobError(UserError):
    """A job message that cannot be run (malformed, unknown rule set, bad state)."""

    field = "job"


def kinds() -> dict[str, JobKind]:
    """Every kind by name: the generic ones first, then each registered family's own (read
    at each call: a family registered in a test brings its kinds with it)."""
    families = (kind for family in registry.FAMILIES for kind in family.job_kinds)
    return {kind.name: kind for kind in (*GENERIC, *families)}


def kind_named(name: str) -> JobKind:
    try:
        return kinds()[name]
    except KeyError:
        raise JobError(f"unknown job kind {name!r} (kinds: {', '.join(kinds())})") from None


async def _precompute(run: JobRun) -> None:
    """The whole game: the root's successors queued as ``block`` jobs for every idle worker,
    the root solved here; the record keeps the progress, then the root's headline figure."""
    engine = run.engine
    game = engine.game
    if (await engine.store.coverage(engine.namespace)).blocks < game.block_count:
        # What this process still holds may be gone from the store (deleted): solve
        # into the store, not from memory.
        engine.memo.clear()
    for key in game.successors(game.root()):
        # Again even if done before: a precompute runs again when blocks are missing.
        await run.queue("block", key)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_report, run)
            root = await engine.solve_layers(game.root(), shuffle=random.Random())
            tg.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        raise first_failure(group) from None
    _, figures = run.entry.summarize_root(root)
    headline = next(iter(figures.values()))
    await run.record(blocks_done=game.block_count, value=repr(headline))


async def _report(run: JobRun) -> None:
    """A precompute's progress in its record, every half second, or less often where
    counting costs more: a count is a script per group of the store (``maxi-yatzy``: 340,
    with the record's write about 20 ms of the worker's CPU and some of Redis's), which
    every half second took 6 % of the precompute's worker. So the wait after a report is at
    least :data:`_PROGRESS_SPAN` times the report's own time, and reporting costs at most
    about 1 / (1 + :data:`_PROGRESS_SPAN`) of the job's time, whatever the store."""
    engine = run.engine
    while True:
        started = time.perf_counter()
        coverage = await engine.store.coverage(engine.namespace)
        await run.record(blocks_done=coverage.blocks, blocks_total=engine.game.block_count)
        spent = time.perf_counter() - started
        await anyio.sleep(max(_PROGRESS_S, _PROGRESS_SPAN * spent))


async def _warm(run: JobRun) -> None:
    await run.entry.warm(run.engine, run.entry.canonical_state(run.state))


def _canonical(entry: GameEntry, text: str) -> str:
    try:
        return entry.canonical_state(text)
    except ValueError as exc:
        raise JobError(f"bad state: {exc}") from None


async def _block(run: JobRun) -> None:
    """A piece a precompute fanned out, for an idle worker to help with: solved the way a
    question is (:meth:`Engine.block`), not walked a layer at a time whatever the store
    holds. A piece taken once the others have solved it is one lookup; one taken late, with
    a few blocks left, is solved top-down from them; only a cold one is walked by layers,
    in an order of its own. Walked always, each later piece claimed (and read) every block
    of its half of the game that its memo no longer held: on ``maxi-yatzy`` through two
    workers, hundreds of thousands of blocks per piece."""
    await run.engine.block(run.state, shuffle=random.Random())


def _block_key(entry: GameEntry, key: str) -> str:
    if not entry.game.is_key(key):
        raise JobError(f"bad block key {key!r} for {entry.name}")
    return key


async def _stats(run: JobRun) -> None:
    entry = run.entry
    if entry.stats is None:  # a need table (the queue checks the registry's games)
        raise JobError(f"{entry.name} has no statistics job")
    result = await entry.stats(run.engine, run.state, run.limiter)
    await run.record(result=json.dumps(result))


def _stats_state(entry: GameEntry, text: str) -> str:
    if entry.stats is None:
        raise JobError(f"{entry.name} has no statistics job")
    return _canonical(entry, text)


GENERIC: Final = (
    JobKind("precompute", _precompute),
    JobKind("warm", _warm, _canonical),  # what advice for the state reads, left in the memo
    JobKind("block", _block, _block_key),  # the pieces a precompute fans out into
    JobKind("stats", _stats, _stats_state),  # a score distribution, kept in the record
)
"""The kinds every game has (``stats`` where its entry has statistics), in the order the
queue's errors list them."""
