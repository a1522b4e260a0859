"""A rule set's risk table (:class:`~memo_solver.games.yahtzee.solve.risk.RiskGame`) as a game
the precompute, the job queue and the workers handle like any other.

Jobs name a risk table by its fingerprint, ``<rule set fingerprint>-risk<thousandths>``,
which the family reads (:func:`memo_solver.games.yahtzee.family.value_table`); as a need
table's, its entry carries the rule set's file as its definition, so a worker rebuilds the
table from the fingerprint alone and ``prune`` knows the namespace. theta = 0 is the mean
table: its entry is the rule set's own.
"""

from __future__ import annotations

import json
from functools import lru_cache

from memo_solver.core.engine import Engine
from memo_solver.core.game import Block
from memo_solver.games.entry import GameEntry
from memo_solver.games.yahtzee.advice.mean_advice import blocks_needed
from memo_solver.games.yahtzee.rules.rule_file import format_rule_document, rule_set_document
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.rules.state import parse_state, state_to_json
from memo_solver.games.yahtzee.solve.game import YahtzeeGame
from memo_solver.games.yahtzee.solve.risk import RiskError, RiskGame, risk_milli


@lru_cache(maxsize=64)
def _risk_entry(rules: RuleSet, milli: int) -> GameEntry:
    game = RiskGame(rules, milli / 1000)

    def canonical(text: str) -> str:
        return json.dumps(state_to_json(parse_state(text, rules), rules), sort_keys=True)

    async def warm(engine: Engine, text: str) -> None:
        """The blocks risk advice for the state reads, as the mean advice's."""
        await engine.blocks(blocks_needed(rules, parse_state(text, rules)))

    def summarize(root: Block) -> tuple[str, dict[str, float]]:
        certain = float(root.flat[0])
        return f"certainty equivalent at risk {game.theta:g} {certain:.10f}", {
            "certainty_equivalent": certain
        }

    return GameEntry(
        game=game,
        description=f"{rules.description} (certainty equivalents at risk {game.theta:g})",
        summarize_root=summarize,
        canonical_state=canonical,
        warm=warm,
        definition=format_rule_document(rule_set_document(rules)).encode(),
    )


def risk_entry_of(base: GameEntry, theta: float | str) -> GameEntry:
    """The risk table at ``theta`` of a game of the registry or a rule-set file's: the
    game's own entry at theta = 0 (the mean table); a :class:`RiskError` for a theta off
    the dial or any other game."""
    milli = risk_milli(theta)
    game = base.game
    if type(game) is not YahtzeeGame:
        raise RiskError(f"{base.name} has no risk table: risks are for the Yahtzee family", "rules")
    return _risk_entry(game.rules, milli) if milli else base
