"""The built-in rule sets: files in ``rule_sets/`` read like any other, with their values.

Built-ins are defined through the same file format and vocabulary as the rule sets players
write, so ``rules show NAME`` prints the very file the solver reads; their start values are
published (or cross-checked by two independent computations) and pinned in the tests.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
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


class _BuiltIns(Mapping[str, RuleSet]):
    """The built-ins by name, in :data:`START_VALUES`' order, each file read when first
    named: a command on one rule set does not parse the other ten at its start. Each name
    has one ``RuleSet`` for the process (callers compare them by identity), the first
    stored even when two threads read the file at once."""

    def __init__(self) -> None:
        self._read: dict[str, RuleSet] = {}

    def __getitem__(self, name: str) -> RuleSet:
        read = self._read.get(name)
        if read is not None:
            return read
        start_value = START_VALUES[name]  # KeyError: not a built-in
        text = resources.files(__package__).joinpath("rule_sets", f"{name}.json").read_text()
        return self._read.setdefault(name, parse_rule_text(text, start_value=start_value))

    def __contains__(self, name: object) -> bool:
        return name in START_VALUES  # a built-in's name, its file not read for it

    def __iter__(self) -> Iterator[str]:
        return iter(START_VALUES)

    def __len__(self) -> int:
        return len(START_VALUES)


RULE_SETS: Final[Mapping[str, RuleSet]] = _BuiltIns()


def get_rule_set(name: str) -> RuleSet:
    try:
        return RULE_SETS[name.strip().lower()]
    except KeyError:
        valid = ", ".join(RULE_SETS)
        raise UnknownRuleSetError(f"unknown rule set {name!r} (built in: {valid})") from None
