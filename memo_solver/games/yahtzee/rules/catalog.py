"""The built-in rule sets: files in ``rule_sets/`` read like any other, with their values.

Built-ins are defined through the same file format and vocabulary as the rule sets players
write, so ``rules show NAME`` prints the very file the solver reads; their start values are
published (or cross-checked by two independent computations) and pinned in the tests.
"""

from __future__ import annotations

from importlib import resources
from typing import Final

from memo_solver.core.errors import UserError
from memo_solver.games.yahtzee.rules.rule_file import parse_rule_text
from memo_solver.games.yahtzee.rules.rule_set import RuleSet

START_VALUES: Final[dict[str, float]] = {
    "yahtzee": 254.5877287345,
    "yahtzee-free-joker": 254.5896094820,
    "yahtzee-no-joker": 253.9702411898,
    "yahtzee-no-joker-no-bonus": 245.8707745141,
    "yazy": 165.7573187094,
    "yahtzee-upper": 71.9515297337,
    "yahtzee-upper-no-bonus": 59.1632004354,
    "yahtzee-lower": 139.9712924424,
    "yatzy": 248.4399893779,
    "maxi-yatzy": 394.5575068204,
    "maxi-yatzy-saved": 496.6332603702,
}
"""The built-ins in the order they are listed, with the expected final score from the empty
scorecard."""


class UnknownRuleSetError(UserError):
    """Raised for a rule-set name that is not built in; the message lists the valid ones."""

    field = "rules"


def _load(name: str) -> RuleSet:
    text = resources.files(__package__).joinpath("rule_sets", f"{name}.json").read_text()
    return parse_rule_text(text, start_value=START_VALUES[name])


RULE_SETS: Final[dict[str, RuleSet]] = {name: _load(name) for name in START_VALUES}


def get_rule_set(name: str) -> RuleSet:
    try:
        return RULE_SETS[name.strip().lower()]
    except KeyError:
        valid = ", ".join(RULE_SETS)
        raise UnknownRuleSetError(f"unknown rule set {name!r} (built in: {valid})") from None
