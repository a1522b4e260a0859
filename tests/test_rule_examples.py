"""The example rule-set files solve to their pinned start values.

The three Scandinavian Yatzy variants are published (precisit/yatzy-solver's rules
documentation: five of a kind also a full house, four of a kind also two pairs, both). The
forced-order Yatzy, Yatzy with saved rolls and the Yahtzee house rule are pinned from this
solver; forced order and
the Joker and bonus rules they use are checked against an independent brute force on tiny
variants (tests/test_rulebook_variants.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from memo_solver.core.engine import open_engine
from memo_solver.games.yahtzee.rules.rule_file import (
    parse_rule_set,
    read_rule_file,
    rule_set_document,
)
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.solve.game import YahtzeeGame
from memo_solver.stores.memory import MemoryStore

EXAMPLES = Path(__file__).parent.parent / "examples" / "rules"
TOL = 1e-9


def start_value(rules: RuleSet) -> float:
    async def solve() -> float:
        async with open_engine(YahtzeeGame(rules), MemoryStore()) as engine:
            return float((await engine.block("0")).flat[0])

    return anyio.run(solve)


def test_forced_order_is_fast_enough_for_the_quick_loop() -> None:
    rules = read_rule_file(EXAMPLES / "yatzy-forced.json")
    assert YahtzeeGame(rules).block_count == 16
    assert start_value(rules) == pytest.approx(PINS["yatzy-forced"], abs=TOL)


PINS = {
    "yatzy-fh5": 248.4680909,
    "yatzy-tp4": 248.6440589,
    "yatzy-forced": 122.5585273964,
    "yahtzee-house": 250.0017521539,
    "yatzy-saved": 280.4109275551,
}
"""``yatzy-saved`` (Scandinavian Yatzy with saved rolls) was computed twice: by the engine
here and by ``scripts/tools/bottom_up.py``, which share only the kernel."""


@pytest.mark.slow
@pytest.mark.parametrize("name", ["yatzy-fh5", "yatzy-tp4", "yahtzee-house"])
def test_each_example_solves_to_its_pin(name: str) -> None:
    digits = 1e-7 if name.startswith("yatzy-") else TOL  # published to seven decimals
    assert start_value(read_rule_file(EXAMPLES / f"{name}.json")) == pytest.approx(
        PINS[name], abs=digits
    )


@pytest.mark.full
def test_both_yatzy_house_rules_together() -> None:
    document: dict[str, Any] = rule_set_document(read_rule_file(EXAMPLES / "yatzy-fh5.json"))
    for box in document["boxes"]:
        if box["name"] == "two_pairs":
            box["four_as_two_pairs"] = True
    document["name"] = "yatzy-fh5-tp4"
    assert start_value(parse_rule_set(document)) == pytest.approx(248.6748827, abs=1e-7)


@pytest.mark.full
def test_yatzy_with_saved_rolls_solves_to_its_pin() -> None:
    """About 30 CPU s: ten times Yatzy without the rule."""
    rules = read_rule_file(EXAMPLES / "yatzy-saved.json")
    assert start_value(rules) == pytest.approx(PINS["yatzy-saved"], abs=TOL)
