"""``memo-solver stats``: the exact distribution of the points to come, in words, JSON or a plot.

A value says what a position is worth on average; a player deciding whether to chase a
target score also wants the spread: how likely 300 is, what the median is, how often the
upper bonus comes. :func:`memo_solver.games.yahtzee.distribution.score_distribution` computes all
of it
exactly by a forward pass under the optimal strategy; this module presents it.

From the start the points to come are the final score. From a state they are the points
still to come: what is already on the scorecard is not included (the upper total so far
only decides whether the bonus is still to be won), and the output says so.

The full ``yahtzee`` game takes about 35 CPU s (the 15-box ``yatzy`` about 100), so the
command shows a progress bar on standard error (only on a terminal: tqdm's
``disable=None``), and the HTTP service runs the pass in a worker thread
(:func:`distribution_in_thread`) so that its event loop stays free.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import numpy as np

from memo_solver.core.engine import Engine
from memo_solver.games.yahtzee.distribution import (
    Distribution,
    Progress,
    blocks_below,
    forward_pass,
    score_distribution,
)
from memo_solver.games.yahtzee.rules import RuleSet
from memo_solver.games.yahtzee.state import (
    State,
    StateError,
    format_state,
    parse_state,
    start_state,
    state_to_json,
)
from memo_solver.jobs import queue as jobs

if TYPE_CHECKING:
    from matplotlib.axes import Axes

PERCENTILES = (1, 5, 10, 25, 50, 75, 90, 95, 99)
"""The percentiles printed (the same as :meth:`Distribution.to_json`)."""
MARKED = (5, 25, 50, 75, 95)
"""The percentiles drawn on the plot: more lines would hide the curve."""
PLOT_EXTRA = "pip install 'memo-solver[plot]'"
_POLL_S = 0.5


async def command(args: argparse.Namespace, engine: Engine, rules: RuleSet) -> int:
    """The CLI entry point (``memo-solver stats``), called with an open engine."""
    from memo_solver.cli.main import emit

    state = parse_state(args.state, rules)
    thresholds = tuple(args.threshold)
    plot: Path | None = args.plot
    if plot is not None:
        check_plot_target(plot)  # before the work, not after
    redis = getattr(engine.store, "redis", None)
    if redis is not None and await jobs.live_workers(redis):
        dist = await _from_workers(redis, rules, state)
    else:
        with _progress_bar(rules, state) as progress:
            dist = await score_distribution(engine, rules, state, progress)
    if plot is not None:
        draw(dist, plot, title=_title(rules, state))
    payload = stats_json(dist, rules, state, thresholds)
    emit(args, payload, describe(dist, rules, state, thresholds, plot))
    return 0


async def _from_workers(redis: Any, rules: RuleSet, state: State) -> Distribution:
    """With workers on the shared store, the pass is their background job: ask, then wait.

    The job id is the content's, so asking twice (or from two terminals) waits for one
    computation, and a finished one answers at once.
    """
    from tqdm import tqdm

    job = jobs.Job.stats(rules.name, json.dumps(state_to_json(state, rules)))
    job_id, _ = await jobs.enqueue(redis, job)
    with tqdm(
        desc=f"{rules.name}: stats job {job_id} on the workers",
        unit="s",
        disable=None,
        file=sys.stderr,
    ) as bar:
        started = time.monotonic()
        while True:
            record = await jobs.job_record(redis, job_id) or {}
            if record.get("status") in ("done", "failed"):
                break
            await anyio.sleep(_POLL_S)
            bar.update(round(time.monotonic() - started) - bar.n)
    if record.get("status") == "failed" or "result" not in record:
        raise StateError("state", f"the stats job {job_id} failed: {record.get('error')}")
    return Distribution.from_json(json.loads(record["result"]))


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


def describe(
    dist: Distribution,
    rules: RuleSet,
    state: State,
    thresholds: tuple[int, ...] = (),
    plot: Path | None = None,
) -> str:
    """The distribution in words, for a person at a terminal."""
    from_start = state == start_state()
    what = "final score" if from_start else "points still to come"
    lines = [
        f"{rules.name}, {_where(rules, state)}: the {what} under optimal play",
    ]
    if not from_start:
        lines.append("(points already on the scorecard are not included)")
    lines += [
        f"mean {dist.mean:.4f}   std {dist.std:.4f}",
        "percentiles: " + ", ".join(f"{q}% {dist.percentile(q / 100)}" for q in PERCENTILES),
    ]
    lines += [f"P({what} >= {t}) = {_chance(dist.survival(t))}" for t in thresholds]
    if rules.upper_bonus:
        lines.append(f"P(upper bonus {rules.upper_bonus}) = {_chance(dist.p_upper_bonus)}")
    if rules.yahtzee_box is not None:
        name = rules.categories[rules.yahtzee_box].label
        lines.append(f"P({name} 50) = {_chance(dist.p_yahtzee)}")
        lines.append(f"P(any {name} rolled) = {_chance(dist.p_any_yahtzee)}")
    if rules.yahtzee_bonus:
        lines.append(f"P(any +{rules.yahtzee_bonus}) = {_chance(dist.p_extra_bonus)}")
    lines += ["", "expected points per box" + ("" if from_start else " (still to come)") + ":"]
    rows = [(rules.categories[rules.category_index(n)].label, v) for n, v in _boxes(dist, rules)]
    rows += [(_BONUS_LABELS.get(name, name), value) for name, value in dist.bonus_points.items()]
    width = max((len(label) for label, _ in rows), default=0)
    lines += [f"  {label:<{width}}  {value:8.4f}" for label, value in rows]
    if plot is not None:
        lines += ["", f"plot written to {plot}"]
    return "\n".join(lines)


def _chance(p: float) -> str:
    """Six decimals, without the "-0.000000" that a difference of sums can round to."""
    return f"{min(1.0, max(0.0, p)):.6f}"


_BONUS_LABELS = {"upper": "upper bonus", "yahtzee": "extra Yahtzee bonuses"}


def _boxes(dist: Distribution, rules: RuleSet) -> list[tuple[str, float]]:
    """The open boxes in scorecard order (the pass finds them in its own order)."""
    return [
        (c.name, dist.box_points[c.name]) for c in rules.categories if c.name in dist.box_points
    ]


def _where(rules: RuleSet, state: State) -> str:
    return "from the start" if state == start_state() else f"from {format_state(state, rules)}"


def _title(rules: RuleSet, state: State) -> str:
    what = "final score" if state == start_state() else "points still to come"
    return f"{rules.name} {_where(rules, state)}: {what}"


# --- progress --------------------------------------------------------------------------------


@contextmanager
def _progress_bar(rules: RuleSet, state: State) -> Iterator[Progress]:
    """A tqdm bar on standard error, counting the blocks the pass has moved past.

    ``disable=None`` shows it only on a terminal, so scripts and tests see clean output.
    """
    from tqdm import tqdm

    open_boxes = (rules.all_filled & ~state.filled).bit_count()
    with tqdm(
        total=1 << open_boxes, desc="distribution", unit="block", file=sys.stderr, disable=None
    ) as bar:

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        yield progress


# --- off the event loop (the HTTP service) ---------------------------------------------------


class StoppedError(Exception):
    """The caller gave up on a distribution computed in a worker thread."""


async def distribution_in_thread(
    engine: Engine,
    rules: RuleSet,
    state: State,
    limiter: anyio.CapacityLimiter | None = None,
) -> Distribution:
    """The distribution, computed in a worker thread so that the event loop stays free.

    The forward pass is tens of CPU seconds of numpy for a whole game with no await that
    yields, so run on a server's loop it would stall every other request, deadlines
    included. The blocks it needs are solved first on ``engine`` (async, shared with
    everyone); the pass then reads them from a plain mapping in a thread, with no engine
    and no event loop there. Cancelled, this returns at once and the thread stops at its
    next block.
    """
    blocks = await blocks_below(engine, rules, state)
    stop = threading.Event()

    def progress(done: int, total: int) -> None:
        if stop.is_set():
            raise StoppedError

    def run() -> Distribution:
        return forward_pass(blocks, rules, state, progress)

    try:
        return await anyio.to_thread.run_sync(run, abandon_on_cancel=True, limiter=limiter)
    finally:
        stop.set()


# --- the plot --------------------------------------------------------------------------------


def check_plot_target(path: Path) -> None:
    """Fail in one line, before the work, if the plot cannot be drawn or written."""
    from memo_solver.cli.main import UsageError

    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UsageError(f"--plot needs matplotlib: {PLOT_EXTRA}") from None
    folder = path.parent
    if not folder.is_dir():
        raise UsageError(f"--plot: the folder {folder} does not exist")


def draw(dist: Distribution, path: Path, *, title: str = "") -> None:
    """The probability of each total above, P(points >= s) below, the percentiles marked.

    A bare :class:`~matplotlib.figure.Figure` (no pyplot) leaves no global state behind and
    needs no display, so it is safe in a server or a test run.
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 7), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    probabilities = dist.probabilities
    totals = list(range(probabilities.size))
    top.bar(totals, probabilities, width=1.0, color="#4c72b0")
    top.set_ylabel("P(points = s)")
    top.set_title(title or "distribution of the points")
    survival = probabilities[::-1].cumsum()[::-1]
    bottom.step(totals, survival, where="mid", color="#4c72b0")
    bottom.set_ylabel("P(points >= s)")
    bottom.set_xlabel("points s")
    bottom.set_ylim(0, 1.02)
    nonzero = np.flatnonzero(probabilities > 1e-9)
    if nonzero.size:  # the tails past one in a billion would only squeeze the picture
        bottom.set_xlim(max(-0.5, nonzero[0] - 5), nonzero[-1] + 5)
    for axes in (top, bottom):
        _mark_percentiles(axes, dist)
    top.axvline(dist.mean, color="#c44e52", linewidth=1.2, label=f"mean {dist.mean:.2f}")
    top.legend(loc="upper right", fontsize="small")
    fig.savefig(path, dpi=100)


def _mark_percentiles(axes: Axes, dist: Distribution) -> None:
    top = axes.get_ylim()[1]
    for q in MARKED:
        at = dist.percentile(q / 100)
        axes.axvline(at, color="#888888", linestyle="--", linewidth=0.8)
        axes.annotate(
            f"{q}%: {at}",
            (at, top),
            xytext=(2, -2),
            textcoords="offset points",
            rotation=90,
            va="top",
            fontsize="x-small",
            color="#555555",
        )
