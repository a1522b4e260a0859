"""Risk tables through the workers on Redis: ``precompute --risk`` queued as a job by the
table's fingerprint, run by a real ``python -m worker``, stored block for block as one
process solves it, and read back by the next question at the same risk; a warm job of a
risk table, as the service hands one over, leaves the blocks its state's advice reads."""

from __future__ import annotations

import anyio
import pytest
import redis
from support.worker_support import (
    Children,
    block_hash,
    cli_json,
    job_record,
    start_workers,
    stored_keys,
    wait_for,
    with_store,
)

from memo_solver.core.codec import decode_block
from memo_solver.core.engine import namespace, open_engine
from memo_solver.core.game import Block
from memo_solver.core.store import Store
from memo_solver.games.yahtzee import entry_for, risk_entry_of
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.solve.game import YahtzeeGame, block_key
from memo_solver.games.yahtzee.solve.risk import RiskGame
from memo_solver.jobs.queue import Job, JobQueue
from memo_solver.stores.memory import MemoryStore

THETA = "0.1"
LOWER = RiskGame(RULE_SETS["yahtzee-lower"], float(THETA))


async def solved_here(game: RiskGame) -> dict[str, Block]:
    """Every block of the table, solved from nothing in this process on a memory store."""
    async with open_engine(game, MemoryStore()) as engine:
        await engine.block(game.root())
        return dict(await engine.blocks(_every_key(game)))


def _every_key(game: RiskGame) -> list[str]:
    """The keys reachable from the root, by the game's own successors."""
    seen, todo = {game.root()}, [game.root()]
    while todo:
        for key in game.successors(todo.pop()):
            if key not in seen:
                seen.add(key)
                todo.append(key)
    return sorted(seen)


async def solve_the_mean_table(store: Store) -> None:
    """yahtzee-lower's mean table into ``store``, by this process (a blink)."""
    mean = YahtzeeGame(LOWER.rules)
    async with open_engine(mean, store) as engine:
        await engine.block(mean.root())


def stored_block(r: redis.Redis, game: RiskGame, key: str) -> Block:
    data = r.hget(block_hash(r, namespace(game), key), key)
    assert isinstance(data, bytes)
    block = decode_block(
        data,
        fingerprint=game.fingerprint,
        key=key,
        shape=game.block_shape(key),
        unpack=lambda packed: game.unpack(key, packed),
    )
    assert block is not None
    return block


@pytest.mark.slow
def test_workers_warm_a_risk_table_that_equals_one_process_and_answers_the_next_question(
    redis_url: str, r: redis.Redis, children: Children
) -> None:
    """The worker knows the table by its fingerprint alone (``<rules>-risk100``); what it
    stores is the table one process solves, to the last bit (the same kernel, the same
    blocks), and a value at the same risk afterwards computes nothing: the mean table,
    which a question at a risk reads too (its mean values), was stored before."""
    start_workers(children, r, redis_url, ["w1"])
    with_store(redis_url, solve_the_mean_table)
    rules = ("--rules", "yahtzee-lower", "--risk", THETA)
    done = cli_json(redis_url, "precompute", *rules, "--wait")
    record = job_record(r, done["job"])
    assert (record["status"], record["rules"]) == ("done", LOWER.fingerprint)

    here = anyio.run(solved_here, LOWER)
    assert stored_keys(r, namespace(LOWER)) == set(here)
    for key, block in here.items():
        assert stored_block(r, LOWER, key).tobytes() == block.tobytes(), key

    again = cli_json(redis_url, "value", *rules)
    assert again["blocks_computed"] == 0
    assert again["certainty_equivalent"] == float(here[LOWER.root()].flat[0])

    # A warm job at another risk (as the service hands over a cold question past its
    # budget) leaves that table's blocks for the state, by the table's fingerprint.
    careful = risk_entry_of(entry_for(RULE_SETS["yahtzee-lower"]), "-0.1")
    state = '{"filled": ["chance", "yahtzee"], "dice": [6, 6, 6, 5, 3], "rerolls_left": 1}'
    job = Job.warm(careful.job_name, careful.canonical_state(state))
    with_store(redis_url, lambda store: JobQueue(store).enqueue(job))
    wait_for("the warm job", lambda: job_record(r, job.id).get("status") == "done" or None, 60)
    filled = sum(1 << LOWER.rules.category_index(name) for name in ("chance", "yahtzee"))
    after = [filled | 1 << box for box in LOWER.rules.open_boxes(filled)]
    assert {block_key(mask) for mask in (filled, *after)} <= stored_keys(r, namespace(careful.game))
