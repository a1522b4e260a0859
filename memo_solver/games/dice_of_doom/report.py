"""A Dice of Doom analysis in words (``advise`` on a terminal) and as plain JSON (``--json``
and the HTTP API), one spelling of a move, a value and an outcome for both.

Kept apart from :mod:`memo_solver.games.dice_of_doom.tree`: the solver decides, this says what
it decided, and the two change for different reasons.
"""

from __future__ import annotations

from fractions import Fraction

from memo_solver.games.dice_of_doom.board import draw_board, format_board, player_name
from memo_solver.games.dice_of_doom.tree import Analysis, Move, MoveValue, Position, TreeStats


def move_text(move: Move) -> str:
    """A move as the book's menu writes it: ``end turn`` or ``1 -> 0``."""
    return "end turn" if move is None else f"{move[0]} -> {move[1]}"


def describe_move(move: Move) -> str:
    """A move in words: ``end turn`` or ``attack 1 -> 0``."""
    return "end turn" if move is None else f"attack {move_text(move)}"


def format_value(value: Fraction) -> str:
    """``0``, ``1/2`` or ``1``."""
    return str(value)


def _count_dice(count: int) -> str:
    return f"{count} {'die' if count == 1 else 'dice'}"


def _outcome(value: Fraction) -> str:
    if value == 1:
        return "wins with best play"
    if value == 0:
        return "loses against best play"
    return "ties with best play"


def position_to_json(position: Position) -> dict[str, object]:
    """The position as plain JSON values."""
    return {
        "board": format_board(position.board),
        "size": position.board.size,
        "code": position.board.code,
        "player": player_name(position.player),
        "captured": position.captured,
    }


def move_to_json(move: Move) -> dict[str, object]:
    """``{"kind": "pass", "text": "end turn"}`` or an attack with its hexes."""
    if move is None:
        return {"kind": "pass", "text": "end turn"}
    return {"kind": "attack", "src": move[0], "dst": move[1], "text": move_text(move)}


def stats_to_json(stats: TreeStats) -> dict[str, object]:
    """Tree statistics as plain JSON integers; leaves by outcome as ``a``, ``b``, ``tie``."""
    return {
        "tree_size": stats.tree_size,
        "depth": stats.depth,
        "positions": stats.positions,
        "calls": stats.calls,
        "leaf_winners": {"a": stats.a_wins, "b": stats.b_wins, "tie": stats.ties},
    }


def analysis_to_json(analysis: Analysis) -> dict[str, object]:
    """The analysis as plain JSON values; each value as a fraction string and a float."""

    def rated(move_value: MoveValue) -> dict[str, object]:
        return {
            **move_to_json(move_value.move),
            "value": format_value(move_value.value),
            "value_float": float(move_value.value),
            "after": position_to_json(move_value.after),
        }

    return {
        "position": position_to_json(analysis.position),
        "value": format_value(analysis.value),
        "value_float": float(analysis.value),
        "game_over": analysis.winners is not None,
        "winners": None
        if analysis.winners is None
        else [player_name(player) for player in analysis.winners],
        "best": None if analysis.best is None else rated(analysis.best),
        "moves": [rated(move_value) for move_value in analysis.moves],
        "stats": None if analysis.stats is None else stats_to_json(analysis.stats),
    }


def format_analysis(analysis: Analysis) -> str:
    """The analysis for people: the board, the verdict, every move, the tree's figures."""
    position = analysis.position
    mover = player_name(position.player)
    lines = [
        f"{mover} to move"
        + (f", {_count_dice(position.captured)} captured this turn" if position.attacked else "")
        + ":",
        draw_board(position.board),
    ]
    if analysis.winners is not None:
        names = " and ".join(player_name(player) for player in analysis.winners)
        verdict = "a tie between a and b" if len(analysis.winners) > 1 else f"{names} wins"
        lines.append(f"The game is over ({mover} cannot attack): {verdict}.")
    else:
        assert analysis.best is not None  # a position with moves has a best one
        lines.append(
            f"Value for {mover}: {format_value(analysis.value)} "
            f"({mover} {_outcome(analysis.value)})"
        )
        lines.append(f"Best: {describe_move(analysis.best.move)}")
        lines.append("Moves:")
        for move_value in analysis.moves:
            mark = "  <- best" if move_value is analysis.best else ""
            lines.append(
                f"  {describe_move(move_value.move)} (value {format_value(move_value.value)})"
                + mark
            )
    if analysis.stats is not None:
        lines.append(format_stats(analysis.stats))
    return "\n".join(lines)


def format_stats(stats: TreeStats) -> str:
    """One line of tree figures: nodes, depth, distinct positions, calls, leaves by outcome."""
    outcomes = (("a wins", stats.a_wins), ("b wins", stats.b_wins), ("tie", stats.ties))
    leaves = ", ".join(f"{label} {count:,}" for label, count in outcomes if count)
    return (
        f"Game tree: {stats.tree_size:,} nodes, depth {stats.depth}, "
        f"{stats.positions:,} distinct positions, {stats.calls:,} memoised calls; "
        f"leaves: {leaves}"
    )
