"""The solver against the rule-book brute force, on tiny rule sets read from the file format.

Hypothesis draws tiny variants (1-3 dice, 1-3 boxes, every kind those dice allow, free and
forced order, bonuses, Jokers; ``rule_strategies.py``) and states inside them, and a few
larger ones (up to six dice and four boxes) that bring in the full house, villa and tower.
The solver reads each variant through :func:`parse_rule_set`, like any player's file; the
brute force (``rulebook_brute_force.py``, which shares no code with it) reads the same dict.
Every action's value, the set of actions offered and the state's values must agree to 1e-9.
A few fixed variants, one per box kind, pin the start value too.

Each variant gets an engine of its own on a memory store, in a blocking portal (an event
loop in a thread) that outlives the examples.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import given, settings, strategies as st
from support import rulebook_brute_force as brute
from support.rule_strategies import TinyState, tiny_rule_sets, tiny_states

from memo_solver.core.engine import open_engine
from memo_solver.games.yahtzee.advice.mean_advice import Advice, advise
from memo_solver.games.yahtzee.rules.rule_file import parse_rule_set
from memo_solver.games.yahtzee.rules.state import State
from memo_solver.games.yahtzee.solve.game import YahtzeeGame
from memo_solver.stores.memory import MemoryStore

TOL = 1e-9


@dataclass
class Solver:
    portal: BlockingPortal

    def advise(self, rules: dict[str, Any], state: TinyState) -> Advice:
        """The solver's advice on a fresh engine for the variant (closed afterwards)."""
        rule_set = parse_rule_set(rules)
        filled = sum(1 << box for box in state.filled)
        solver_state = State(filled, state.upper, state.fifty, state.rerolls_left, state.dice)
        opened = open_engine(YahtzeeGame(rule_set), MemoryStore())
        with self.portal.wrap_async_context_manager(opened) as engine:
            return self.portal.call(advise, engine, rule_set, solver_state)


@pytest.fixture(scope="module")
def solver() -> Iterator[Solver]:
    with start_blocking_portal() as portal:
        yield Solver(portal)


def named_actions(advice: Advice) -> dict[str, float]:
    """The solver's actions under the brute force's names."""
    return {
        brute.keep_name(action.keep) if action.kind == "keep" else f"score {action.category}": (
            action.value
        )
        for action in advice.actions
    }


def assert_agree(solver: Solver, rules: dict[str, Any], state: TinyState) -> None:
    advice = solver.advise(rules, state)
    start = brute.value(rules, state.filled, state.upper, state.fifty)

    assert advice.turn_start_value == pytest.approx(start, abs=TOL)
    if state.dice is None or state.rerolls_left is None:
        assert advice.value == pytest.approx(start, abs=TOL)
        assert advice.actions == ()
        return
    expected = brute.actions(
        rules, state.filled, state.upper, state.fifty, state.dice, state.rerolls_left
    )
    ours = named_actions(advice)
    assert len(ours) == len(advice.actions), "an action is offered twice"
    assert ours.keys() == expected.keys()
    for action, worth in expected.items():
        assert ours[action] == pytest.approx(worth, abs=TOL), action
    assert advice.value == pytest.approx(max(expected.values()), abs=TOL)


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_every_action_of_a_tiny_variant_is_worth_what_the_brute_force_says(
    solver: Solver, data: st.DataObject
) -> None:
    rules = data.draw(tiny_rule_sets(), label="rules")
    state = data.draw(tiny_states(rules), label="state")
    assert_agree(solver, rules, state)


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_joker_variants_agree(solver: Solver, data: st.DataObject) -> None:
    """The Joker decides only for an all-alike roll once the all-alike box is filled, by
    which upper and lower boxes are open and which carry Joker points: variants built around
    it (up to four boxes) reach those corners often."""
    rules = data.draw(tiny_rule_sets(max_boxes=4, joker=True), label="rules")
    state = data.draw(tiny_states(rules), label="state")
    assert_agree(solver, rules, state)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_variants_of_up_to_six_dice_agree_too(solver: Solver, data: st.DataObject) -> None:
    """Full house, villa and tower need five or six dice: a few larger variants bring them
    in, mixed with the other kinds, the bonuses and the Jokers."""
    rules = data.draw(tiny_rule_sets(max_dice=6, max_boxes=4), label="rules")
    state = data.draw(tiny_states(rules), label="state")
    assert_agree(solver, rules, state)


def _box(kind: str, **params: Any) -> dict[str, Any]:
    return {"name": kind, "kind": kind, **params}


def _variant(kind: str, dice: int, *boxes: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"name": "one-" + kind.replace("_", "-"), "dice": dice, **top, "boxes": list(boxes)}


CHANCE = _box("chance")
FIXED = [
    _variant("upper", 2, _box("upper", face=4), CHANCE),
    _variant("of_a_kind", 3, _box("of_a_kind", count=2, points="those"), CHANCE),
    _variant("pairs", 4, _box("pairs", count=2, four_as_two_pairs=True), CHANCE),
    _variant("full_house", 5, _box("full_house", points="sum", five_alike=True)),
    _variant("villa", 6, _box("villa", points="sum"), rerolls=1),
    _variant("tower", 6, _box("tower", points=30), rerolls=1),
    _variant("straight", 3, _box("straight", faces=[[1, 2, 3], [4, 5, 6]], points="sum")),
    _variant("chance", 1, CHANCE),
    _variant(
        "all_alike",
        2,
        _box("all_alike", points=20),
        _box("upper", face=6),
        yahtzee_bonus=30,
        joker="free",
        upper_threshold=6,
        upper_bonus=5,
    ),
]
"""One variant per box kind, with the dice it needs (two rerolls unless said), and a box
beside it where that makes a choice."""


@pytest.mark.parametrize("rules", FIXED, ids=[rules["name"] for rules in FIXED])
def test_the_start_value_of_one_variant_per_kind(solver: Solver, rules: dict[str, Any]) -> None:
    assert_agree(solver, rules, TinyState(frozenset(), 0, False, None, None))
