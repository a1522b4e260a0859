"""The board sizes the shared memo holds, and the registry names of their games.

Apart from the game so that the command line can offer ``--size`` without loading numpy.
"""

from __future__ import annotations

from typing import Final

SIZES: Final = (2, 3)
"""Board sizes whose every turn start fits a store (3 x 3: 20,155,392 turn starts)."""


def doom_name(size: int) -> str:
    """The registry name of a board size: what ``--game dice-of-doom --size N`` means."""
    return f"dice-of-doom-{size}x{size}"
