"""Dice of Doom on the workers: real ``python -m worker`` processes on a real redis-server.

The promises tests/test_worker.py checks for Yahtzee, for the second game:

- exactly once: two workers precompute the 2x2 game's 307 blocks once between them;
- a worker killed while it holds claims of 3x3 blocks costs the other about one lease,
  the job it had taken waits out the stale time, and every value stored is the position
  solver's;
- malformed Dice of Doom jobs (a bad block key, a bad board, a statistics job, which this
  game has not) are acknowledged, logged and survived.

The process helpers are tests/support/worker_support.py's.
"""

from __future__ import annotations

import json
import random
import time
from fractions import Fraction
from functools import partial

import anyio
import pytest
import redis
import redis.asyncio as aioredis
from support.worker_support import (
    HEARTBEAT_S,
    HOST,
    TAKE_OVER_WITHIN_S,
    Child,
    Children,
    Stalls,
    claim_holders,
    cli_json,
    counters_after_a_beat,
    heartbeat,
    held_by,
    job_record,
    last_touch,
    pending,
    refused_jobs,
    start_workers,
    stored_blocks,
    taken_over_by,
    wait_for,
)
from test_doom_game import every_2x2_outcome

from memo_solver.core.engine import namespace, open_engine
from memo_solver.games.dice_of_doom.advice import DoomAdvice, advise
from memo_solver.games.dice_of_doom.board import Board
from memo_solver.games.dice_of_doom.game import doom_game
from memo_solver.games.dice_of_doom.tree import DoomSolver, Position, make_position
from memo_solver.jobs import queue as jobs
from memo_solver.stores.redis import RedisStore

SMALL, LARGE = doom_game(2), doom_game(3)
SMALL_NS, LARGE_NS = namespace(SMALL), namespace(LARGE)
BOOK = "a-3 b-3 / a-2 b-2"
"""The book's first 2x2 game: a to move loses it."""
BIG = "a-2 a-2 b-2 / a-3 b-1 a-3 / a-3 a-3 b-3"
SIXTEEN_DICE = "a-2 b-2 a-2 / b-1 a-3 b-1 / a-2 b-2 a-1"
"""A 3x3 board whose turn starts need about 5,600 blocks below them: seconds of work."""


def enqueue(url: str, job: jobs.Job) -> str:
    """Queue a job the way the CLI and the API do; its id."""

    async def go() -> str:
        async with aioredis.Redis.from_url(url) as client:
            job_id, queued = await jobs.enqueue(client, job)
        assert queued
        return job_id

    return anyio.run(go)


def warm_job(game: str, board: str, to_move: str) -> jobs.Job:
    return jobs.Job.warm(game, json.dumps({"board": board, "to_move": to_move}))


def blocks_done(r: redis.Redis, ns: str) -> int:
    return stored_blocks(r, ns)


def done_record(r: redis.Redis, job_id: str) -> dict[str, str] | None:
    record = job_record(r, job_id)
    return record if record.get("status") == "done" else None


def stored_values(url: str, positions: list[Position]) -> dict[Position, Fraction]:
    """The values the 3x3 turn starts among ``positions`` have in Redis (stored ones only)."""

    async def go() -> dict[Position, Fraction]:
        where = {p: LARGE.locate(p.board.owners, p.board.dice, p.player) for p in positions}
        async with RedisStore(url) as store, open_engine(LARGE, store) as engine:
            blocks = await engine.stored(sorted({key for key, _ in where.values()}))
        return {
            p: Fraction(float(blocks[key][index]))
            for p, (key, index) in where.items()
            if key in blocks
        }

    return anyio.run(go)


def memo_advice(url: str, position: Position) -> DoomAdvice:
    """Advice for a 3x3 position with Redis's memo to read from."""

    async def go() -> DoomAdvice:
        async with RedisStore(url) as store, open_engine(LARGE, store) as engine:
            return await advise(position, engine, DoomSolver(3), anyio.CapacityLimiter(1))

    return anyio.run(go)


