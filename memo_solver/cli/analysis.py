"""The analyst commands on a Yahtzee-family rule set: ``stats``, ``simulate``, ``review``
and ``export-table``.

Each takes its options typed (built from the command line by ``from_args``) and an open
engine, checks what it can before the work, calls the game's own functions
(:mod:`memo_solver.games.yahtzee` ``stats``, ``simulate``, ``review``, ``table``) and
prints through :mod:`memo_solver.cli.reports`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

import anyio

from memo_solver.cli.common import DEFAULT_EXPORT_TABLE_MB, EXPORT_TABLE_MB_ENV, Output, UsageError
from memo_solver.cli.reports import (
    describe_distribution,
    describe_need_distribution,
    describe_review,
    describe_simulation,
    draw_distribution,
    narrate,
    plot_title,
)
from memo_solver.core.engine import Engine
from memo_solver.core.errors import UserError
from memo_solver.games.yahtzee import (
    MAX_GAMES,
    PARQUET_EXTRA,
    WRITERS,
    AtRisk,
    Distribution,
    GameError,
    PolicyCache,
    Progress,
    RuleSet,
    State,
    StateError,
    Strategy,
    Target,
    build_table,
    export_bytes,
    need_stats_json,
    output_format,
    parse_state,
    review_game,
    score_distribution,
    simulate,
    start_state,
    state_to_json,
    stats_json,
    value_rows,
)

if TYPE_CHECKING:
    from memo_solver.jobs.queue import JobQueue

PLOT_EXTRA = "pip install 'memo-solver[plot]'"
_POLL_S = 0.5


# --- stats -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class StatsOptions:
    state: str = "start"
    thresholds: tuple[int, ...] = ()
    plot: Path | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> StatsOptions:
        return cls(args.state, tuple(args.threshold), args.plot)


async def stats_command(
    options: StatsOptions, engine: Engine, rules: RuleSet, queue: JobQueue | None, out: Output
) -> int:
    """``memo-solver stats``: the exact distribution, computed here, or by the workers as a
    background job when ``queue`` (the store's, on Redis) has a live one."""
    state = parse_state(options.state, rules)
    plot = options.plot
    if plot is not None:
        check_plot_target(plot)  # before the work, not after
    if queue is not None and await queue.live_workers():
        dist = await _from_workers(queue, rules, state)
    else:
        with _progress_bar(rules, state) as progress:
            dist = await score_distribution(engine, rules, state, progress)
    if plot is not None:
        draw_distribution(dist, plot, title=plot_title(rules, state))
    payload = stats_json(dist, rules, state, options.thresholds)
    out.emit(payload, describe_distribution(dist, rules, state, options.thresholds, plot))
    return 0


async def need_stats_command(
    options: StatsOptions, need: int, engine: Engine, mean: Engine, rules: RuleSet, out: Output
) -> int:
    """``memo-solver stats --need N``: the exact distribution under the target policy
    (``engine``: the need table's) beside the mean policy's (``mean``), computed here."""
    from memo_solver.games.yahtzee import NeedGame, advise_need, target_distribution

    if options.plot is not None:
        raise UsageError("--plot draws the mean policy's distribution: leave out --need")
    state = parse_state(options.state, rules)
    game = engine.game
    assert isinstance(game, NeedGame)
    value = (await advise_need(engine, mean, rules, state, need)).probability
    with _progress_bar(rules, state) as progress:
        target = await target_distribution(mean, engine, rules, state, need, progress)
    dist = await score_distribution(mean, rules, state)
    payload = need_stats_json(target, dist, value, rules, state, need, game.cap, options.thresholds)
    out.emit(payload, describe_need_distribution(payload, rules, state))
    return 0


async def risk_stats_command(
    options: StatsOptions, theta: float, engine: Engine, mean: Engine, rules: RuleSet, out: Output
) -> int:
    """``memo-solver stats --risk THETA``: the exact distribution under the theta strategy
    (``engine``: the risk table's, the mean game's at 0), computed here, with the state's
    certainty equivalent, which E[exp(THETA x points)] of the distribution equals."""
    from memo_solver.games.yahtzee import advise_risk

    if options.plot is not None:
        raise UsageError("--plot draws the mean policy's distribution: leave out --risk")
    state = parse_state(options.state, rules)
    certain = (await advise_risk(engine, mean, rules, state, theta)).certainty_equivalent
    with _progress_bar(rules, state) as progress:
        dist = await score_distribution(engine, rules, state, progress, theta)
    payload = {
        **stats_json(dist, rules, state, options.thresholds),
        "risk": theta,
        "certainty_equivalent": certain,
    }
    words = describe_distribution(
        dist, rules, state, options.thresholds, strategy=f"play at risk {theta:g}"
    )
    out.emit(payload, f"{words}\ncertainty equivalent at risk {theta:g}: {certain:.4f}")
    return 0


async def _from_workers(queue: JobQueue, rules: RuleSet, state: State) -> Distribution:
    """With workers on the shared store, the pass is their background job: ask, then wait.

    The job id is the content's, so asking twice (or from two terminals) waits for one
    computation, and a finished one answers at once.
    """
    from tqdm import tqdm

    from memo_solver.jobs.queue import Job

    job = Job.stats(rules.name, json.dumps(state_to_json(state, rules)))
    job_id, _ = await queue.enqueue(job)
    with tqdm(
        desc=f"{rules.name}: stats job {job_id} on the workers",
        unit="s",
        disable=None,
        file=sys.stderr,
    ) as bar:
        started = time.monotonic()
        while True:
            record = await queue.record(job_id) or {}
            if record.get("status") in ("done", "failed"):
                break
            await anyio.sleep(_POLL_S)
            bar.update(round(time.monotonic() - started) - bar.n)
    if record.get("status") == "failed" or "result" not in record:
        raise StateError("state", f"the stats job {job_id} failed: {record.get('error')}")
    return Distribution.from_json(json.loads(record["result"]))


@contextmanager
def _progress_bar(rules: RuleSet, state: State) -> Iterator[Progress]:
    """A tqdm bar on standard error, counting the blocks the pass has moved past.

    ``disable=None`` shows it only on a terminal, so scripts and tests see clean output.
    """
    from tqdm import tqdm

    blocks = len(rules.reachable_masks(state.filled))
    with tqdm(
        total=blocks, desc="distribution", unit="block", file=sys.stderr, disable=None
    ) as bar:

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        yield progress


def check_plot_target(path: Path) -> None:
    """Fail in one line, before the work, if the plot cannot be drawn or written."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UsageError(f"--plot needs matplotlib: {PLOT_EXTRA}") from None
    from matplotlib.backend_bases import FigureCanvasBase

    # The formats matplotlib writes, by the file's ending (a name without one is a PNG).
    formats = sorted(FigureCanvasBase.get_supported_filetypes())
    ending = path.suffix.removeprefix(".").lower()
    if ending and ending not in formats:
        raise UsageError(
            f"--plot: matplotlib cannot draw a .{ending} file; end its name in "
            + ", ".join(f".{name}" for name in formats)
        )
    folder = path.parent
    if not folder.is_dir():
        raise UsageError(f"--plot: the folder {folder} does not exist")


# --- simulate --------------------------------------------------------------------------------


@dataclass(frozen=True)
class SimulateOptions:
    games: int = 1000
    seed: int = 0
    policy: Strategy = "optimal"
    log: Path | None = None
    """Every game as a JSON line in this file."""
    show: bool = False
    """Narrate the first game."""
    thresholds: tuple[int, ...] = ()

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> SimulateOptions:
        return cls(
            args.games,
            args.seed,
            cast(Strategy, args.policy),
            args.log,
            args.show,
            tuple(args.threshold),
        )


async def simulate_command(
    options: SimulateOptions,
    engine: Engine,
    rules: RuleSet,
    out: Output,
    need: tuple[Engine, int] | None = None,
    theta: float = 0.0,
) -> int:
    """``memo-solver simulate``: play seeded games, print their statistics; with ``need``
    (the need table's engine and the final score to reach, ``--need``) the games play the
    target policy, and the share that reach it is read beside the exact chance; with
    ``theta`` != 0 (``engine`` the risk table's) they play the theta strategy."""
    if not 1 <= options.games <= MAX_GAMES:
        raise UsageError(f"--games must be between 1 and {MAX_GAMES:,}, got {options.games}")
    if options.seed < 0:
        raise UsageError(f"--seed must be 0 or more, got {options.seed}")
    strategy = options.policy
    target = None
    if need is not None:
        if strategy != "optimal":
            raise UsageError("--need plays the target policy: leave out --policy greedy")
        target = Target(*need)
    if theta and strategy != "optimal":
        raise UsageError("--risk plays the theta strategy: leave out --policy greedy")
    shown: list[dict[str, object]] = []
    async with AsyncExitStack() as stack:
        # Opened before the first game, so a bad path fails at once, not after the run.
        log_file = None
        if options.log is not None:
            log_file = await stack.enter_async_context(
                await anyio.open_file(options.log, "w", encoding="utf-8")
            )

        async def on_games(games: list[dict[str, object]]) -> None:
            if options.show and not shown:
                shown.append(games[0])
            if log_file is not None:
                header: dict[str, object] = {
                    "rules": rules.name,
                    "policy": strategy,
                    "seed": options.seed,
                }
                if theta:  # the strategy played: the theta one's
                    header["risk"] = theta
                await log_file.write("".join(json.dumps({**header, **g}) + "\n" for g in games))

        record = options.games if log_file is not None else int(options.show)
        summary = await simulate(
            engine,
            PolicyCache(rules, strategy, theta=theta),
            options.games,
            options.seed,
            on_games=on_games if record else None,
            record=record,
            target=target,
        )
    payload = summary.to_json(options.thresholds)
    if theta:
        payload["risk"] = theta
    text = describe_simulation(summary, options.thresholds)
    if target is not None:
        from memo_solver.games.yahtzee import advise_need

        start = await advise_need(target.engine, engine, rules, start_state(), target.need)
        exact = start.probability
        hit, se = summary.survival(target.need)
        payload["need"] = {"need": target.need, "hit_rate": hit, "hit_rate_se": se, "exact": exact}
        text = (
            f"playing for a final score of {target.need} or more: reached in "
            f"{100 * hit:.2f}% ± {100 * se:.2f}% of the games, exactly {100 * exact:.4f}% "
            f"(z = {(hit - exact) / se if se else 0.0:+.2f})\n{text}"
        )
    if shown:
        payload["game"] = shown[0]
        text = f"{narrate(rules, shown[0])}\n\n{text}"
    out.emit(payload, text)
    return 0


# --- review ----------------------------------------------------------------------------------


async def review_command(
    source: str, engine: Engine, rules: RuleSet, out: Output, risk: AtRisk | None = None
) -> int:
    """``memo-solver review``: the game from a file (``-``: standard input), rated for points
    or at a ``risk``."""
    game = load_game(source)
    try:
        result = await review_game(engine, rules, game, risk)
    except GameError as exc:
        raise UsageError(str(exc)) from None
    out.emit(result.to_json(), describe_review(result))
    return 0


def load_game(source: str) -> object:
    """The game JSON from a file, or from standard input for ``-``."""
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read the game: {exc.strerror or exc} ({source})") from None
    except UnicodeDecodeError:
        raise UsageError(f"the game is not UTF-8 text ({source})") from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise UsageError(f"the game is not valid JSON: {exc}") from None
    except RecursionError:
        raise UsageError("the game is not valid JSON: it is nested too deep") from None


# --- export-table ----------------------------------------------------------------------------


@dataclass(frozen=True)
class TableOptions:
    out: Path
    format: str | None = None
    """npz, jsonl or parquet; None: from the file's extension."""
    max_memory_mb: int = DEFAULT_EXPORT_TABLE_MB

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> TableOptions:
        """The options over the environment (``$MEMO_SOLVER_EXPORT_TABLE_MB``)."""
        limit: int | None = args.max_memory_mb
        text = ""
        if limit is None:
            text = os.environ.get(EXPORT_TABLE_MB_ENV, str(DEFAULT_EXPORT_TABLE_MB))
            limit = int(text) if text.strip().isdigit() else -1
        if limit < 0:
            given = f"${EXPORT_TABLE_MB_ENV} is {text!r}" if text else f"got {limit}"
            raise UserError(f"--max-memory-mb must be a number of MiB ({given})", "max_memory_mb")
        return cls(args.out, args.format, limit)


async def export_table_command(
    options: TableOptions, engine: Engine, rules: RuleSet, out: Output
) -> int:
    """``memo-solver export-table``: the strategy table of the rule set, in a file."""
    from tqdm import tqdm

    path = options.out
    try:
        fmt = output_format(path, options.format)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not path.parent.is_dir():
        raise UsageError(f"--out: the folder {path.parent} does not exist")
    if fmt == "parquet":
        check_pyarrow()  # fail before the work, not after
    needed = -(-export_bytes(rules) >> 20)  # MiB, rounded up: a table never needs 0
    if needed > options.max_memory_mb:
        raise UserError(
            f"--max-memory-mb: the strategy table of {rules.name} has {value_rows(rules):,} "
            f"values and takes about {needed:,} MiB of memory to write, past the limit of "
            f"{options.max_memory_mb:,}: raise --max-memory-mb (or ${EXPORT_TABLE_MB_ENV}) "
            "on a machine with that much memory, or copy the solved blocks with "
            "'memo-solver export'",
            "max_memory_mb",
        )
    with tqdm(total=rules.block_count, desc="table", unit="block", disable=None) as bar:
        table = await build_table(engine, rules, lambda done: bar.update(done - bar.n))
    files = WRITERS[fmt](table, path)
    decisions = None if table.decisions is None else table.decisions.count
    payload = {
        "rules": rules.name,
        "format": fmt,
        "files": [str(f) for f in files],
        "values": int(table.value.size),
        "decisions": decisions,
        "note": table.note or None,
    }
    what = f"{table.value.size:,} turn-start values"
    if decisions is not None:
        what += f" and {decisions:,} decisions"
    text = f"wrote {what} of {rules.name} to {', '.join(map(str, files))}"
    if table.note:
        text += f"\nnote: {table.note}"
    out.emit(payload, text)
    return 0


def check_pyarrow() -> None:
    """Fail in one line if ``--format parquet`` cannot be written (pyarrow is an extra)."""
    try:
        import pyarrow
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise UsageError(f"--format parquet needs pyarrow: {PARQUET_EXTRA}") from None
