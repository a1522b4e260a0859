"""A rule set's need table (:class:`~memo_solver.games.yahtzee.need.NeedGame`) as a game the
precompute, the job queue and the workers handle like any other.

Jobs name a need table by its fingerprint, ``<rule set fingerprint>-need<cap>``, built-ins
included, and its entry always carries the rule set's file as its definition: the store
keeps it beside the table's blocks, so a worker rebuilds the table from the fingerprint
alone and ``prune`` knows the namespace as a game's (a built-in's need table is in no
registry).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Final

from memo_solver.core.engine import Engine
from memo_solver.core.game import Block
from memo_solver.games.entry import GameEntry
from memo_solver.games.yahtzee.advice import blocks_needed
from memo_solver.games.yahtzee.catalog import RULE_SETS
from memo_solver.games.yahtzee.game import YahtzeeGame
from memo_solver.games.yahtzee.need import NeedError, NeedGame, check_cap
from memo_solver.games.yahtzee.rule_file import (
    format_rule_document,
    parse_rule_text,
    rule_set_document,
)
from memo_solver.games.yahtzee.rules import RuleSet
from memo_solver.games.yahtzee.state import parse_state, state_to_json

NEED_FINGERPRINT: Final = re.compile(r"(?P<rules>[0-9a-f]{16})-need(?P<cap>[1-9][0-9]{0,3})")
"""How jobs and the store name a need table: its :attr:`NeedGame.fingerprint`."""


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


def need_entry_from_definition(fingerprint: str, document: bytes) -> GameEntry:
    """The need table a job names by ``fingerprint``, from the rule set the store keeps
    beside its blocks (a built-in's own object where it is one)."""
    named = NEED_FINGERPRINT.fullmatch(fingerprint)
    if named is None:
        raise NeedError(f"{fingerprint!r} names no need table", "rules")
    rules = parse_rule_text(document)
    built_in = RULE_SETS.get(rules.name)
    if built_in is not None and built_in.fingerprint == rules.fingerprint:
        rules = built_in
    entry = need_entry(rules, check_cap(int(named["cap"])))
    if entry.game.fingerprint != fingerprint:
        raise NeedError(f"the definition stored for {fingerprint} is of another game", "rules")
    return entry
