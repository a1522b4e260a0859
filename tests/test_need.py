"""The chance objective (play to reach a target) against its brute force and its own laws.

The solver's best chance of scoring at least N more points, for the state and for every
action, must agree to 1e-9 with ``need_brute_force.py`` (which shares no code with it) on
tiny rule sets of every kind Hypothesis draws (``rule_strategies.py``), and obey what any
such chance must: certain for N <= 0, never rising with N, 0 past the reach of the open
boxes, the best action's chance the state's, and never below the mean policy's chance.
Each variant gets fresh engines (the chance objective's and the mean's, one memory store)
in a blocking portal that outlives the examples.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import given, settings, strategies as st
from support import need_brute_force as brute, rulebook_brute_force as mean_brute
from support.rule_strategies import TinyState, tiny_rule_sets, tiny_states

from memo_solver.core.engine import open_engine
from memo_solver.games.yahtzee.advice.need_advice import NeedAdvice, advise_need
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.rules.rule_file import parse_rule_set, rule_set_document
from memo_solver.games.yahtzee.rules.state import State
from memo_solver.games.yahtzee.solve.game import YahtzeeGame
from memo_solver.games.yahtzee.solve.need import NeedBeyondCapError, NeedGame, reach
from memo_solver.stores.memory import MemoryStore

TOL = 1e-9


@dataclass
class Solver:
    portal: BlockingPortal

    def advise(
        self, rules: dict[str, Any], state: TinyState, needs: list[int], cap: int = 400
    ) -> list[NeedAdvice]:
        """The solver's advice for each need on fresh engines for the variant."""
        rule_set = parse_rule_set(rules)
        filled = sum(1 << box for box in state.filled)
        ours = State(filled, state.upper, state.fifty, state.rerolls_left, state.dice)
        store = MemoryStore()
        chance = open_engine(NeedGame(rule_set, cap), store)
        mean = open_engine(YahtzeeGame(rule_set), store)
        with (
            self.portal.wrap_async_context_manager(chance) as engine,
            self.portal.wrap_async_context_manager(mean) as mean_engine,
        ):
            return [
                self.portal.call(advise_need, engine, mean_engine, rule_set, ours, need)
                for need in needs
            ]


@pytest.fixture(scope="module")
def solver() -> Iterator[Solver]:
    with start_blocking_portal() as portal:
        yield Solver(portal)


def named(advice: NeedAdvice) -> dict[str, float]:
    """The solver's chances under the brute force's action names."""
    return {
        mean_brute.keep_name(a.action.keep)
        if a.action.kind == "keep"
        else f"score {a.action.category}": a.probability
        for a in advice.actions
    }


def rolled(state: TinyState) -> bool:
    return state.dice is not None and state.rerolls_left is not None


@st.composite
def games(draw: st.DrawFn, /, **sizes: Any) -> tuple[dict[str, Any], TinyState, list[int]]:
    """A tiny variant, a state in it, and needs from below 0 to past the most it can give."""
    rules = draw(tiny_rule_sets(**sizes), label="rules")
    state = draw(tiny_states(rules), label="state")
    most = brute.most_points(rules, state.filled, state.upper, state.fifty)
    needs = draw(
        st.lists(st.integers(-2, most + 3), min_size=1, max_size=4, unique=True), label="needs"
    )
    return rules, state, sorted(needs)


def assert_agree(solver: Solver, rules: dict[str, Any], state: TinyState, needs: list[int]) -> None:
    brute.forget()
    args = (rules, state.filled, state.upper, state.fifty)
    for need, advice in zip(needs, solver.advise(rules, state, needs), strict=True):
        start = brute.chance(*args, need)
        assert advice.turn_start_probability == pytest.approx(start, abs=TOL), need
        if not rolled(state):
            assert advice.probability == pytest.approx(start, abs=TOL)
            continue
        assert state.dice is not None
        assert state.rerolls_left is not None
        expected = brute.chance_actions(*args, state.dice, state.rerolls_left, need)
        ours = named(advice)
        assert ours.keys() == expected.keys()
        for action, chance in expected.items():
            assert ours[action] == pytest.approx(chance, abs=TOL), (need, action)
        assert advice.probability == pytest.approx(max(expected.values()), abs=TOL)


@settings(max_examples=120, deadline=None)
@given(game=games())
def test_every_action_has_the_chance_the_brute_force_finds(
    solver: Solver, game: tuple[dict[str, Any], TinyState, list[int]]
) -> None:
    assert_agree(solver, *game)


@settings(max_examples=40, deadline=None)
@given(game=games(max_boxes=4, joker=True))
def test_joker_variants_agree_on_chances(
    solver: Solver, game: tuple[dict[str, Any], TinyState, list[int]]
) -> None:
    assert_agree(solver, *game)


