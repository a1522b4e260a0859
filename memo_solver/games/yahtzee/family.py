"""The Yahtzee family in the registry: one game per rule set, named by the rule set.

Light at import (see :mod:`memo_solver.games.entry`): the rule sets, the advice and the
statistics are loaded when an entry is built or its hook runs, so that parsing a job
message never loads the statistics stack.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Final

from memo_solver.games.entry import GameEntry, GameFamily, Parameter, ValueTable

if TYPE_CHECKING:
    import anyio

    from memo_solver.core.engine import Engine
    from memo_solver.core.game import Block
    from memo_solver.games.yahtzee.rules.rule_set import RuleSet


FINGERPRINT: Final = re.compile(
    r"(?P<rules>[0-9a-f]{16})"
    r"(?:-need(?P<cap>[1-9][0-9]{0,3})|-risk(?P<risk>-?[1-9][0-9]{0,2}))?"
)
"""What the family's namespaces are named by: a rule set's fingerprint, alone for its mean
values, with ``-need<cap>`` for its need table (:attr:`NeedGame.fingerprint`), or with
``-risk<thousandths of theta>`` for its risk table (:attr:`RiskGame.fingerprint`)."""


def value_table(fingerprint: str) -> ValueTable | None:
    """The family's hook (:attr:`GameFamily.value_table`): every fingerprint the family
    names, its value type included, so that nothing outside the family spells one."""
    named = FINGERPRINT.fullmatch(fingerprint)
    if named is None:
        return None
    if named["risk"] is not None:
        theta = int(named["risk"]) / 1000

        def risk_table(entry: GameEntry) -> GameEntry:
            from memo_solver.games.yahtzee.risk_entries import risk_entry_of

            return risk_entry_of(entry, theta)

        return ValueTable(named["rules"], f"risk table at {theta:g}", risk_table)
    if named["cap"] is None:
        return ValueTable(fingerprint, "mean values", lambda entry: entry)
    cap = int(named["cap"])

    def need_table(entry: GameEntry) -> GameEntry:
        from memo_solver.games.yahtzee.need_entries import need_entry_of

        return need_entry_of(entry, cap)

    return ValueTable(named["rules"], f"need table up to {cap} points", need_table)


def entries() -> list[GameEntry]:
    """The rule sets in their own order."""
    from memo_solver.games.yahtzee.rules.catalog import RULE_SETS

    return [entry_for(rules) for rules in RULE_SETS.values()]


@lru_cache(maxsize=256)
def entry_for(rules: RuleSet) -> GameEntry:
    """The registry's view of any rule set: a built-in's, or one read from a file (kept
    per rule set object: the service asks for it on every request of a registered one)."""
    from memo_solver.games.yahtzee.rules.state import parse_state, state_to_json
    from memo_solver.games.yahtzee.solve.game import YahtzeeGame

    def canonical(text: str) -> str:
        return json.dumps(state_to_json(parse_state(text, rules), rules), sort_keys=True)

    async def warm(engine: Engine, text: str) -> None:
        from memo_solver.games.yahtzee.advice.mean_advice import advise

        await advise(engine, rules, parse_state(text, rules))

    async def stats(engine: Engine, text: str, limiter: anyio.CapacityLimiter) -> dict[str, Any]:
        from memo_solver.games.yahtzee.analysis.stats import distribution_in_thread, stats_json

        state = parse_state(text, rules)
        dist = await distribution_in_thread(engine, rules, state, limiter)
        return stats_json(dist, rules, state)

    return GameEntry(
        definition=definition_of(rules),
        game=YahtzeeGame(rules),
        description=rules.description,
        summarize_root=_start_value,
        canonical_state=canonical,
        warm=warm,
        stats=stats,
    )


def definition_of(rules: RuleSet) -> bytes | None:
    """What the store keeps beside a rule set's blocks: its file; None for a built-in,
    which every process knows by name."""
    from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
    from memo_solver.games.yahtzee.rules.rule_file import format_rule_document, rule_set_document

    built_in = RULE_SETS.get(rules.name)
    if built_in is not None and built_in.fingerprint == rules.fingerprint:
        return None
    return format_rule_document(rule_set_document(rules)).encode()


def _parse(document: bytes) -> RuleSet:
    from memo_solver.games.yahtzee.rules.rule_file import parse_rule_text

    return parse_rule_text(document)


def _start_value(root: Block) -> tuple[str, dict[str, float]]:
    value = float(root.flat[0])
    return f"start value {value:.10f}", {"value": value}


FAMILY = GameFamily(
    name="yahtzee",
    parameter=Parameter(
        "--rules",
        "rule set, or any game 'status' lists",
        default="yahtzee",
        game_name=str,
    ),
    entries=entries,
    from_definition=lambda document: entry_for(_parse(document)),
    value_table=value_table,
)
"""``--rules`` names any game of the registry, not only a rule set: an operator copies
what ``status`` lists."""
