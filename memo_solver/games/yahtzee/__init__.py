"""The Yahtzee family: dice, rule sets, states, the turn math, advice and analysis.

This module is the family's face: every name the surfaces (the command line, the service, the
jobs and the worker) use, and nothing else, so that they import one module instead of the rooms
behind it (``rules`` < ``solve`` < ``analysis`` < ``advice``, ARCHITECTURE.md) and a room can be
rearranged without touching them.

The names load lazily (PEP 562): ``from memo_solver.games.yahtzee import advise`` imports the
advice module then, not at ``import memo_solver.games.yahtzee``, so ``--help`` and a warm answer
never pay for numba or the forward passes. The list below is the one place the face is written:
type checkers read it as imports, and :func:`__getattr__` reads the same lines (once, from this
file's syntax tree) to find where each name lives.
"""

from __future__ import annotations

import ast
import importlib
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memo_solver.games.yahtzee.advice.beat import (
        Opponent as Opponent,
        advise_beat as advise_beat,
    )
    from memo_solver.games.yahtzee.advice.mean_advice import (
        Action as Action,
        Advice as Advice,
        advise as advise,
        advise_held as advise_held,
        every_die as every_die,
        number_word as number_word,
        rolls as rolls,
    )
    from memo_solver.games.yahtzee.advice.need_advice import (
        NeedAdvice as NeedAdvice,
        advise_need as advise_need,
    )
    from memo_solver.games.yahtzee.advice.review import (
        AtRisk as AtRisk,
        GameError as GameError,
        Review as Review,
        read_game as read_game,
        review_game as review_game,
    )
    from memo_solver.games.yahtzee.advice.risk_advice import (
        RiskAdvice as RiskAdvice,
        advise_risk as advise_risk,
    )
    from memo_solver.games.yahtzee.analysis.distribution import (
        Distribution as Distribution,
        Progress as Progress,
        score_distribution as score_distribution,
        target_distribution as target_distribution,
    )
    from memo_solver.games.yahtzee.analysis.simulate import (
        MAX_GAMES as MAX_GAMES,
        PolicyCache as PolicyCache,
        Target as Target,
        simulate as simulate,
    )
    from memo_solver.games.yahtzee.analysis.stats import (
        PERCENTILES as PERCENTILES,
        distribution_in_thread as distribution_in_thread,
        need_stats_json as need_stats_json,
        stats_json as stats_json,
    )
    from memo_solver.games.yahtzee.analysis.summary import (
        SIMULATED_PERCENTILES as SIMULATED_PERCENTILES,
        Strategy as Strategy,
        Summary as Summary,
    )
    from memo_solver.games.yahtzee.analysis.table import (
        PARQUET_EXTRA as PARQUET_EXTRA,
        WRITERS as WRITERS,
        build_table as build_table,
        export_bytes as export_bytes,
        output_format as output_format,
        value_rows as value_rows,
    )
    from memo_solver.games.yahtzee.family import (
        definition_of as definition_of,
        entry_for as entry_for,
    )
    from memo_solver.games.yahtzee.need_entries import (
        need_entry as need_entry,
        need_entry_of as need_entry_of,
    )
    from memo_solver.games.yahtzee.questions import (
        mean_cone as mean_cone,
        need_question as need_question,
        risk_cone as risk_cone,
    )
    from memo_solver.games.yahtzee.risk_entries import risk_entry_of as risk_entry_of
    from memo_solver.games.yahtzee.rules.catalog import (
        RULE_SETS as RULE_SETS,
        get_rule_set as get_rule_set,
    )
    from memo_solver.games.yahtzee.rules.rule_file import (
        MAX_RULE_BYTES as MAX_RULE_BYTES,
        format_rule_document as format_rule_document,
        is_rule_set_name as is_rule_set_name,
        parse_rule_text as parse_rule_text,
        read_rule_file as read_rule_file,
        rule_set_document as rule_set_document,
        rule_text as rule_text,
    )
    from memo_solver.games.yahtzee.rules.rule_set import Category as Category, RuleSet as RuleSet
    from memo_solver.games.yahtzee.rules.state import (
        State as State,
        StateError as StateError,
        example_dice as example_dice,
        first_roll as first_roll,
        format_state as format_state,
        parse_state as parse_state,
        start_state as start_state,
        state_from_json as state_from_json,
        state_to_json as state_to_json,
    )
    from memo_solver.games.yahtzee.solve.need import (
        DEFAULT_CAP as DEFAULT_CAP,
        NeedGame as NeedGame,
    )
    from memo_solver.games.yahtzee.solve.need_table import table_bytes as table_bytes
    from memo_solver.games.yahtzee.solve.risk import (
        RiskGame as RiskGame,
        check_theta as check_theta,
    )
    from memo_solver.games.yahtzee.solve.scoring import next_turn_start as next_turn_start
    from memo_solver.games.yahtzee.warm_loops import warm_up as warm_up


@cache
def _face() -> dict[str, tuple[str, str]]:
    """Each exported name -> (module, attribute), read from the ``TYPE_CHECKING`` imports."""
    tree = ast.parse(Path(__file__).read_text())
    block = next(node for node in tree.body if isinstance(node, ast.If))
    return {
        alias.asname or alias.name: (str(node.module), alias.name)
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


def __getattr__(name: str) -> Any:
    """Import the module holding ``name`` on first use and keep the name here.

    No name of the face is spelled like a module of the family (tests/test_registry.py):
    importing a submodule binds its name on this package, which would hide such a name."""
    try:
        module, attribute = _face()[name]
    except KeyError:
        # Not a name of the face: Python then tries ``name`` as a submodule (``family``).
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_face()])
