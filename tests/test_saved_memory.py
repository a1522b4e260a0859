"""What the whole-table surfaces hold with saved rolls: memory in proportion to what is
there, not to every bank by every total or every roll a turn could make.

The bank multiplies a block's turn starts by up to 2L + 1 (L boxes filled, two rerolls a
turn), and a turn may roll up to 40 times in ``maxi-yatzy-saved``; a layout that gives
each a full row or slot holds gigabytes where the game needs hundreds of megabytes.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import anyio
import numpy as np

import memo_solver
from memo_solver.core.engine import open_engine
from memo_solver.games.yahtzee.analysis.distribution import blocks_below, forward_pass
from memo_solver.games.yahtzee.analysis.simulate import GameRecord
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.rules.rule_file import parse_rule_set
from memo_solver.games.yahtzee.rules.state import start_state
from memo_solver.games.yahtzee.solve.game import YahtzeeGame
from memo_solver.games.yahtzee.solve.turn import Guideposts
from memo_solver.stores.memory import MemoryStore

EXAMPLES = Path(__file__).parent.parent / "examples" / "rules"


def small_yatzy_saved() -> dict[str, object]:
    """Yatzy with saved rolls cut to three dice and seven boxes: every layer's banks, a
    pass of a third of a CPU second."""
    document = json.loads((EXAMPLES / "yatzy-saved.json").read_text(encoding="utf-8"))
    kept = {"ones", "twos", "threes", "fours", "one_pair", "chance", "yatzy"}
    boxes = [box for box in document["boxes"] if box["name"] in kept]
    return {**document, "name": "yatzy-saved-small", "dice": 3, "upper_threshold": 25,
            "boxes": boxes}  # fmt: skip


def test_between_blocks_the_distribution_holds_each_turn_starts_window_of_totals() -> None:
    """The forward pass holds the mass of the blocks it has yet to reach, two layers' worth;
    each turn start's totals lie in a narrow window and most banks hold none, so rows of
    every total (turn starts by the game's totals, two layers' worth: 16 MB here) are
    mostly zeros. Measured: the windows take 1 MB, rows of every total so far 5.7; the
    bound, an eighth of the rectangles, lies between with room on both sides. What is
    held between blocks is the pass's alone: the blocks it reads are loaded before, and
    only what the package's code allocates is counted."""
    rules = parse_rule_set(small_yatzy_saved())
    held = [0]

    # Only what the package's own code allocated counts: a thread an earlier test left
    # (a store's, anyio's) allocates on its own clock, and would count in the process's total.
    own = [tracemalloc.Filter(True, str(Path(memo_solver.__file__).parent / "*"))]

    def progress(done: int, total: int) -> None:
        traces = tracemalloc.take_snapshot().filter_traces(own)
        held[0] = max(held[0], sum(stat.size for stat in traces.statistics("filename")))

    async def run() -> None:
        async with open_engine(YahtzeeGame(rules), MemoryStore()) as engine:
            blocks = await blocks_below(engine, rules, start_state())
        tracemalloc.start()
        try:
            scores = forward_pass(blocks, rules, start_state(), progress).probabilities
        finally:
            tracemalloc.stop()
        turn_starts = np.zeros(len(rules.categories) + 1)
        for filled in rules.reachable_masks(0):
            count = filled.bit_count()
            starts = Guideposts.reachable(rules, filled).upper.size * rules.saved_levels(count)
            turn_starts[count] += starts
        rectangles = (turn_starts[:-1] + turn_starts[1:]).max() * scores.size * scores.itemsize
        assert 0 < held[0] <= rectangles / 8, (held[0], rectangles)

    anyio.run(run)


def test_a_logged_game_with_saved_rolls_holds_a_plain_games_rolls_and_its_banks() -> None:
    """A turn of ``maxi-yatzy-saved`` may roll up to 40 times, but only rolls an earlier turn
    saved: a whole game never rolls more than its turns' own three each. So a chunk's record
    of logged games holds what ``maxi-yatzy``'s does, plus each turn's bank."""
    games = 1000
    saved = GameRecord.empty(games, RULE_SETS["maxi-yatzy-saved"])
    plain = GameRecord.empty(games, RULE_SETS["maxi-yatzy"])
    turns = len(RULE_SETS["maxi-yatzy"].categories)
    banks = games * turns * saved.saved.itemsize

    def size(record: GameRecord) -> int:
        return sum(table.nbytes for table in vars(record).values())

    assert size(saved) <= size(plain) + banks