def random_turn_starts(count: int, most_dice: int, seed: int) -> list[Position]:
    rng, found = random.Random(seed), list[Position]()
    while len(found) < count:
        dice = [rng.choice((1, 1, 2, 2, 3)) for _ in range(9)]
        if sum(dice) <= most_dice:
            owners = [rng.randrange(2) for _ in range(9)]
            found.append(Position(Board(3, tuple(owners), tuple(dice)), rng.randrange(2)))
    return found


# --- exactly once -----------------------------------------------------------------------------


def test_two_workers_precompute_the_2x2_game_computing_each_block_once(
    redis_url: str, r: redis.Redis, children: Children
) -> None:
    names = ["w1", "w2"]
    start_workers(children, r, redis_url, names)

    result = cli_json(redis_url, "precompute", "--game", "dice-of-doom", "--size", "2", "--wait")

    assert (result["status"], result["rules"], result["blocks_total"]) == (
        "done",
        "dice-of-doom-2x2",
        307,
    )
    outcome = every_2x2_outcome()  # wins, ties, losses and the expected share
    assert {k: result[k] for k in outcome} == pytest.approx(outcome, abs=1e-12)
    assert blocks_done(r, SMALL_NS) == 307
    assert claim_holders(r) == []
    workers = counters_after_a_beat(redis_url, names)
    computed = {name: row["blocks_computed"] for name, row in workers.items()}
    print(f"blocks computed by each worker: {computed}")
    assert sum(computed.values()) == 307, "a block was computed twice, or not at all"
    assert pending(r) == 0


# --- a worker killed while it holds claims ----------------------------------------------------


@pytest.mark.slow
def test_a_killed_worker_costs_the_other_about_one_lease(
    redis_url: str, r: redis.Redis, children: Children
) -> None:
    """Two warm jobs on overlapping 3x3 positions, one per worker: the victim's claims
    lapse after the lease, and its job is taken over after the stale time."""
    lease = 2.0
    stale_job_s = max(5 * HEARTBEAT_S, 3 * lease)  # memo_solver.jobs.settings
    workers = start_workers(children, r, redis_url, ["w1", "w2"], "--lease", str(lease))
    job_ids = [
        enqueue(redis_url, warm_job("dice-of-doom-3x3", SIXTEEN_DICE, player)) for player in "ab"
    ]

    def running(worker: Child) -> str:
        return (heartbeat(r, worker.name) or {}).get("running", "")

    def a_victim() -> Child | None:
        if blocks_done(r, LARGE_NS) < 500 or not all(running(w) for w in workers):
            return None  # let both jobs get going first
        return next((w for w in workers if held_by(r, w, LARGE_NS) > 0), None)

    victim = wait_for("both workers busy, one holding claims", a_victim, 60, 0.02)
    victims_job = running(victim)
    blocks_at_kill = blocks_done(r, LARGE_NS)
    victim.process.kill()
    killed_at = time.monotonic()
    touched_at = last_touch(r, victim)
    victim.finish(10)
    survivor = next(w for w in workers if w is not victim)
    survivors_job = next(job for job in job_ids if job != victims_job)
    assert victims_job in job_ids

    # Idle time, not wall time: the survivor computes the rest alone, slower on a loaded
    # machine, but stands idle at most about a lease (the victim's claims lapsing, noticed at
    # the next recheck a second later, then a batch computed) until its own job is done; and
    # about the stale time until it takes the victim's job over (a matter of timers alone,
    # unlike the computing that follows it).
    stalls = Stalls(partial(blocks_done, r, LARGE_NS), killed_at)
    stall, _ = stalls.until(partial(done_record, r, survivors_job), 300)
    waited, _ = stalls.until(partial(taken_over_by, r, victims_job, survivor), stale_job_s + 300)
    taken_after = time.monotonic() - killed_at
    record = wait_for("the victim's job done", partial(done_record, r, victims_job), 300)
    print(
        f"killed {victim.name} at {blocks_at_kill} blocks; its job taken over {taken_after:.1f} s"
        f" later; the survivor stood idle at most {stall:.1f} s for its own job, {waited:.1f} s"
        f" until the takeover ({blocks_done(r, LARGE_NS)} blocks)"
    )
    assert stall < lease + 3, f"the survivor stood idle {stall:.1f} s"
    assert waited < stale_job_s + TAKE_OVER_WITHIN_S, f"the survivor stood idle {waited:.1f} s"
    # The victim's entry went stale the stale time after its last touch, which Redis dates.
    assert killed_at + taken_after - touched_at >= stale_job_s, "taken before it went stale"
    assert record["worker"] == survivor.name
    assert [t for t in claim_holders(r) if t.startswith(f"{HOST}/{victim.pid}/")] == []

    # Every value stored is the position solver's, and advice reads the memo.
    for player in "ab":
        position = make_position(SIXTEEN_DICE, player)
        advice, solved = memo_advice(redis_url, position), DoomSolver(3).analyse(position)
        assert advice.source == "memo"
        assert (advice.analysis.value, advice.analysis.moves) == (solved.value, solved.moves)
        assert advice.analysis.best == solved.best
    stored = stored_values(redis_url, random_turn_starts(300, 15, seed=5))
    solver = DoomSolver(3)
    print(f"{len(stored)} of 300 random turn starts with 15 dice or fewer are stored")
    assert len(stored) >= 100, f"only {len(stored)} of the sample are stored"
    for position, value in stored.items():
        assert value == solver.value(position), position


