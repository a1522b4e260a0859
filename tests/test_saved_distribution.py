"""The exact distribution with saved rolls: against a brute force that plays the game with
the bank counted explicitly (``saved_distribution.py``), and against the values.

A turn starting with bank s rolls first with s + rerolls rolls left, and may stop and score
with any of them unused: those are the next turn's bank. So the pass must carry each turn
start's bank, and the mass that stops with R rolls left must land on the next block's turn
start with bank ``min(R, cap)``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from support.api_support import api_client
from support.rule_strategies import TinySavedState, tiny_saved_rule_sets, tiny_saved_states
from support.saved_distribution import distribution

from memo_solver.core.engine import open_engine
from memo_solver.games.yahtzee.advice.mean_advice import advise
from memo_solver.games.yahtzee.analysis.distribution import Distribution, score_distribution
from memo_solver.games.yahtzee.analysis.policy import turn_policy
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.rules.rule_file import parse_rule_set, rule_set_document
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.rules.state import State, parse_state, start_state
from memo_solver.games.yahtzee.solve.game import YahtzeeGame, block_key
from memo_solver.games.yahtzee.solve.turn import Guideposts
from memo_solver.stores.memory import MemoryStore

TOL = 1e-9
EXAMPLES = Path(__file__).parent.parent / "examples" / "rules"


def ours(rules: RuleSet, state: State) -> Distribution:
    """The solver's distribution, through the engine's lazy solve as ``stats`` runs it."""

    async def run() -> Distribution:
        async with open_engine(YahtzeeGame(rules), MemoryStore()) as engine:
            return await score_distribution(engine, rules, state)

    return anyio.run(run)


def as_state(state: TinySavedState) -> State:
    filled = sum(1 << box for box in state.filled)
    if state.dice is None or state.rolls_left is None:
        return State(filled, state.upper, state.fifty, None, None, state.saved)
    return State(filled, state.upper, state.fifty, state.rolls_left, state.dice)


def same(mine: Distribution, theirs: dict[int, float]) -> None:
    """Every probability equal to 1e-9, the totals the brute force never reaches at 0."""
    size = max(mine.probabilities.size, max(theirs) + 1)
    expected = np.zeros(size)
    for total, chance in theirs.items():
        expected[total] = chance
    got = np.zeros(size)
    got[: mine.probabilities.size] = mine.probabilities
    np.testing.assert_allclose(got, expected, rtol=0, atol=TOL)


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_every_probability_is_the_brute_forces_from_the_start_and_from_a_drawn_state(
    data: st.DataObject,
) -> None:
    """Free and forced order, caps 0..4 or none, the Joker's variants among the draws; the
    drawn state is a turn start with some bank or, once its dice are drawn, a roll mid-turn
    with some rolls left."""
    document = data.draw(tiny_saved_rule_sets(joker=data.draw(st.booleans())), label="rules")
    rules = parse_rule_set(document)
    same(ours(rules, start_state()), distribution(document, [], 0, False, 0))
    state = data.draw(tiny_saved_states(document), label="state")
    if state.dice is None:  # mid-turn: the dice of a first roll, any rolls left it allows
        dice = tuple(sorted(data.draw(st.lists(st.integers(1, 6), min_size=rules.dice,
                                               max_size=rules.dice))))  # fmt: skip
        left = data.draw(st.integers(0, state.saved + rules.rerolls), label="rolls left")
        state = state._replace(dice=dice, rolls_left=left)
    card = (state.filled, state.upper, state.fifty)
    expected = distribution(document, *card, state.saved, state.dice, state.rolls_left)
    same(ours(rules, as_state(state)), expected)


def test_a_cap_of_0_gives_the_distribution_of_the_game_without_the_rule() -> None:
    """Yatzy's last four boxes: with ``max_saved: 0`` nothing is carried, so every turn has
    its own three rolls as in the plain game, and its choices are the plain game's."""
    plain = RULE_SETS["yatzy"]
    capped = parse_rule_set(
        {**rule_set_document(plain), "name": "yatzy-cap0", "saved_rolls": True, "max_saved": 0}
    )
    text = "open=fives,sixes,two_pairs,chance upper=40"
    mine, theirs = (ours(r, parse_state(text, r)) for r in (capped, plain))
    np.testing.assert_allclose(mine.probabilities, theirs.probabilities, rtol=0, atol=1e-12)
    assert mine.box_points == pytest.approx(theirs.box_points, abs=1e-12)
    assert mine.p_upper_bonus == pytest.approx(theirs.p_upper_bonus, abs=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize(
    "text",
    [
        "open=fours,fives,full_house,small_straight,large_straight,chance upper=30 saved=3",
        "open=sixes,one_pair,two_pairs,chance,yatzy upper=40 dice=6,6,2,3,1 rolls=4",
    ],
)
def test_the_mean_of_a_late_yatzy_saved_state_is_its_value_through_the_cli(
    tmp_path: Path, text: str
) -> None:
    """``stats --json`` and ``value --json`` of examples/rules/yatzy-saved.json, in their
    own processes, on one store: the mean of the distribution is the state's value."""

    def cli(*args: str) -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "-m", "memo_solver", "--store", str(tmp_path / "s.sqlite3"),
             "--json", *args, text, "--rules-file", str(EXAMPLES / "yatzy-saved.json")],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        answer: dict[str, Any] = json.loads(done.stdout)
        return answer

    value = cli("value")["value"]
    stats = cli("stats")
    assert stats["mean"] == pytest.approx(value, abs=TOL)
    assert sum(stats["probabilities"]) == pytest.approx(1.0, abs=1e-12)
    assert stats["from_start"] is False


