"""The registry: every game the service can solve on the shared memo, by name.

The engine, the stores, the workers and the operator commands only ever meet a game
through an entry here, so a new game is one entry, not a branch in each of them. Names
are what operators type and what jobs carry: a Yahtzee-family rule set by its own name
(``yahtzee``, ``yatzy``...), a Dice of Doom board size as ``dice-of-doom-3x3``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import anyio

from memo_solver.core.engine import Engine
from memo_solver.core.errors import UserError
from memo_solver.core.game import Block, Game
from memo_solver.games.dice_of_doom.board import Board, format_board, parse_board, player_index
from memo_solver.games.dice_of_doom.game import SIZES, doom_game
from memo_solver.games.yahtzee.game import YahtzeeGame
from memo_solver.games.yahtzee.rules import RULE_SETS, RuleSet

Warm = Callable[[Engine, str], Awaitable[None]]
Stats = Callable[[Engine, str, anyio.CapacityLimiter], Awaitable[dict[str, Any]]]
RootSummary = Callable[[Block], tuple[str, dict[str, float]]]


class UnknownGameError(UserError):
    """A name that is no rule set or game; the message lists them all."""

    field = "rules"

    def __init__(self, name: str) -> None:
        super().__init__(f"unknown rule set {name!r} (rule sets and games: {', '.join(names())})")


@dataclass(frozen=True)
class GameEntry:
    """What the service needs to know about one game beyond the engine's protocol."""

    game: Game
    description: str
    summarize_root: RootSummary
    """The root block in words and as JSON fields (its first number as ``value``), for the
    end of a precompute."""
    canonical_state: Callable[[str], str]
    """A state for a ``warm`` or ``stats`` job, checked and written one way (raises
    ValueError naming the problem), so that equal jobs get equal ids."""
    warm: Warm
    """Solve what advice for the state needs, leaving it in the memo."""
    stats: Stats | None = None
    """The statistics a ``stats`` job stores in its record, where the game has them."""

    @property
    def name(self) -> str:
        return self.game.name


def _yahtzee_entry(rules: RuleSet) -> GameEntry:
    from memo_solver.games.yahtzee.advice import advise
    from memo_solver.games.yahtzee.state import parse_state, state_to_json
    from memo_solver.games.yahtzee.stats import distribution_in_thread, stats_json

    def canonical(text: str) -> str:
        return json.dumps(state_to_json(parse_state(text, rules), rules), sort_keys=True)

    async def warm(engine: Engine, text: str) -> None:
        await advise(engine, rules, parse_state(text, rules))

    async def stats(engine: Engine, text: str, limiter: anyio.CapacityLimiter) -> dict[str, Any]:
        state = parse_state(text, rules)
        dist = await distribution_in_thread(engine, rules, state, limiter)
        return stats_json(dist, rules, state)

    def start_value(root: Block) -> tuple[str, dict[str, float]]:
        value = float(root.flat[0])
        return f"start value {value:.10f}", {"value": value}

    return GameEntry(
        game=YahtzeeGame(rules),
        description=rules.description,
        summarize_root=start_value,
        canonical_state=canonical,
        warm=warm,
        stats=stats,
    )


def _doom_entry(size: int) -> GameEntry:
    game = doom_game(size)

    def position(text: str) -> tuple[Board, int]:
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"a position is JSON {{'board': ..., 'to_move': ...}}: {exc}"
            ) from None
        if not isinstance(raw, dict):
            raise ValueError("a position is a JSON object with 'board' and 'to_move'")
        board = parse_board(str(raw.get("board", "")), size)
        return board, player_index(str(raw.get("to_move", "")))

    def canonical(text: str) -> str:
        board, player = position(text)
        return json.dumps({"board": format_board(board), "to_move": "ab"[player]}, sort_keys=True)

    async def warm(engine: Engine, text: str) -> None:
        board, player = position(text)
        key, _ = game.locate(board.owners, board.dice, player)
        await engine.block(key)

    return GameEntry(
        game=game,
        description=f"Dice of Doom (Land of Lisp, version 1) on the {size} x {size} board: "
        f"all {game.turn_starts():,} turn starts",
        summarize_root=_outcomes,
        canonical_state=canonical,
        warm=warm,
    )


def _outcomes(root: Block) -> tuple[str, dict[str, float]]:
    """Wins, ties and losses of the player to move over every turn start, and the expected
    share the root holds first, where a tie counts half (which alone reads like a win rate)."""
    expected, won, tied = (float(share) for share in root)
    lost = 1.0 - won - tied
    return (
        f"of all turn starts the player to move wins {won:.10f}, ties {tied:.10f} and loses "
        f"{lost:.10f} (expected share, ties counting half: {expected:.10f})",
        {"value": expected, "won": won, "tied": tied, "lost": lost},
    )


@cache
def registry() -> dict[str, GameEntry]:
    """Built once: the Yahtzee family in the rule sets' order, then Dice of Doom."""
    entries = [_yahtzee_entry(rules) for rules in RULE_SETS.values()]
    entries += [_doom_entry(size) for size in SIZES]
    return {entry.name: entry for entry in entries}


def names() -> list[str]:
    return list(registry())


def get_game(name: str) -> GameEntry:
    try:
        return registry()[name.strip().lower()]
    except KeyError:
        raise UnknownGameError(name) from None
