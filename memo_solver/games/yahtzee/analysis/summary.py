"""What a run of simulated games scored: totals, and every statistic with its standard error.

:func:`memo_solver.games.yahtzee.analysis.simulate.simulate` plays the games and adds them up here;
this turns the totals into figures (mean, spread, percentiles, the chance of each bonus,
the points of each box), as JSON and in words, each figure beside its standard error so
that a run is read against the exact answer. It knows nothing of how the games were played.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Final, Literal

import numpy as np
import numpy.typing as npt

from memo_solver.games.yahtzee.rules.rule_set import RuleSet

Strategy = Literal["optimal", "greedy"]
"""Who plays the games: the optimal strategy, or the greedy baseline."""
IntArray = npt.NDArray[np.int64]

SIMULATED_PERCENTILES: Final = (5, 25, 50, 75, 95)


@dataclass
class Summary:
    """What a run of games scored: totals from which every statistic follows."""

    rules: RuleSet
    strategy: Strategy
    seed: int
    histogram: IntArray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))
    """Games by final score."""
    box_points: npt.NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    """(C,) points scored in each box, summed over games (bonuses not included)."""
    box_squares: npt.NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    """(C,) the squares of those points, summed over games: the spread of each box's mean."""
    upper_bonus_games: int = 0
    yahtzee_games: int = 0
    """Games that scored the all-alike (Yahtzee) box's points (not 0)."""
    extra_games: int = 0
    """Games with at least one +100 bonus."""
    any_yahtzee_games: int = 0
    """Games with at least one turn ending with all dice alike, whichever box took it."""
    upper_bonus_points: int = 0
    extra_points: int = 0
    seconds: float = 0.0
    policies_built: int = 0
    policy_seconds: float = 0.0
    policy_bytes: int = 0
    exact_mean: float | None = None
    """What the strategy scores on average, exactly (the value of the empty scorecard): known
    for the optimal strategy, whose games are read against it."""

    @property
    def games(self) -> int:
        return int(self.histogram.sum())

    @property
    def mean(self) -> float:
        return float(self.histogram @ np.arange(self.histogram.size)) / self.games

    @property
    def std(self) -> float:
        """The sample standard deviation (0 for a single game)."""
        n = self.games
        if n < 2:
            return 0.0
        squares = self.histogram @ (np.arange(self.histogram.size) - self.mean) ** 2
        return math.sqrt(float(squares) / (n - 1))

    @property
    def se(self) -> float:
        return self.std / math.sqrt(self.games)

    @property
    def z(self) -> float | None:
        """How many standard errors the mean lies from the exact one; None where that is not
        known (the greedy baseline) or the games measure no error (one game, or games all
        scoring alike): then no distance is measured, not a distance of 0."""
        if self.exact_mean is None or not self.se:
            return None
        return (self.mean - self.exact_mean) / self.se

    @property
    def std_se(self) -> float:
        """The standard error of :attr:`std`, by the delta method: sqrt((m4 - s^4) / n) / (2 s).

        The variance of the sample variance is (m4 - s^4) / n (m4 the fourth central moment),
        and d(sqrt v) = dv / (2 sqrt v). In a tiny sample s^4 (with its n - 1) can exceed m4
        (two equally common scores give m4 = m2^2 < s^4): the error is then taken as 0.
        """
        s = self.std
        if s == 0.0:
            return 0.0
        scores = np.arange(self.histogram.size) - self.mean
        m4 = float(self.histogram @ scores**4) / self.games
        return math.sqrt(max(0.0, m4 - s**4) / self.games) / (2.0 * s)

    def percentile(self, q: float) -> int:
        """The smallest score reached by a share ``q`` of the games: the same definition as
        :meth:`memo_solver.games.yahtzee.analysis.distribution.Distribution.percentile`, so the two
        compare."""
        cumulative = np.cumsum(self.histogram)
        return int(np.searchsorted(cumulative, q * self.games - 1e-9))

    def percentile_se(self, q: float) -> float:
        """The standard error of :meth:`percentile`, distribution-free, from order statistics.

        The number of games scoring below the true ``q``-quantile is binomial(n, q): its
        standard deviation is d = sqrt(n q (1 - q)) ranks. The scores at ranks n q - d and
        n q + d (rounded outwards, clipped to 1..n) bound a one-standard-error interval
        without assuming any shape for the distribution; half its width is the error. A
        score is an integer, so the error can be 0 where the games crowd on one total.
        """
        n = self.games
        d = math.sqrt(n * q * (1.0 - q))
        low = max(1, math.floor(n * q - d + 1e-9))  # n q - d can be a hair below a whole rank
        high = min(n, math.ceil(n * q + d - 1e-9))
        cumulative = np.cumsum(self.histogram)
        lowest, highest = np.searchsorted(cumulative, [low, high])  # scores of those ranks
        return float(highest - lowest) / 2.0

    def share(self, count: int) -> tuple[float, float]:
        """A proportion of the games and its standard error."""
        p = count / self.games
        return p, math.sqrt(p * (1.0 - p) / self.games)

    def survival(self, threshold: int) -> tuple[float, float]:
        """P(score >= threshold), the share of the games that reached it, and its error."""
        return self.share(int(self.histogram[max(0, threshold) :].sum()))

    @property
    def box_means(self) -> npt.NDArray[np.float64]:
        """(C,) the mean points of each box (bonuses not included)."""
        means: npt.NDArray[np.float64] = self.box_points / self.games
        return means

    @property
    def box_se(self) -> npt.NDArray[np.float64]:
        """(C,) the standard error of each box's mean: its sample std / sqrt(n)."""
        n = self.games
        if n < 2:
            return np.zeros_like(self.box_points)
        squares = np.maximum(0.0, self.box_squares - self.box_points * self.box_means)
        se: npt.NDArray[np.float64] = np.sqrt(squares / (n - 1) / n)
        return se

    @property
    def games_per_second(self) -> float:
        return self.games / self.seconds if self.seconds > 0 else math.inf

    def to_json(self, thresholds: tuple[int, ...] = ()) -> dict[str, object]:
        """Every figure with its standard error beside it (``<key>_se``); ``survival`` is
        P(score >= t) for each of ``thresholds``, keyed as in ``memo-solver stats``."""
        p_upper, se_upper = self.share(self.upper_bonus_games)
        p_yahtzee, se_yahtzee = self.share(self.yahtzee_games)
        p_extra, se_extra = self.share(self.extra_games)
        p_any, se_any = self.share(self.any_yahtzee_games)
        survival = {str(t): self.survival(t) for t in thresholds}
        names = [c.name for c in self.rules.categories]
        payload: dict[str, object] = {
            "rules": self.rules.name,
            "policy": self.strategy,
            "games": self.games,
            "seed": self.seed,
            "mean": self.mean,
            "se": self.se,
            "std": self.std,
            "std_se": self.std_se,
            "median": self.percentile(0.5),
            "median_se": self.percentile_se(0.5),
            "percentiles": {str(q): self.percentile(q / 100) for q in SIMULATED_PERCENTILES},
            "percentiles_se": {str(q): self.percentile_se(q / 100) for q in SIMULATED_PERCENTILES},
            "survival": {t: p for t, (p, _) in survival.items()},
            "survival_se": {t: se for t, (_, se) in survival.items()},
            "min": int(np.flatnonzero(self.histogram)[0]),
            "max": int(self.histogram.size - 1),
            "p_upper_bonus": p_upper,
            "p_upper_bonus_se": se_upper,
            "p_yahtzee": p_yahtzee,
            "p_yahtzee_se": se_yahtzee,
            "p_extra_bonus": p_extra,
            "p_extra_bonus_se": se_extra,
            "p_any_yahtzee": p_any,
            "p_any_yahtzee_se": se_any,
            "box_points": dict(zip(names, self.box_means.tolist(), strict=True)),
            "box_points_se": dict(zip(names, self.box_se.tolist(), strict=True)),
            "bonus_points": {
                "upper": self.upper_bonus_points / self.games,
                "yahtzee": self.extra_points / self.games,
            },
            "seconds": self.seconds,
            "games_per_second": self.games_per_second,
            "policies_built": self.policies_built,
            "policy_seconds": self.policy_seconds,
            "policy_cache_bytes": self.policy_bytes,
        }
        if self.exact_mean is not None:
            payload["exact_mean"] = self.exact_mean
            payload["z"] = self.z
        return payload
