"""What a question asks of the family's tables, for a service to weigh before it solves:
the cone of a state's mean values, the need rules (the cap, the reach, the need table's
cone) in one call, and the risk table's cone, so that the service and its routes hold none
of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from memo_solver.games.entry import Cone
from memo_solver.games.yahtzee.advice.mean_advice import blocks_needed
from memo_solver.games.yahtzee.family import entry_for
from memo_solver.games.yahtzee.need_entries import need_entry
from memo_solver.games.yahtzee.risk_entries import risk_entry_of
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.rules.state import State
from memo_solver.games.yahtzee.solve.need import NeedBeyondCapError, NeedError, reach
from memo_solver.games.yahtzee.solve.need_table import cone_values


def mean_cone(rules: RuleSet, state: State) -> Cone:
    """What a question about ``state`` reads of the rule set's mean values (its advice, a
    distribution, a review from the start): the blocks advice reads, weighed by the turn
    starts a cold solve from it may compute."""
    turn_starts = rules.cone_turn_starts(state.filled)
    whole = rules.cone_turn_starts(0)
    keys = blocks_needed(rules, state)
    return Cone(entry_for(rules), keys, turn_starts, turn_starts, whole, rules.name)


def risk_cone(rules: RuleSet, state: State, theta: float) -> Cone:
    """What a question about ``state`` at risk ``theta`` reads of the risk table (the mean
    table at theta = 0): the mean cone's blocks and turn starts, one certainty equivalent
    each, in the risk table's entry."""
    mean = mean_cone(rules, state)
    table = risk_entry_of(mean.entry, theta)
    return Cone(table, mean.keys, mean.size, mean.turn_starts, mean.whole, mean.game)


@dataclass(frozen=True)
class NeedQuestion:
    """A question with a need, as the family answers it: what it must solve of the need
    table, and whether it may be asked at all."""

    cone: Cone | None
    """What it reads of the need table; None where it takes no solve (a need of 0 or less
    is certain, one past what the open boxes could still score impossible)."""
    refusal: NeedError | None = None
    """Why it may not be asked (a need past the table's cap that the open boxes could
    still reach): raised once the mean's own budget, which the ties read, is weighed."""


def need_question(rules: RuleSet, state: State, need: int, cap: int) -> NeedQuestion:
    """The need rules in one place: the table first (:class:`NeedError` for a cap no table
    may have, and the rule sets no need table takes refused), the reach, and the table's
    cone, weighed in chances (turn starts times needs)."""
    table = need_entry(rules, cap)
    if not 0 < need <= reach(rules, state.filled):
        return NeedQuestion(None)
    if need > cap:
        return NeedQuestion(None, NeedBeyondCapError(need, cap))
    mean = mean_cone(rules, state)
    chances = cone_values(rules, cap, state.filled)
    return NeedQuestion(Cone(table, mean.keys, chances, mean.turn_starts, mean.whole, mean.game))
