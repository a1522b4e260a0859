"""The exact distribution of the points to come, as the statistics a reader wants: JSON,
and the pass run off the event loop.

A value says what a position is worth on average; a player deciding whether to chase a
target score also wants the spread: how likely 300 is, what the median is, how often the
upper bonus comes. :func:`memo_solver.games.yahtzee.analysis.distribution.score_distribution`
computes all of it exactly by a forward pass under the optimal strategy; this module
gives it as JSON (``memo-solver stats --json``, ``POST /v1/stats``, a ``stats`` job's
record) and in words through :mod:`memo_solver.cli.reports`.

From the start the points to come are the final score. From a state they are the points
still to come: what is already on the scorecard is not included (the upper total so far
only decides whether the bonus is still to be won), and the output says so.

The full ``yahtzee`` game takes about 9 CPU s (the 15-box ``yatzy`` about 18), so the
command line shows a progress bar, and the HTTP service and the workers run the pass in a
worker thread (:func:`distribution_in_thread`) so that their event loop stays free.
"""

from __future__ import annotations

import threading
from typing import Any

import anyio
import anyio.to_thread

from memo_solver.core.engine import Engine
from memo_solver.games.yahtzee.analysis.distribution import (
    Distribution,
    Scores,
    blocks_below,
    forward_pass,
)
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.rules.state import State, start_state, state_to_json

PERCENTILES = (1, 5, 10, 25, 50, 75, 90, 95, 99)
"""The percentiles printed (the same as :meth:`Distribution.to_json`)."""


def stats_json(
    dist: Distribution,
    rules: RuleSet,
    state: State,
    thresholds: tuple[int, ...] = (),
    *,
    full: bool = True,
) -> dict[str, Any]:
    """The distribution's JSON with what it is a distribution of: rule set and state.

    ``from_start`` tells a reader whether the points are the final score or the points
    still to come; ``full=False`` leaves out the long list of probabilities.
    """
    out: dict[str, Any] = {
        "rules": rules.name,
        "state": state_to_json(state, rules),
        "from_start": state == start_state(),
        **dist.to_json(thresholds),
    }
    if not full:
        del out["probabilities"]
    return out


AGREEMENT = 1e-9
"""How far the target policy's P(points >= need) from the forward pass may lie from the
chance objective's value: choices tied to 1e-9 may each give up that much."""


def need_stats_json(
    target: Scores,
    mean: Distribution,
    value: float,
    rules: RuleSet,
    state: State,
    need: int,
    cap: int,
    thresholds: tuple[int, ...] = (),
) -> dict[str, Any]:
    """The target policy's distribution for ``need`` beside the mean policy's
    (``stats --need``): P(points >= need) under each, the chance objective's ``value``
    (which the target policy's, computed by another road, must equal), what playing for the
    need costs in expected points and what it gains in chance."""
    shown = tuple(sorted({need, *thresholds}))
    reached = target.survival(need)
    return {
        "rules": rules.name,
        "state": state_to_json(state, rules),
        "from_start": state == start_state(),
        "need": need,
        "cap": cap,
        "probability": value,
        "target_policy": {"p_need": reached, **target.to_json(shown)},
        "mean_policy": {"p_need": mean.survival(need), **Scores.to_json(mean, shown)},
        "points_cost": mean.mean - target.mean,
        "chance_gain": reached - mean.survival(need),
        "agrees": abs(reached - value) <= AGREEMENT,
    }


# --- off the event loop (the HTTP service) ---------------------------------------------------


class StoppedError(Exception):
    """The caller gave up on a distribution computed in a worker thread."""


async def distribution_in_thread(
    engine: Engine,
    rules: RuleSet,
    state: State,
    limiter: anyio.CapacityLimiter | None = None,
    theta: float = 0.0,
) -> Distribution:
    """The distribution, computed in a worker thread so that the event loop stays free
    (with ``theta`` != 0 the theta strategy's, ``engine`` the risk table's).

    The forward pass is seconds of CPU for a whole game with no await that yields, so run
    on a server's loop it would stall every other request, deadlines included. The blocks
    it needs are solved first on ``engine`` (async, shared with everyone); the pass then
    reads them from a plain mapping in a thread, with no engine and no event loop there.
    Cancelled, this returns at once and the thread stops at its next block.
    """
    blocks = await blocks_below(engine, rules, state)
    stop = threading.Event()

    def progress(done: int, total: int) -> None:
        if stop.is_set():
            raise StoppedError

    def run() -> Distribution:
        return forward_pass(blocks, rules, state, progress, theta)

    try:
        return await anyio.to_thread.run_sync(run, abandon_on_cancel=True, limiter=limiter)
    finally:
        stop.set()
