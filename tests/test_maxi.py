"""Maxi Yatzy's end games against the rule-book brute force, which shares no code with the
solver: the sheet's own file, read by both, with two to four boxes still open.

A whole Maxi solve is a million blocks (about 700 CPU s): the default suite checks the
reduced games here; the whole game's start value is pinned under the ``full`` marker,
computed two ways that agree to the last digit: the engine's layered solve through a store
(claims, codec, memo) and a plain bottom-up pass over a dict of blocks.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.from_thread import start_blocking_portal
from support import rulebook_brute_force as brute
from support.bottom_up import solve_all
from support.portal_engines import PortalEngines

from memo_solver.core.engine import open_engine
from memo_solver.games.yahtzee.advice.mean_advice import advise
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.rules.state import State
from memo_solver.games.yahtzee.solve.game import YahtzeeGame
from memo_solver.stores.memory import MemoryStore

TOL = 1e-9
MAXI = RULE_SETS["maxi-yatzy"]
MAXI_PIN = 394.5575068204
SHEET: dict[str, Any] = json.loads(
    (Path(__file__).parent.parent / "examples" / "rules" / "maxi-yatzy.json").read_text()
)
BOXES = [box["name"] for box in SHEET["boxes"]]


@pytest.fixture(scope="module")
def engines() -> Iterator[PortalEngines]:
    # The stack closes the engines before the portal stops their event loop.
    with start_blocking_portal() as portal, contextlib.ExitStack() as stack:
        yield PortalEngines(portal, stack)


def _filled(open_boxes: list[str]) -> int:
    return sum(1 << i for i, name in enumerate(BOXES) if name not in open_boxes)


@pytest.mark.parametrize(
    ("open_boxes", "upper"),
    [
        (["full_house", "villa", "tower"], 84),
        (["sixes", "maxi_yatzy"], 60),  # four sixes or more reach the 100 bonus
        (["ones", "three_pairs", "full_straight"], 83),  # a single one reaches it
        (["one_pair", "two_pairs", "five_of_a_kind", "chance"], 40),
    ],
)
def test_a_reduced_maxi_game_is_worth_what_the_brute_force_says(
    engines: PortalEngines, open_boxes: list[str], upper: int
) -> None:
    filled = _filled(open_boxes)
    closed = [i for i, name in enumerate(BOXES) if name not in open_boxes]
    ours = engines.call(advise, MAXI, State(filled, upper, False, None, None)).value
    assert ours == pytest.approx(brute.value(SHEET, closed, upper, False), abs=TOL)


def test_every_action_of_a_late_maxi_turn_is_worth_what_the_brute_force_says(
    engines: PortalEngines,
) -> None:
    """Three boxes open, six dice showing 3 4 4 6 6 6 (a 26-point full house, a tower
    short of one six), two rerolls left: all 24 keeps and the three boxes."""
    open_boxes = ["full_house", "tower", "chance"]
    dice = (3, 4, 4, 6, 6, 6)
    closed = [i for i, name in enumerate(BOXES) if name not in open_boxes]
    advice = engines.call(advise, MAXI, State(_filled(open_boxes), 84, False, 2, dice))
    theirs = brute.actions(SHEET, closed, 84, False, dice, 2)
    ours = {
        "keep " + (" ".join(map(str, a.keep)) or "nothing")
        if a.kind == "keep"
        else f"score {a.category}": a.value
        for a in advice.actions
    }
    assert ours.keys() == theirs.keys()
    assert len(ours) == 2 * 3 * 4 + 3  # keeps: 0-1 threes, 0-2 fours, 0-3 sixes; three boxes
    for action, value in theirs.items():
        assert ours[action] == pytest.approx(value, abs=TOL), action


@pytest.mark.full
def test_the_whole_maxi_game_is_worth_its_pin_computed_two_ways() -> None:
    assert MAXI.start_value == MAXI_PIN
    plain = solve_all(MAXI)[0]
    assert float(plain[0, 0]) == pytest.approx(MAXI_PIN, abs=TOL)

    async def layered() -> float:
        async with open_engine(YahtzeeGame(MAXI), MemoryStore()) as engine:
            return float((await engine.solve_layers(YahtzeeGame(MAXI).root()))[0, 0])

    assert anyio.run(layered) == pytest.approx(MAXI_PIN, abs=TOL)
