"""The third objective: exponential utility, the risk dial.

A player who is behind wants to gamble, one who leads to play safe. For a risk ``theta``
the strategy maximises E[exp(theta X)] of the points X still to come (minimises it for
theta < 0), which does not depend on the points already banked: exp(theta (banked + X)) is
exp(theta banked) exp(theta X). So a risk table has the mean table's blocks, keys and
shapes, one value per turn start: the certainty equivalent (1/theta) ln E[exp(theta X)],
in points, which stays finite where E[exp(theta X)] itself would overflow (exp(0.5 * 1575))
or vanish; the kernel solves it with the mean's steps
(:mod:`memo_solver.games.yahtzee.solve.kernel`, its docstring says how).

theta is a number in [-0.5, 0.5] with at most three decimals, held as an integer count of
thousandths, which names the table's namespace canonically (``<rules>-risk50``,
``<rules>-risk-100``: no ``+`` or ``.``, which a namespace in a URL or query string must
not carry). theta = 0 is the mean table itself: no risk table has it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Final

import numpy as np

from memo_solver.core.errors import UserError
from memo_solver.core.game import Block
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.solve.game import YahtzeeGame

MAX_THETA: Final = Decimal("0.5")
"""The largest |theta|: past it the certainty equivalents of a long game lose their digits
(a lane's utilities span exp(theta * its points)), and no player is that bold."""
DECIMALS: Final = 3


class RiskError(UserError):
    """A risk the objective cannot take."""

    field = "risk"


def risk_milli(theta: float | str) -> int:
    """``theta`` (a number, or as the user typed it) in thousandths, if a risk may be it: a
    number in [-0.5, 0.5] with at most three decimals; else a :class:`RiskError` saying
    what may."""
    try:
        exact: Decimal | None = Decimal(str(theta).strip())
    except InvalidOperation:
        exact = None
    if (
        exact is None
        or not exact.is_finite()
        or abs(exact) > MAX_THETA
        or exact.scaleb(DECIMALS) != exact.scaleb(DECIMALS).to_integral_value()
    ):
        raise RiskError(
            f"the risk must be a number from -{MAX_THETA} to {MAX_THETA} with at most "
            f"{DECIMALS} decimals (0 plays for the mean), not {theta}"
        )
    return int(exact.scaleb(DECIMALS))


def check_theta(theta: float | str) -> float:
    """``theta`` as the float every risk table of it uses (0.05, never 0.05000000000000001):
    :func:`risk_milli`'s thousandths over 1000."""
    return risk_milli(theta) / 1000


class RiskGame(YahtzeeGame):
    """A rule set's risk table at ``theta`` (not 0): the same blocks, keys, layers and
    shapes as its mean game, each value a certainty equivalent."""

    def __init__(self, rules: RuleSet, theta: float) -> None:
        self.milli = risk_milli(theta)
        if not self.milli:
            raise RiskError("a risk of 0 is the mean table: it has no risk table of its own")
        super().__init__(rules)
        self.theta = self.milli / 1000

    @property
    def name(self) -> str:
        return f"{self.rules.name} (risk {self.theta:g})"

    @property
    def fingerprint(self) -> str:
        return f"{self.rules.fingerprint}-risk{self.milli}"

    def solve_many(self, keys: Sequence[str], successors: Mapping[str, Block]) -> Sequence[Block]:
        """The mean game's solve at ``theta``, refusing a block whose values left the range
        of float64 (a rule set longer than any the product ships, at a large |theta|) rather
        than storing an infinity."""
        blocks = super().solve_many(keys, successors)
        if any(np.isinf(block).any() for block in blocks):
            raise RiskError(
                f"{self.rules.name} at a risk of {self.theta:g} leaves the range of the "
                "numbers the solver keeps: choose a risk nearer 0"
            )
        return blocks
