"""Values a player works out with a pencil, which the brute forces and the solver must give."""

from __future__ import annotations

from fractions import Fraction


def chance_by_rolls(rolls: int) -> Fraction:
    """One die in Chance with ``rolls`` rolls, stopping well: e_1 = 7/2, and with one more roll
    the first is kept when it beats the rest's worth, e_{n+1} = E max(X, e_n). Dice are
    independent there, so d dice are worth d times it."""
    worth = Fraction(7, 2)
    for _ in range(rolls - 1):
        worth = sum((max(Fraction(face), worth) for face in range(1, 7)), Fraction(0)) / 6
    return worth
