"""Saved rolls: the solver's turn chain against a brute force and against games a player works
out by hand.

Unused rolls carry over: a turn adds its ``rerolls + 1`` rolls to the bank, the first roll is
made, and the rolls left when it scores start the next turn's bank. The brute force
(``saved_brute_force.py``) plays the rule-file dict with keeps as sets of dice positions and
the bank counted explicitly, sharing no code with the solver; here the solver solves the same
dict through :func:`parse_rule_set`, bottom up, a layer at a time as a whole solve does.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import anyio
import bottom_up
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from support import rulebook_brute_force, saved_brute_force as brute
from support.closed_forms import chance_by_rolls
from support.rule_strategies import tiny_saved_rule_sets, tiny_saved_states

from memo_solver.core.engine import open_engine
from memo_solver.core.game import Block
from memo_solver.games.yahtzee.advice.mean_advice import Advice, advise
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.rules.rule_file import (
    parse_rule_set,
    read_rule_file,
    rule_set_document,
)
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.rules.state import parse_state
from memo_solver.games.yahtzee.solve.game import YahtzeeGame, block_key
from memo_solver.games.yahtzee.solve.one_roll import roll_values
from memo_solver.stores.memory import MemoryStore
from memo_solver.stores.sqlite import SQLiteStore

TOL = 1e-9
EXAMPLES = Path(__file__).parent.parent / "examples" / "rules"


def solve_game(rules: RuleSet) -> dict[int, Block]:
    """Every block of the game by filled mask, a layer at a time, the end first."""
    game = YahtzeeGame(rules)
    by_key: dict[str, Block] = {}
    for layer in rules.layers(0):
        keys = [block_key(mask) for mask in layer]
        by_key |= zip(keys, game.solve_many(keys, by_key), strict=True)
    return {int(key, 16): block for key, block in by_key.items()}


def levels(rules: RuleSet, upper: int, fifty: bool) -> tuple[int, int]:
    """Where a scorecard's upper total and fifty flag sit in its block."""
    level = min(upper, rules.upper_threshold) if rules.n_upper_levels > 1 else 0
    return level, int(fifty) if rules.n_bonus_levels > 1 else 0


def solver_actions(
    rules: RuleSet,
    blocks: dict[int, Block],
    filled: int,
    at: tuple[int, int],
    dice: tuple[int, ...],
    rolls_left: int,
) -> dict[str, float]:
    """The solver's value of every action the brute force names: each legal box, and each
    keep that rerolls a die."""
    universe = rules.universe
    successors = [blocks[filled | 1 << box] for box in rules.open_boxes(filled)]
    boxes, scores, keeps = roll_values(
        rules, filled, successors, at, universe.roll_index[dice], rolls_left
    )
    named = {
        f"score {rules.categories[box].name}": float(value)
        for box, value in zip(boxes, scores, strict=True)
        if value > -np.inf  # a box the Joker forbids
    }
    if rolls_left:
        for k in universe.sub_keeps(dice):
            kept = universe.keeps[k]
            if len(kept) < rules.dice:
                named[rulebook_brute_force.keep_name(kept)] = float(keeps[k])
    return named


# --- against the brute force ------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_every_turn_start_and_action_is_the_brute_forces(data: st.DataObject) -> None:
    document = data.draw(tiny_saved_rule_sets(joker=True))
    rules = parse_rule_set(document)
    blocks = solve_game(rules)
    for _ in range(4):
        state = data.draw(tiny_saved_states(document))
        filled = sum(1 << box for box in state.filled)
        at = levels(rules, state.upper, state.fifty)
        start = blocks[filled][(*at, state.saved)]
        expected = brute.value(document, state.filled, state.upper, state.fifty, state.saved)
        assert start == pytest.approx(expected, abs=TOL)
        if state.dice is None or state.rolls_left is None:
            continue
        mine = solver_actions(rules, blocks, filled, at, state.dice, state.rolls_left)
        theirs = brute.actions(
            document, state.filled, state.upper, state.fifty, state.dice, state.rolls_left
        )
        assert mine == pytest.approx(theirs, abs=TOL)


@settings(max_examples=15, deadline=None)
@given(tiny_saved_rule_sets())
def test_a_turn_start_is_never_worth_less_with_one_more_roll_saved(document: Any) -> None:
    for block in solve_game(parse_rule_set(document)).values():
        more = np.diff(block, axis=-1)
        assert (more[~np.isnan(more)] >= -1e-12).all()  # NaN: levels no game reaches


