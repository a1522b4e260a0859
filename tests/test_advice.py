"""Advice in-process: the ranking's invariants on random states, and positions checked by hand.

One engine per rule set serves every example of the module: it runs in a blocking portal
(an event loop in a thread) that outlives the examples, so each block is solved once.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import numpy as np
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import given, settings, strategies as st
from support import brute_force
from support.dice_variants import FORCED, MAXI, VARIANTS

from memo_solver.core.cache import BlockCache
from memo_solver.core.engine import Engine, open_engine
from memo_solver.games.yahtzee.advice.mean_advice import Action, Advice, advise, advise_held
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.rules.rule_file import parse_rule_set
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.rules.state import State, parse_state, start_state
from memo_solver.games.yahtzee.solve.game import YahtzeeGame
from memo_solver.stores.memory import MemoryStore

TOL = 1e-9
HASKELL_EXAMPLE = "- x x x x x x x x x x - x 62 False 2 1 2 2 2 6"
YAHTZEE = RULE_SETS["yahtzee"]


@dataclass
class Solver:
    """Advice from long-lived engines on memory stores, one per rule set, opened lazily."""

    portal: BlockingPortal
    stack: contextlib.ExitStack
    engines: dict[str, Engine] = field(default_factory=dict)

    def advise(self, rules: RuleSet, state: State) -> Advice:
        engine = self.engines.get(rules.name)
        if engine is None:
            opened = open_engine(YahtzeeGame(rules), MemoryStore())
            engine = self.stack.enter_context(self.portal.wrap_async_context_manager(opened))
            self.engines[rules.name] = engine
        return self.portal.call(advise, engine, rules, state)

    def value(self, rules: RuleSet, state: State) -> float:
        return self.advise(rules, state).value


@pytest.fixture(scope="module")
def solver() -> Iterator[Solver]:
    # The stack closes the engines before the portal stops their event loop.
    with start_blocking_portal() as portal, contextlib.ExitStack() as stack:
        yield Solver(portal, stack)


# --- random states ----------------------------------------------------------------------------


def _mask(rules: RuleSet, *names: str) -> int:
    return sum(1 << rules.category_index(name) for name in names)


def _dice(count: int) -> st.SearchStrategy[list[int]]:
    """All dice alike often: it is where the bonuses and the Joker rules come in."""
    return st.one_of(
        st.integers(1, 6).map(lambda face: [face] * count),
        st.lists(st.integers(1, 6), min_size=count, max_size=count),
    )


@st.composite
def _states(draw: st.DrawFn, rules: RuleSet, open_boxes: tuple[int, int] | None) -> State:
    """A reachable state with the dice rolled; ``open_boxes`` bounds how many boxes are open."""
    n = len(rules.categories)
    if open_boxes is None:
        filled = draw(st.sampled_from(rules.reachable_masks(0)[:-1]))
    else:
        low, high = open_boxes
        opened = draw(st.sets(st.integers(0, n - 1), min_size=low, max_size=high))
        filled = rules.all_filled & ~sum(1 << box for box in opened)
    upper = draw(st.sampled_from([int(t) for t in np.flatnonzero(rules.upper_totals(filled))]))
    yahtzee = rules.yahtzee_box
    bonus = yahtzee is not None and filled >> yahtzee & 1 == 1 and draw(st.booleans())
    dice = tuple(sorted(draw(_dice(rules.dice))))
    rerolls = draw(st.integers(0, rules.rerolls))
    return State(filled, upper, bonus, rerolls, dice)


# (rule set, how many boxes may be open): the whole of the small games, the end of a big one.
GAMES = {
    "yahtzee-upper": (RULE_SETS["yahtzee-upper"], None),
    "yahtzee-lower": (RULE_SETS["yahtzee-lower"], None),
    "yahtzee-late": (YAHTZEE, (1, 3)),
    "yahtzee-free-joker-late": (RULE_SETS["yahtzee-free-joker"], (1, 2)),
    **{name: (rules, None) for name, rules in VARIANTS.items()},
    "maxi-yatzy-late": (MAXI, (1, 3)),
}
_cases = st.sampled_from(list(GAMES)).flatmap(
    lambda name: st.tuples(st.just(GAMES[name][0]), _states(*GAMES[name]))
)


def _rolled(case: tuple[RuleSet, State]) -> bool:
    return bool(case[1].rerolls_left)


def _short(case: tuple[RuleSet, State]) -> bool:
    return case[1].rerolls_left is not None and case[1].rerolls_left < case[0].rerolls


_with_rerolls = _cases.filter(_rolled)
_short_of_rerolls = _cases.filter(_short)

examples = settings(max_examples=150, deadline=None)


def _after_scoring(rules: RuleSet, state: State, action: Action) -> State:
    """The next turn-start state once ``action`` (a score) is taken."""
    box = rules.category_index(action.category)
    category = rules.categories[box]
    upper = state.upper + (action.points if category.upper_face else 0)
    fifty = category.is_yahtzee and action.points > 0
    return State(state.filled | 1 << box, upper, state.yahtzee_bonus or fifty, None, None)


# --- properties -----------------------------------------------------------------------------


@examples
@given(case=_cases)
def test_advice_from_the_memo_alone_is_the_engines(
    solver: Solver, case: tuple[RuleSet, State]
) -> None:
    """What a warm request is answered from: the blocks in the memo, none solved or fetched,
    and nothing (None) when one is missing."""
    rules, state = case
    before_roll = replace(state, rerolls_left=None, dice=None)
    for asked in (state, before_roll):
        answer = solver.advise(rules, asked)  # its blocks are in the engine's memo now
        assert advise_held(solver.engines[rules.name].memo, rules, asked) == answer
        assert advise_held(BlockCache(), rules, asked) is None


@examples
@given(case=_short_of_rerolls)
def test_another_reroll_never_lowers_the_value(solver: Solver, case: tuple[RuleSet, State]) -> None:
    rules, state = case
    assert state.rerolls_left is not None
    more = replace(state, rerolls_left=state.rerolls_left + 1)

    assert solver.value(rules, more) >= solver.value(rules, state)


@examples
@given(case=_cases)
def test_actions_are_ranked_best_first_with_losses_from_the_best(
    solver: Solver, case: tuple[RuleSet, State]
) -> None:
    rules, state = case
    advice = solver.advise(rules, state)
    actions = advice.actions

    assert actions, "a state with dice rolled always has a move"
    assert actions[0].value == advice.value
    assert actions[0].loss == 0
    for action in actions:
        assert action.loss >= 0
        assert action.loss == pytest.approx(max(0.0, advice.value - action.value), abs=1e-12)
    for better, worse in itertools.pairwise(actions):
        assert better.value >= worse.value - 1e-9
        if abs(better.value - worse.value) <= 1e-9:  # ties: scoring, then keeps of more dice
            order = (
                (better.kind == "keep", -len(better.keep)),
                (worse.kind == "keep", -len(worse.keep)),
            )
            assert order[0] <= order[1]
    # The turn-start value is the average over the first roll, so it is what a fresh
    # scorecard of this state is worth.
    start = solver.advise(rules, replace(state, rerolls_left=None, dice=None))
    assert advice.turn_start_value == start.value == start.turn_start_value


@examples
@given(case=_cases)
def test_the_moves_offered_are_the_legal_ones(solver: Solver, case: tuple[RuleSet, State]) -> None:
    rules, state = case
    assert state.dice is not None
    actions = solver.advise(rules, state).actions

    keeps = [a.keep for a in actions if a.kind == "keep"]
    if state.rerolls_left:
        sizes = range(rules.dice + 1)
        distinct = {c for n in sizes for c in itertools.combinations(state.dice, n)}
        assert sorted(keeps) == sorted(distinct)
    else:
        assert keeps == []
    boxes = [a.category for a in actions if a.kind == "score"]
    open_names = [rules.categories[b].name for b in rules.open_boxes(state.filled)]
    assert len(boxes) == len(set(boxes))
    assert boxes
    assert set(boxes) <= set(open_names)
    if rules.joker == "none" or len(set(state.dice)) > 1:
        assert set(boxes) == set(open_names)


@examples
@given(case=_with_rerolls)
def test_keeping_every_die_is_never_worse_than_scoring_now(
    solver: Solver, case: tuple[RuleSet, State]
) -> None:
    rules, state = case
    assert state.rerolls_left is not None
    advice = solver.advise(rules, state)

    (keep_all,) = [a for a in advice.actions if a.kind == "keep" and len(a.keep) == rules.dice]
    best_score = max(a.value for a in advice.actions if a.kind == "score")
    assert keep_all.value >= best_score
    # Keeping everything is exactly the same dice with one reroll fewer.
    fewer = replace(state, rerolls_left=state.rerolls_left - 1)
    assert keep_all.value == pytest.approx(solver.value(rules, fewer), abs=TOL)


@examples
@given(case=_cases)
def test_a_score_is_worth_its_points_its_bonus_and_the_next_turn(
    solver: Solver, case: tuple[RuleSet, State]
) -> None:
    rules, state = case
    for action in solver.advise(rules, state).actions:
        if action.kind != "score":
            continue
        following = solver.value(rules, _after_scoring(rules, state, action))
        assert action.value == pytest.approx(action.points + action.bonus + following, abs=TOL)


# --- positions checked by hand ----------------------------------------------------------------


def test_only_chance_open_with_five_sixes_and_no_rerolls(solver: Solver) -> None:
    state = parse_state("open=chance dice=66666 rerolls=0", YAHTZEE)
    advice = solver.advise(YAHTZEE, state)

    assert [(a.kind, a.category, a.points, a.bonus) for a in advice.actions] == [
        ("score", "chance", 30, 0)
    ]
    assert advice.value == 30
    assert advice.actions[0].words() == "score 30 in Chance"
    assert advice.turn_start_value == pytest.approx(70 / 3, abs=TOL)


def test_a_second_yahtzee_in_chance_earns_the_bonus(solver: Solver) -> None:
    state = parse_state("open=chance bonus=yes dice=66666 rerolls=0", YAHTZEE)
    (action,) = solver.advise(YAHTZEE, state).actions

    assert (action.category, action.points, action.bonus, action.value) == ("chance", 30, 100, 130)
    assert action.words() == "score 30 in Chance (+100 bonus)"


def test_only_yahtzee_open_with_five_threes_scores_fifty(solver: Solver) -> None:
    state = parse_state("open=yahtzee dice=33333 rerolls=2", YAHTZEE)
    advice = solver.advise(YAHTZEE, state)

    best = advice.actions[0]
    assert (best.kind, best.category, best.points, best.value) == ("score", "yahtzee", 50, 50)
    assert advice.value == 50
    assert advice.turn_start_value == pytest.approx(50 * 2783176 / 60466176, abs=TOL)
    # Keeping all five is as good, and ranked right after: never "reroll for nothing".
    assert (advice.actions[1].keep, advice.actions[1].loss) == ((3, 3, 3, 3, 3), 0)


def test_the_forced_joker_goes_in_the_matching_upper_box(solver: Solver) -> None:
    state = parse_state("open=fours,full_house upper=40 bonus=yes dice=44444 rerolls=0", YAHTZEE)
    (action,) = solver.advise(YAHTZEE, state).actions

    assert (action.category, action.points, action.bonus) == ("fours", 20, 100)


def test_the_forced_joker_scores_full_house_when_the_upper_box_is_filled(solver: Solver) -> None:
    state = parse_state("open=fours,full_house upper=40 bonus=yes dice=55555 rerolls=0", YAHTZEE)
    (action,) = solver.advise(YAHTZEE, state).actions

    assert (action.category, action.points, action.bonus) == ("full_house", 25, 100)


ONE_DIE = parse_rule_set(
    {"name": "one-die", "dice": 1, "boxes": [{"name": "chance", "kind": "chance"}]}
)


def test_one_die_and_chance_by_hand(solver: Solver) -> None:
    """With no reroll the die is worth 3.5; with one, keep 4 or more: (4 + 5 + 6) / 6 + 3.5 / 2
    = 4.25; with two, keep 5 or 6: 11 / 6 + 4.25 * 4 / 6 = 14 / 3. A 4 with two rerolls left
    is rerolled (4.25); keeping it is worth scoring it now (4), and scoring comes first."""
    assert solver.value(ONE_DIE, start_state()) == pytest.approx(14 / 3, abs=TOL)
    advice = solver.advise(ONE_DIE, parse_state("dice=4 rerolls=2", ONE_DIE))

    assert [(a.words(), a.value) for a in advice.actions] == [
        ("reroll the die", pytest.approx(4.25, abs=TOL)),
        ("score 4 in Chance", 4.0),
        ("keep the die", pytest.approx(4.0, abs=TOL)),
    ]


def test_advice_under_forced_order_offers_the_next_box_and_solves_only_prefixes(
    solver: Solver,
) -> None:
    advice = solver.advise(FORCED, parse_state("filled=ones upper=2 dice=3333 rerolls=0", FORCED))
    assert [(a.category, a.points) for a in advice.actions] == [("threes", 12)]
    solver.advise(FORCED, parse_state("dice=1234", FORCED))
    assert solver.engines[FORCED.name].counters.computed <= FORCED.block_count == 6


def test_keeps_are_said_with_the_rule_sets_dice() -> None:
    def keep(*faces: int, rerolled: int) -> str:
        return Action("keep", 0.0, 0.0, keep=faces, rerolled=rerolled).words()

    assert keep(rerolled=6) == "reroll all six dice"
    assert keep(6, 6, 6, 6, 6, 6, rerolled=0) == "keep all six dice"
    assert keep(1, 2, rerolled=4) == "keep 1 2 and reroll 4 dice"
    assert keep(rerolled=3) == "reroll all three dice"
    assert keep(5, rerolled=0) == "keep the die"


def test_the_reference_example_in_process(solver: Solver) -> None:
    state = parse_state(HASKELL_EXAMPLE, YAHTZEE)
    advice = solver.advise(YAHTZEE, state)

    assert advice.value == pytest.approx(40.998025624, abs=TOL)
    assert advice.actions[0].words() == "keep 2 2 2 and reroll 2 dice"


@pytest.mark.parametrize("name", ["yahtzee", "yahtzee-no-joker"])
def test_the_reference_example_whole_action_table_against_a_brute_force(
    solver: Solver, name: str
) -> None:
    """Ones and Yahtzee open, upper total 62, dice 1 2 2 2 6 with two rerolls left: each of
    the 18 actions is worth what a plain-Python brute force of this two-box end game says,
    and the five that pins.md publishes have their published digits."""
    rules = RULE_SETS[name]
    advice = solver.advise(rules, parse_state(HASKELL_EXAMPLE, rules))
    game = brute_force.EndGame(
        (brute_force.ONES, brute_force.YAHTZEE), upper_bonus=35, yahtzee_bonus=100
    )
    brute = game.actions(frozenset({"ones", "yahtzee"}), 62, (1, 2, 2, 2, 6), rerolls=2)

    ours = {
        "keep " + (" ".join(map(str, a.keep)) or "nothing")
        if a.kind == "keep"
        else f"score {a.category}": a.value
        for a in advice.actions
    }
    assert len(ours) == len(advice.actions) == 18  # 16 distinct keeps, 2 boxes
    assert ours.keys() == brute.keys()
    for action, value in brute.items():
        assert ours[action] == pytest.approx(value, abs=TOL), action
    for action, value in brute_force.HASKELL_PUBLISHED.items():
        assert ours[action] == pytest.approx(value, abs=TOL), action
    turn_start = game.turn(frozenset({"ones", "yahtzee"}), 62)[0]
    assert advice.turn_start_value == pytest.approx(40.430844806, abs=TOL)
    assert turn_start == pytest.approx(40.430844806, abs=TOL)


def test_the_empty_scorecard_of_the_small_games_matches_the_pins(solver: Solver) -> None:
    start = parse_state("start", YAHTZEE)
    for name, pin in [("yahtzee-upper", 71.9515297337), ("yahtzee-lower", 139.9712924424)]:
        assert solver.value(RULE_SETS[name], start) == pytest.approx(pin, abs=TOL)