@settings(max_examples=15, deadline=None)
@given(game=games(max_dice=5, max_boxes=3))
def test_variants_of_more_dice_agree_on_chances(
    solver: Solver, game: tuple[dict[str, Any], TinyState, list[int]]
) -> None:
    assert_agree(solver, *game)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_chances_are_certain_then_fall_then_vanish_past_the_reach(
    solver: Solver, data: st.DataObject
) -> None:
    """For N <= 0 every chance is 1; from N = 1 on they never rise; past the reach of the
    open boxes (at least the most any game can score from here) they are 0; the best action's
    chance is the state's, and no policy does better than the mean's chance of N."""
    rules = data.draw(tiny_rule_sets(), label="rules")
    state = data.draw(tiny_states(rules), label="state")
    brute.forget()
    top = reach(parse_rule_set(rules), sum(1 << box for box in state.filled))
    args = (rules, state.filled, state.upper, state.fifty)
    assert top >= brute.most_points(*args, state.dice, state.rerolls_left)
    needs = list(range(-1, top + 2))
    advice = solver.advise(rules, state, needs)
    chances = [a.probability for a in advice]
    assert chances[:2] == [1.0, 1.0]
    assert all(a.probability == 1.0 for a in advice[0].actions)
    assert all(later <= earlier + TOL for earlier, later in pairwise(chances))
    assert chances[-1] == 0.0
    for need, one in zip(needs, advice, strict=True):
        if one.actions:
            assert one.probability == pytest.approx(
                max(a.probability for a in one.actions), abs=TOL
            )
        mean_chance = brute.mean_policy_chance(*args, state.dice, state.rerolls_left, need)
        assert one.probability >= mean_chance - TOL


def test_one_die_in_chance_keeps_a_die_that_meets_the_need(solver: Solver) -> None:
    """One die, one box (chance), two rerolls: a die showing the need or more is kept, so
    the chance is 1 - (1 - q) ** 3 with q = (7 - N) / 6. Needing 5 with a 4 in hand and one
    reroll left, the reroll (1/3) beats scoring or keeping the 4 (0), which the mean prefers
    (4 against 3.5), and which keep the mean's order between them."""
    rules = {"name": "one", "dice": 1, "rerolls": 2, "boxes": [{"name": "c", "kind": "chance"}]}
    start = TinyState(frozenset(), 0, False, None, None)
    needs = list(range(1, 7))
    for need, advice in zip(needs, solver.advise(rules, start, needs), strict=True):
        q = (7 - need) / 6
        assert advice.probability == pytest.approx(1 - (1 - q) ** 3, abs=TOL)
    in_hand = TinyState(frozenset(), 0, False, 1, (4,))
    [advice] = solver.advise(rules, in_hand, [5])
    assert advice.mean.actions[0].words() == "score 4 in C"
    assert [a.action.words() for a in advice.actions] == [
        "reroll the die",
        "score 4 in C",
        "keep the die",
    ]
    assert [a.probability for a in advice.actions] == pytest.approx([1 / 3, 0, 0], abs=TOL)


def test_hopeless_and_secured_positions_play_for_points(solver: Solver) -> None:
    """Every action of a need past the reach has chance 0, and of a need of 0 chance 1: the
    order is then the mean advice's."""
    rules = {"name": "one", "dice": 1, "rerolls": 1, "boxes": [{"name": "c", "kind": "chance"}]}
    in_hand = TinyState(frozenset(), 0, False, 1, (4,))
    for advice in solver.advise(rules, in_hand, [0, 7]):
        assert [a.action for a in advice.actions] == list(advice.mean.actions)


def test_a_need_above_the_cap_the_boxes_could_reach_is_refused(solver: Solver) -> None:
    """Cap 3 on one die: a need of 4 could still be met, and the table stops at 3, so it is
    refused naming the cap; a need of 7 is past any roll, so its chance is 0 whatever the
    cap."""
    rules = {"name": "one", "dice": 1, "rerolls": 1, "boxes": [{"name": "c", "kind": "chance"}]}
    start = TinyState(frozenset(), 0, False, None, None)
    [hopeless] = solver.advise(rules, start, [7], cap=3)
    assert hopeless.probability == 0.0
    with pytest.raises(NeedBeyondCapError, match="cap of 3"):
        solver.advise(rules, start, [4], cap=3)
    [within] = solver.advise(rules, start, [3], cap=3)
    assert within.probability == pytest.approx(1 - (2 / 6) ** 2, abs=TOL)


BUILT_INS = sorted(name for name, rules in RULE_SETS.items() if not rules.saved_rolls)


@pytest.mark.parametrize("name", BUILT_INS)
@settings(max_examples=3, deadline=None)
@given(data=st.data())
def test_the_last_box_of_every_built_in_agrees_with_the_brute_force(
    solver: Solver, name: str, data: st.DataObject
) -> None:
    """Every built-in rule set, read as its rule file by the brute force, at its last open
    box (the box, the upper total and the Yahtzee flag drawn), rolled or not, with needs
    around what that box can give."""
    rules: dict[str, Any] = rule_set_document(RULE_SETS[name])
    boxes, dice = rules["boxes"], rules["dice"]
    last = len(boxes) - 1
    if rules.get("order", "free") == "free":
        last = data.draw(st.integers(0, last), label="open box")
    filled = frozenset(range(len(boxes))) - {last}
    upper = sum(
        box["face"] * data.draw(st.integers(0, dice))
        for i, box in enumerate(boxes)
        if i in filled and box["kind"] == "upper"
    )
    alike = [i for i, box in enumerate(boxes) if box["kind"] == "all_alike"]
    fifty = bool(rules.get("yahtzee_bonus")) and alike[0] in filled and data.draw(st.booleans())
    rolled = data.draw(st.booleans(), label="rolled")
    roll = tuple(sorted(data.draw(st.lists(st.integers(1, 6), min_size=dice, max_size=dice))))
    rerolls = data.draw(st.integers(0, rules.get("rerolls", 2)), label="rerolls")
    state = TinyState(filled, upper, fifty, rerolls if rolled else None, roll if rolled else None)
    needs = sorted(data.draw(st.sets(st.integers(-1, 60), min_size=1, max_size=3), label="needs"))
    assert_agree(solver, rules, state, needs)