# --- by hand ------------------------------------------------------------------------------------


def five_dice(*boxes: dict[str, Any], **top: Any) -> RuleSet:
    return parse_rule_set(
        {"name": "hand", "dice": 5, "saved_rolls": True, **top, "boxes": list(boxes)}
    )


FILLER = [{"name": f"pad{i}", "kind": "upper", "face": i} for i in (1, 2, 3)]
"""Boxes already filled, so that a bank of up to six rolls can stand before the last box."""


def test_chance_alone_is_worth_its_closed_form_for_every_bank() -> None:
    """Three boxes filled at two rerolls a turn: a bank of 0..6, so 3..9 rolls for Chance."""
    rules = five_dice(*FILLER, {"name": "chance", "kind": "chance"})
    blocks = solve_game(rules)
    last = blocks[0b0111][0, 0]
    assert last.shape == (7,)
    for saved in range(7):
        assert last[saved] == pytest.approx(5 * float(chance_by_rolls(saved + 3)), abs=TOL)


def alike_within(rolls: int, dice: int = 5) -> float:
    """The chance of all dice alike within ``rolls`` rolls, keeping the most common face (the
    best play for it): a chain over how many dice already match, solved by matrix powers."""
    step = np.zeros((dice + 1, dice + 1))
    for held in range(1, dice + 1):
        for throw in itertools.product(range(1, 7), repeat=dice - held):
            counts = [throw.count(face) for face in range(1, 7)]
            best = max(held + counts[0], *counts[1:])  # face 1 stands for the face held
            step[held, best] += 6.0 ** -(dice - held)
    first = np.zeros(dice + 1)
    for throw in itertools.product(range(1, 7), repeat=dice):
        first[max(throw.count(face) for face in range(1, 7))] += 6.0**-dice
    return float((first @ np.linalg.matrix_power(step, rolls - 1))[dice])


def test_an_all_alike_box_alone_is_worth_the_chance_of_all_alike_within_the_rolls() -> None:
    rules = five_dice(*FILLER, {"name": "yatzy", "kind": "all_alike", "points": 50})
    last = solve_game(rules)[0b0111][0, 0]
    for saved in range(7):
        assert last[saved] == pytest.approx(50 * alike_within(saved + 3), abs=TOL)


def test_a_cap_of_0_is_the_game_without_the_rule_to_the_bit() -> None:
    document = rule_set_document(RULE_SETS["yatzy"])
    plain = RULE_SETS["yatzy"]
    capped = parse_rule_set(dict(document, saved_rolls=True, max_saved=0))
    assert capped.fingerprint != plain.fingerprint
    below = plain.all_filled & ~0b1110_0000_0010_0  # a few boxes open: every layer is quick
    game, capped_game = YahtzeeGame(plain), YahtzeeGame(capped)
    plain_blocks: dict[str, Block] = {}
    capped_blocks: dict[str, Block] = {}
    for layer in plain.layers(below):
        keys = [block_key(mask) for mask in layer]
        plain_blocks |= zip(keys, game.solve_many(keys, plain_blocks), strict=True)
        capped_blocks |= zip(keys, capped_game.solve_many(keys, capped_blocks), strict=True)
    for key, block in plain_blocks.items():
        assert capped_blocks[key].shape == (*block.shape, 1)
        assert capped_blocks[key][..., 0].tobytes() == block.tobytes()


# --- advice: what a player reads ----------------------------------------------------------------


def advice_for(rules: RuleSet, text: str) -> Advice:
    async def run() -> Advice:
        async with open_engine(YahtzeeGame(rules), MemoryStore()) as engine:
            return await advise(engine, rules, parse_state(text, rules))

    return anyio.run(run)


@settings(max_examples=20, deadline=None)
@given(st.data())
def test_advice_ranks_every_action_at_the_brute_forces_value(data: st.DataObject) -> None:
    """Through the state a player types and the engine's lazy solve: every action the brute
    force offers, no other, each at its value."""
    document = data.draw(tiny_saved_rule_sets(joker=True))
    rules = parse_rule_set(document)
    state = data.draw(tiny_saved_states(document))
    filled = [rules.categories[box].name for box in sorted(state.filled)]
    text = f"filled={','.join(filled) or 'none'} upper={state.upper}"
    text += " bonus=yes" if state.fifty and rules.yahtzee_bonus else ""
    if state.dice is None or state.rolls_left is None:
        advice = advice_for(rules, f"{text} saved={state.saved}")
        expected = brute.value(document, state.filled, state.upper, state.fifty, state.saved)
        assert advice.value == pytest.approx(expected, abs=TOL)
        return
    dice = "".join(map(str, state.dice))
    advice = advice_for(rules, f"{text} dice={dice} rolls={state.rolls_left}")
    mine = {
        rulebook_brute_force.keep_name(a.keep) if a.kind == "keep" else f"score {a.category}": (
            a.value
        )
        for a in advice.actions
    }
    theirs = brute.actions(
        document, state.filled, state.upper, state.fifty, state.dice, state.rolls_left
    )
    assert mine == pytest.approx(theirs, abs=TOL)


