"""From the start of official Yahtzee: the best chance of a final score of at least T, pinned.

Two computations establish each figure (``scripts/bench/bench_need.py pins`` printed them first,
from a table at cap 400; BENCHMARKS.md, "#19 need table"): (a) the chance objective's value,
read from the start block of the whole need table (the kernel's backward values), and (b)
P(final score >= T) of the exact distribution under the target policy (the forward pass
moving the mass turn by turn by the policy's choices). They agree to 1e-9; beside them the
mean policy's P(final score >= T) from its own exact distribution (``stats --threshold``:
0.1433 for 300), which the target policy beats.

The whole table and four passes take about 8 CPU minutes and 6 GB of memory (465 CPU s,
5.9 GB peak on the 2-core machine of BENCHMARKS.md), so the test runs under the ``full``
marker (``-m full``), at cap 350 (the largest T: every chance up to the cap is exact
whatever the cap, since a need only ever reads smaller needs of the blocks after it).
"""

from __future__ import annotations

import anyio
import pytest

from memo_solver.core.engine import open_engine
from memo_solver.core.game import Block
from memo_solver.games.yahtzee.analysis.distribution import blocks_below, forward_pass, target_pass
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.rules.state import start_state
from memo_solver.games.yahtzee.solve.game import YahtzeeGame, block_key
from memo_solver.games.yahtzee.solve.need import NeedGame
from memo_solver.stores.memory import MemoryStore

pytestmark = [pytest.mark.slow, pytest.mark.full]

TOL = 1e-9
CAP = 350
BEST_CHANCE = {
    200: 0.9107607099450279,
    250: 0.5418609347818785,
    300: 0.1760187721462412,
    350: 0.09751046744842792,
}
"""The best chance of a final score of at least T from the start of ``yahtzee``."""
MEAN_POLICY_300 = 0.1433


def test_the_best_chance_of_each_final_score_is_pinned_by_two_roads() -> None:
    rules = RULE_SETS["yahtzee"]
    state = start_state()

    async def tables() -> tuple[dict[str, Block], dict[str, Block]]:
        store = MemoryStore()
        async with (
            open_engine(YahtzeeGame(rules), store) as mean,
            open_engine(NeedGame(rules, CAP), store) as need,
        ):
            for engine in (mean, need):
                await engine.solve_layers(engine.game.root())
            return await blocks_below(mean, rules, state), await blocks_below(need, rules, state)

    blocks, need_blocks = anyio.run(tables)
    start = need_blocks[block_key(0)]
    mean = forward_pass(blocks, rules, state)
    assert round(mean.survival(300), 4) == MEAN_POLICY_300
    for target, pinned in BEST_CHANCE.items():
        value = float(start[0, 0, target - 1])
        forward = target_pass(blocks, need_blocks, rules, state, target, CAP).survival(target)
        assert value == pytest.approx(pinned, abs=TOL), target
        assert forward == pytest.approx(value, abs=TOL), target
        assert forward > mean.survival(target), target