# --- bad data ---------------------------------------------------------------------------------


def test_malformed_dice_of_doom_jobs_are_acknowledged_logged_and_survived(
    redis_url: str, r: redis.Redis, children: Children
) -> None:
    (worker,) = start_workers(children, r, redis_url, ["w1"])
    position = {"board": BIG, "to_move": "a"}
    malformed: list[dict[str, str]] = [
        {"kind": "block", "rules": "dice-of-doom-3x3", "state": "a8-000"},  # under 9 dice
        {"kind": "block", "rules": "dice-of-doom-2x2", "state": "zz"},
        {"kind": "block", "rules": "dice-of-doom-2x2", "state": ""},
        {"kind": "warm", "rules": "dice-of-doom-2x2", "state": json.dumps(position)},
        {
            "kind": "warm",
            "rules": "dice-of-doom-3x3",
            "state": json.dumps({"board": BIG.replace("b-1", "b-4"), "to_move": "a"}),
        },
        {
            "kind": "warm",
            "rules": "dice-of-doom-2x2",
            "state": json.dumps({"board": "a-1 c-1 / a-1 a-1", "to_move": "a"}),
        },
        {
            "kind": "warm",
            "rules": "dice-of-doom-2x2",
            "state": json.dumps({"board": BOOK, "to_move": "c"}),
        },
        {"kind": "warm", "rules": "dice-of-doom-2x2", "state": "not json"},
        {"kind": "warm", "rules": "dice-of-doom-2x2", "state": "[1, 2]"},
        {"kind": "stats", "rules": "dice-of-doom-3x3", "state": json.dumps(position)},
        {"kind": "precompute", "rules": "dice-of-doom-4x4"},
    ]
    errors = refused_jobs(r, worker, malformed)
    for words in (
        "bad block key 'a8-000' for dice-of-doom-3x3",
        "got 9 hexes; a 2x2 board needs 4",
        "hex 4 'b-4' has 4 dice",
        "hex 1 'c-1' belongs to 'c'",
        "player 'c' is unknown",
        "dice-of-doom-3x3 has no statistics job",
        "unknown rule set 'dice-of-doom-4x4'",
    ):
        assert any(words in line for line in errors), (words, errors)
    assert worker.process.poll() is None
    assert blocks_done(r, SMALL_NS) == blocks_done(r, LARGE_NS) == 0

    # And the worker still serves good Dice of Doom jobs: a warm job fills what advice needs.
    good = enqueue(redis_url, warm_job("dice-of-doom-2x2", BOOK, "a"))
    wait_for("the good warm job", lambda: done_record(r, good), 30)
    advice = cli_json(redis_url, "advise", "--game", "dice-of-doom", BOOK)
    assert (advice["source"], advice["value"]) == ("memo", "0")
    assert pending(r) == 0