async def test_the_api_answers_stats_from_a_turn_start_with_a_bank() -> None:
    """``POST /v1/stats`` with inline rules with saved rolls: the state's bank echoed, the
    mean the state's value (``POST /v1/value``), every probability summing to 1."""
    document = json.loads((EXAMPLES / "yatzy-saved.json").read_text(encoding="utf-8"))
    late = ["ones", "twos", "threes", "fours", "fives", "sixes", "one_pair", "two_pairs",
            "three_of_a_kind", "four_of_a_kind", "small_straight", "large_straight"]  # fmt: skip
    state = {"filled": late, "upper": 50, "saved": 5}
    async with api_client(MemoryStore) as client:
        stats = await client.post(
            "/v1/stats", json={"rules": document, "state": state, "full": True}
        )
        value = await client.post("/v1/value", json={"rules": document, "state": state})
    assert stats.status_code == 200, stats.text
    answer = stats.json()
    assert answer["state"]["saved"] == 5
    assert answer["mean"] == pytest.approx(value.json()["value"], abs=TOL)
    assert sum(answer["probabilities"]) == pytest.approx(1.0, abs=1e-12)


@settings(max_examples=15, deadline=None)
@given(st.data())
def test_the_policy_plays_advices_first_action_at_every_roll_of_a_block(
    data: st.DataObject,
) -> None:
    """Every guidepost of a drawn block, every rolls left a turn of it can have, every
    roll: the policy's keep, or its box scored at once or with no roll left, is the first
    action advice ranks (one tie rule for both)."""
    document = data.draw(tiny_saved_rule_sets(joker=data.draw(st.booleans())), label="rules")
    rules = parse_rule_set(document)
    filled = sum(1 << box for box in data.draw(tiny_saved_states(document)).filled)
    dice = rules.universe

    async def run() -> None:
        async with open_engine(YahtzeeGame(rules), MemoryStore()) as engine:
            await engine.block(block_key(filled))
            after = [block_key(filled | 1 << box) for box in rules.open_boxes(filled)]
            blocks = await engine.blocks(after)
            guideposts = Guideposts.reachable(rules, filled)
            policy = turn_policy(
                rules, filled, lambda box: blocks[block_key(filled | 1 << box)], guideposts
            )
            levels = list(zip(guideposts.upper, guideposts.bonus, strict=True))
            for left, choices in enumerate(policy.stop):
                for g, (upper, bonus) in enumerate(levels):
                    for r, roll in enumerate(dice.rolls):
                        state = State(filled, int(upper), bool(bonus), left, roll)
                        best = (await advise(engine, rules, state)).actions[0]
                        where = (left, int(upper), roll)
                        if choices[r, g] >= 0:
                            box = policy.tables.boxes[choices[r, g]]
                            assert (best.kind, best.category) == (
                                "score",
                                rules.categories[box].name,
                            ), where
                        else:
                            assert best.kind == "keep", where
                            assert best.keep == dice.keeps[policy.keep[left][r, g]], where

    anyio.run(run)


def test_scoring_now_wins_a_tie_with_rerolling() -> None:
    """One die, the last box all-alike: every roll scores 50 at once, and a reroll is worth
    50 too (the rolls left after the last box are worth nothing), so the two tie at every
    roll and rolls left: the tie rule scores now, as advice ranks it."""
    boxes = [
        {"name": "chance", "kind": "chance"},
        {"name": "alike", "kind": "all_alike", "points": 50},
    ]
    rules = parse_rule_set({"name": "one-die", "dice": 1, "saved_rolls": True, "boxes": boxes})
    last = Guideposts.reachable(rules, 0b01)
    policy = turn_policy(rules, 0b01, lambda _box: np.zeros((1, 1, 5)), last)
    assert len(policy.stop) == 2 + 2 + 1  # banks 0..2, then two rerolls: 0..4 rolls left
    for choices in policy.stop:
        assert (choices == 0).all()  # the one open box, never -1 (a reroll)
