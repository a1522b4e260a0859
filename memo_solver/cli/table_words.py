"""What every game's ``play`` table reads and writes alike, so that a player who knows one
table knows the other: the words that stop, explain and take back, a guess at a mistyped
word, and how a move's cost beside the best is marked."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

QUIT, HELP, UNDO = ("quit", "q"), ("help", "?"), ("undo",)
"""Read before a game's own answers (no move or box is called any of them)."""


def did_you_mean(answer: str, words: Iterable[str], *, cutoff: float = 0.6) -> str:
    """`` (did you mean 'help'?)`` for the word closest to a mistyped answer; empty when
    none is close (``cutoff``: how alike, 0 to 1), so that a guess is only offered where it
    is likely right. An answer of several words where no word is that close has its first
    word guessed and the rest kept (``kep 66``: ``keep 66``)."""
    close = difflib.get_close_matches(answer.lower(), list(words), n=1, cutoff=cutoff)
    first, _, rest = answer.partition(" ")
    if not close and rest:
        close = [
            f"{guess} {rest}"
            for guess in difflib.get_close_matches(first.lower(), list(words), n=1, cutoff=cutoff)
        ]
    return f" (did you mean {close[0]!r}?)" if close else ""


def cost_mark(best: bool, tie: bool, loss: str) -> str:
    """The column beside a move: ``best`` for the move advised, ``tie`` for one worth as
    much, else what choosing it costs (``-1/2``, ``-3.25``)."""
    return "best" if best else "tie" if tie else f"-{loss}"
