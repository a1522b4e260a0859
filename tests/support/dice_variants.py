"""Small rule sets away from five dice and free order, read from their files' JSON like any
player's: every analysis (advice, the distribution, the simulation, the review, the table
export) is checked on them beside the built-ins.

Each is a whole game the suite can solve in about a second: a few boxes, every kind of
bonus it can carry (the upper bonus, the all-alike bonus, a Joker), so that the rules the
five-dice games exercise are exercised on other universes too.
"""

from __future__ import annotations

from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.rules.rule_file import parse_rule_set
from memo_solver.games.yahtzee.rules.rule_set import RuleSet

THREE_DICE: RuleSet = parse_rule_set(
    {
        "name": "three-dice",
        "dice": 3,
        "upper_threshold": 12,
        "upper_bonus": 15,
        "yahtzee_bonus": 30,
        "joker": "free",
        "boxes": [
            {"name": "twos", "kind": "upper", "face": 2},
            {"name": "fives", "kind": "upper", "face": 5},
            {"name": "pair", "kind": "pairs", "count": 1},
            {
                "name": "run",
                "kind": "straight",
                "faces": [[1, 2, 3], [2, 3, 4], [3, 4, 5], [4, 5, 6]],
                "points": "sum",
                "joker_points": 12,
            },
            {"name": "chance", "kind": "chance"},
            {"name": "triple", "kind": "all_alike", "points": 30},
        ],
    }
)
"""Three dice, with the free Joker and both bonuses."""

SIX_DICE: RuleSet = parse_rule_set(
    {
        "name": "six-dice",
        "dice": 6,
        "upper_threshold": 20,
        "upper_bonus": 25,
        "yahtzee_bonus": 50,
        "joker": "forced",
        "boxes": [
            {"name": "fours", "kind": "upper", "face": 4},
            {"name": "sixes", "kind": "upper", "face": 6},
            {"name": "three_pairs", "kind": "pairs", "count": 3, "joker_points": 30},
            {"name": "tower", "kind": "tower"},
            {
                "name": "full_straight",
                "kind": "straight",
                "faces": [1, 2, 3, 4, 5, 6],
                "points": 21,
            },
            {"name": "maxi", "kind": "all_alike", "points": 100},
        ],
    }
)
"""Six dice, as Maxi Yatzy rolls them, with the forced Joker and both bonuses."""

FORCED: RuleSet = parse_rule_set(
    {
        "name": "forced-four",
        "dice": 4,
        "order": "forced",
        "upper_threshold": 10,
        "upper_bonus": 20,
        "yahtzee_bonus": 20,
        "boxes": [
            {"name": "ones", "kind": "upper", "face": 1},
            {"name": "threes", "kind": "upper", "face": 3},
            {"name": "two_pairs", "kind": "pairs", "count": 2},
            {"name": "four_alike", "kind": "all_alike", "points": 40},
            {"name": "chance", "kind": "chance"},
        ],
    }
)
"""Four dice, each box filled in scorecard order."""

MAXI: RuleSet = RULE_SETS["maxi-yatzy"]
"""The built-in six-dice game, 2**20 blocks: only late positions (three boxes open at most)
are solved in the suite."""

VARIANTS: dict[str, RuleSet] = {r.name: r for r in (THREE_DICE, SIX_DICE, FORCED)}
"""The small whole games, by name."""