def test_advice_says_what_becomes_of_the_bank() -> None:
    """Yatzy with saved rolls, Fives, Chance and Yatzy open, 5 5 5 1 2 with six rolls left:
    keeping the fives leaves five rolls, scoring carries all six to the last two turns."""
    rules = read_rule_file(EXAMPLES / "yatzy-saved.json")
    advice = advice_for(rules, "open=fives,chance,yatzy dice=55512 rolls=6")
    best, fives = advice.actions[0], advice.actions[1]
    assert best.words() == "keep 5 5 5 and reroll 2 dice (5 rolls left after it)"
    assert fives.words() == "score 15 in Fives and carry 6 rolls"
    assert best.to_json()["rolls_left_after"] == 5
    assert fives.to_json()["carried"] == 6
    assert not any(a.kind == "keep" and not a.rerolled for a in advice.actions)
    capped = parse_rule_set(dict(rule_set_document(rules), max_saved=2))
    capped_advice = advice_for(capped, "open=fives,chance,yatzy dice=55512 rolls=4")
    fives = next(a for a in capped_advice.actions if a.category == "fives")
    assert fives.words() == "score 15 in Fives and carry 2 rolls"
    plain = advice_for(RULE_SETS["yatzy"], "open=fives,chance,yatzy dice=55512 rerolls=2")
    assert plain.actions[0].words() == "keep 5 5 5 and reroll 2 dice"
    assert "carried" not in plain.actions[1].to_json()


# --- pinned: two computations of each value ---------------------------------------------------

FORCED = json.loads((EXAMPLES / "yatzy-forced.json").read_text())
FORCED_SAVED_PINS = {None: 174.0530941844, 2: 146.9735307708, 0: 122.5585273964}
"""Forced Yatzy (boxes in scorecard order) with saved rolls, by cap: no cap, 2, and 0 (the
forced game's own published-here value, ``test_api_rules.FORCED_PIN``). Each was computed by
the engine through a store and by ``scripts/tools/bottom_up.py``, which share only the kernel."""


@pytest.mark.parametrize("cap", list(FORCED_SAVED_PINS))
def test_forced_yatzy_with_saved_rolls_by_a_store_and_by_a_bottom_up_pass(
    cap: int | None, tmp_path: Path
) -> None:
    rules = parse_rule_set(dict(FORCED, saved_rolls=True, max_saved=cap))
    pin = FORCED_SAVED_PINS[cap]

    async def by_the_engine() -> float:
        async with (
            SQLiteStore(tmp_path / "memo.sqlite") as store,
            open_engine(YahtzeeGame(rules), store) as engine,
        ):
            block = await engine.solve_layers(block_key(0))
        return float(block[0, 0, 0])

    assert anyio.run(by_the_engine) == pytest.approx(pin, abs=TOL)
    assert bottom_up.start_value(rules, 1, quiet=True)[0] == pytest.approx(pin, abs=TOL)


@pytest.mark.full
def test_official_maxi_yatzy_with_saved_rolls_is_worth_its_pin(tmp_path: Path) -> None:
    """Maxi Yatzy as its sheet prints it, unused rolls saved: 496.6332603702, a value nobody
    had published. ``scripts/tools/bottom_up.py --rules maxi-yatzy-saved`` computed it first
    (the kernel alone, two layers in memory); here the engine does, a layer at a time through
    an SQLite store (claims, codec, packing, memo): about 45 CPU minutes."""
    rules = RULE_SETS["maxi-yatzy-saved"]
    assert rules.start_value == 496.6332603702

    async def layered() -> float:
        async with (
            SQLiteStore(tmp_path / "memo.sqlite") as store,
            open_engine(YahtzeeGame(rules), store, threads=2) as engine,
        ):
            return float((await engine.solve_layers(block_key(0)))[0, 0, 0])

    assert anyio.run(layered) == pytest.approx(rules.start_value, abs=TOL)
