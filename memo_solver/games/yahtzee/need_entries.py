"""A rule set's need table (:class:`~memo_solver.games.yahtzee.solve.need.NeedGame`) as a game the
precompute, the job queue and the workers handle like any other.

Jobs name a need table by its fingerprint, ``<rule set fingerprint>-need<cap>``, built-ins
included, which the family reads (:func:`memo_solver.games.yahtzee.family.value_table`): a
built-in's table is known by its rule set's fingerprint, and any other's entry carries the
rule set's file as its definition, which the store keeps beside the table's blocks, so a
worker rebuilds the table from the fingerprint alone and ``prune`` knows the namespace.
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
from memo_solver.games.yahtzee.solve.need import NeedError, NeedGame, check_cap


@lru_cache(maxsize=64)
def need_entry(rules: RuleSet, cap: int) -> GameEntry:
    """The need table of ``rules`` up to ``cap`` as an entry (:class:`NeedError` for a cap
    no table may have)."""
    game = NeedGame(rules, cap)

    def canonical(text: str) -> str:
        return json.dumps(state_to_json(parse_state(text, rules), rules), sort_keys=True)

    async def warm(engine: Engine, text: str) -> None:
        """Every need's chance for the state and its actions: the blocks advice reads."""
        await engine.blocks(blocks_needed(rules, parse_state(text, rules)))

    def summarize(root: Block) -> tuple[str, dict[str, float]]:
        top = root.shape[-1]
        chance = float(root[0, 0, top - 1])
        return f"chance of {top} points or more from the start {chance:.10f}", {
            "probability": chance
        }

    return GameEntry(
        game=game,
        description=f"{rules.description} (chances of each need up to {game.cap} points)",
        summarize_root=summarize,
        canonical_state=canonical,
        warm=warm,
        definition=format_rule_document(rule_set_document(rules)).encode(),
    )


def need_entry_of(base: GameEntry, cap: int) -> GameEntry:
    """The need table of a game of the registry or a rule-set file's (:class:`NeedError`
    for any other game)."""
    if not isinstance(base.game, YahtzeeGame) or isinstance(base.game, NeedGame):
        raise NeedError(f"{base.name} has no need table: needs are for the Yahtzee family", "rules")
    return need_entry(base.game.rules, check_cap(cap))
