"""Beating an opponent who is still playing, against its brute force and by hand.

The solver's chance of finishing strictly above an opponent who plays for points (their
exact distribution of points to come), for the state and every action, must agree to 1e-9
with ``beat_brute_force.py`` on tiny rule sets Hypothesis draws, whoever is ahead.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import given, settings, strategies as st
from support import beat_brute_force as brute, rulebook_brute_force as mean_brute
from support.rule_strategies import TinyState, tiny_rule_sets, tiny_states

from memo_solver.core.engine import open_engine
from memo_solver.games.yahtzee.advice.beat import BeatAdvice, Opponent, advise_beat
from memo_solver.games.yahtzee.rules.rule_file import parse_rule_set
from memo_solver.games.yahtzee.rules.state import State
from memo_solver.games.yahtzee.solve.game import YahtzeeGame
from memo_solver.stores.memory import MemoryStore

TOL = 1e-9


def ours(state: TinyState) -> State:
    filled = sum(1 << box for box in state.filled)
    return State(filled, state.upper, state.fifty, state.rerolls_left, state.dice)


@dataclass
class Solver:
    portal: BlockingPortal

    def advise(
        self, rules: dict[str, Any], state: TinyState, score: int, them: TinyState, their: int
    ) -> BeatAdvice:
        rule_set = parse_rule_set(rules)
        opened = open_engine(YahtzeeGame(rule_set), MemoryStore())
        opponent = Opponent(ours(them), their)
        with self.portal.wrap_async_context_manager(opened) as engine:
            return self.portal.call(advise_beat, engine, rule_set, ours(state), score, opponent)


@pytest.fixture(scope="module")
def solver() -> Iterator[Solver]:
    with start_blocking_portal() as portal:
        yield Solver(portal)


def turn_start(state: TinyState) -> TinyState:
    return state._replace(rerolls_left=None, dice=None)


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_every_action_has_the_chance_of_winning_the_brute_force_finds(
    solver: Solver, data: st.DataObject
) -> None:
    rules = data.draw(tiny_rule_sets(), label="rules")
    state = data.draw(tiny_states(rules), label="state")
    them = turn_start(data.draw(tiny_states(rules), label="opponent"))
    score, their = data.draw(st.integers(0, 40), label="score"), data.draw(st.integers(0, 40))
    brute.forget()
    odds = brute.opponent_odds(rules, them.filled, them.upper, them.fifty)
    behind = their - score
    advice = solver.advise(rules, state, score, them, their)

    args = (rules, state.filled, state.upper, state.fifty)
    start = brute.beat_chance(*args, odds, behind)
    assert advice.turn_start_probability == pytest.approx(start, abs=TOL)
    if state.dice is None or state.rerolls_left is None:
        assert advice.probability == pytest.approx(start, abs=TOL)
        return
    expected = brute.beat_actions(*args, state.dice, state.rerolls_left, odds, behind)
    named = {
        mean_brute.keep_name(a.action.keep)
        if a.action.kind == "keep"
        else f"score {a.action.category}": a.probability
        for a in advice.actions
    }
    assert named.keys() == expected.keys()
    for action, chance in expected.items():
        assert named[action] == pytest.approx(chance, abs=TOL), action
    assert advice.probability == pytest.approx(max(expected.values()), abs=TOL)


ONE_DIE = {"name": "one", "dice": 1, "rerolls": 1, "boxes": [{"name": "c", "kind": "chance"}]}
START = TinyState(frozenset(), 0, False, None, None)


def test_against_a_finished_opponent_it_is_a_need(solver: Solver) -> None:
    """An opponent whose game is over has no points to come: beating their 10 with 6 banked
    is needing 5 more, a 5 or 6 kept at once or rerolled for: 1 - (4/6) ** 2."""
    over = TinyState(frozenset({0}), 0, False, None, None)
    advice = solver.advise(ONE_DIE, START, 6, over, 10)
    assert advice.probability == pytest.approx(1 - (4 / 6) ** 2, abs=TOL)
    assert advice.opponent_mean == 10.0


def test_a_four_in_hand_against_a_fresh_opponent(solver: Solver) -> None:
    """Level on 0 against an opponent about to play the one-die game for points: they keep
    a first 4, 5 or 6 and reroll anything else, so they end with 4, 5 or 6 a quarter of the
    time each and 1, 2 or 3 a twelfth each. Scoring (or keeping) the 4 wins against 1-3:
    1/4, the mean's choice (4 points against a reroll's 3.5); a reroll wins with the
    average of P(them < face) over the six faces, (0 + 1 + 2 + 3 + 6 + 9) / 72 = 7/24."""
    in_hand = TinyState(frozenset(), 0, False, 1, (4,))
    advice = solver.advise(ONE_DIE, in_hand, 0, START, 0)
    odds = {1: 1 / 12, 2: 1 / 12, 3: 1 / 12, 4: 1 / 4, 5: 1 / 4, 6: 1 / 4}
    below = {face: sum(p for y, p in odds.items() if y < face) for face in range(1, 7)}
    chances = {a.action.words(): a.probability for a in advice.actions}
    assert chances["score 4 in C"] == pytest.approx(below[4], abs=TOL)
    assert chances["keep the die"] == pytest.approx(below[4], abs=TOL)
    assert chances["reroll the die"] == pytest.approx(7 / 24, abs=TOL)
    assert sum(below.values()) / 6 == pytest.approx(7 / 24, abs=TOL)
    assert advice.actions[0].action.words() == "reroll the die"
    assert advice.mean.actions[0].words() == "score 4 in C"
    assert advice.probability == max(chances.values())


def test_a_lead_past_anything_the_opponent_can_score_is_sure(solver: Solver) -> None:
    advice = solver.advise(ONE_DIE, START, 7, START, 0)
    assert advice.probability == 1.0
    behind = solver.advise(ONE_DIE, START, 0, START, 6)
    assert behind.probability == 0.0
