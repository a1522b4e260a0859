"""A request's names and states turned into the typed values below the service, or a 422
naming the field (in the CLI's words)."""

from __future__ import annotations

from memo_solver.games.entry import GameEntry
from memo_solver.games.registry import UnknownGameError, get_game
from memo_solver.games.yahtzee.catalog import UnknownRuleSetError, get_rule_set
from memo_solver.games.yahtzee.rules import RuleSet
from memo_solver.games.yahtzee.state import State, parse_state, state_from_json
from memo_solver.service.errors import ApiError
from memo_solver.service.models import StateInput


def rules_named(name: str) -> RuleSet:
    try:
        return get_rule_set(name)
    except UnknownRuleSetError as exc:
        raise ApiError(422, "rules", str(exc)) from None


def game_named(name: str) -> GameEntry:
    try:
        return get_game(name)
    except UnknownGameError as exc:
        raise ApiError(422, "rules", str(exc)) from None


def state_of(raw: StateInput, rules: RuleSet) -> State:
    """A state sent as text or as JSON (a :class:`StateError` says what is wrong)."""
    return parse_state(raw, rules) if isinstance(raw, str) else state_from_json(raw, rules)
