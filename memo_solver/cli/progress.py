"""A solve's progress as a command shows it: a bar on a terminal, one line otherwise.

A cold query can take a minute (``value --rules yatzy``: 32,768 blocks), and a command that
prints nothing for that long looks hung. The engine counts what a query needs before it
solves anything and what it has computed since (its ``counters``), and tells its
``on_progress`` as they grow; this shows them on standard error, so standard output stays
the answer, and a warm query, which needs nothing, prints nothing extra.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, TextIO

from memo_solver.core.engine import Cost, Counters

if TYPE_CHECKING:
    from tqdm import tqdm


def block_bar(name: str, total: int, initial: int = 0, file: TextIO | None = None) -> tqdm[Any]:
    """Blocks done of ``total``, the rate and the time left, drawn only on a terminal
    (tqdm's ``disable=None``): the bar of ``precompute`` and of every solving command."""
    from tqdm import tqdm

    return tqdm(
        total=total,
        initial=initial,
        unit="block",
        desc=name,
        disable=None,
        file=sys.stderr if file is None else file,
    )


def _drawn(file: TextIO) -> bool:
    """Whether :func:`block_bar` draws on ``file``: tqdm's own test for ``disable=None``,
    asked here so that off a terminal (a script, a benchmark) tqdm is not even imported."""
    return not (hasattr(file, "isatty") and not file.isatty())


class SolveProgress:
    """An engine's ``on_progress``: told each time a query finds blocks to compute and each
    time a batch of them is computed, on the event loop, before the query that waits for
    them resumes; so a finished bar is closed before the command prints its answer (or
    ``play`` asks for dice) below it. Use it as a context manager around the command."""

    def __init__(self, name: str, file: TextIO | None = None) -> None:
        self.name = name
        self.file = sys.stderr if file is None else file
        self._bar: tqdm[Any] | None = None
        self._needed = 0
        self._computed = 0
        """The engine's counters when the bar last moved (a bar per solve)."""
        self._cost: Cost | None = None
        """The last cost told: each large solve's is said once, before its bar, where it
        is worth a word (:data:`COST_WORTH_SAYING_S`)."""

    def __call__(self, counters: Counters) -> None:
        more = counters.needed - self._needed
        said = False
        if counters.cost is not None and counters.cost is not self._cost:
            self._cost = counters.cost
            said = worth_saying(counters.cost)
            if said:
                words = cost_words(counters.cost)
                print(f"solving {self.name}: {words}", file=self.file, flush=True)
        if more > 0:
            self._start(more, said)
        elif more < 0 and self._bar is not None:  # a layered solve found some stored
            self._bar.total += more
            self._bar.refresh()
        self._needed = counters.needed
        if self._bar is None:
            self._computed = counters.computed
            return
        self._bar.update(counters.computed - self._computed)
        self._computed = counters.computed
        if counters.computed >= counters.needed:
            self._close()

    def _start(self, blocks: int, said: bool) -> None:
        if self._bar is not None:
            self._bar.total += blocks
            self._bar.refresh()
            return
        if said or _drawn(self.file):  # drawn, or the cost said it all
            self._bar = block_bar(self.name, blocks, file=self.file)
            return
        print(
            f"solving {self.name}: {blocks} block{'s' * (blocks != 1)} to compute "
            "(the store keeps them)",
            file=self.file,
            flush=True,
        )

    def _close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> SolveProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        """A bar left open (the command failed, or others computed some of the blocks)
        ends on its own line before whatever the command prints last."""
        self._close()


COST_WORTH_SAYING_S = 1.0
"""A large solve says its cost first where it takes a CPU second or more: a need table's
short cone (a wide block or two) is large in memory but done before a person reads it."""


def worth_saying(cost: Cost) -> bool:
    return cost.cpu_s >= COST_WORTH_SAYING_S


def cost_words(cost: Cost) -> str:
    """A large solve's cost as a person weighs it: blocks, CPU time, room in the store."""
    seconds = cost.cpu_s
    if seconds < 120:
        cpu = f"about {seconds:.0f} CPU s" if seconds >= 1 else "under a CPU second"
    elif seconds < 7200:
        cpu = f"about {seconds / 60:.0f} CPU minutes"
    else:
        cpu = f"about {seconds / 3600:.1f} CPU hours"
    size = cost.store_bytes / 1e6
    room = f"{size / 1000:.1f} GB" if size >= 1000 else f"{size:.0f} MB" if size >= 1 else "1 MB"
    return (
        f"{cost.blocks:,} blocks to compute, {cpu} at this machine's rate and {room} "
        "more in the store (the store keeps them; Ctrl-C stops, and a rerun goes on)"
    )


class PositionProgress:
    """A Dice of Doom position solver's ``progress``: the positions it holds so far, told
    from the solving thread once a solve stops being quick (see ``doom_tree``). The total
    is unknown until the solve ends, so the bar counts, with the rate, against no total;
    off a terminal, one line says what is being solved and how far it may go."""

    def __init__(self, limit: int, file: TextIO | None = None) -> None:
        self.limit = limit
        self.file = sys.stderr if file is None else file
        self._bar: tqdm[Any] | None = None
        self._said = False

    def __call__(self, positions: int) -> None:
        if self._said:
            return
        if self._bar is None:
            from tqdm import tqdm

            bar = tqdm(
                initial=positions,
                unit="position",
                unit_scale=True,
                bar_format="solving the position: {n_fmt} positions so far, at most "
                f"{self.limit:,} (--limit) [{{elapsed}}, {{rate_fmt}}]",
                disable=None,
                file=self.file,
            )
            if bar.disable:
                self._said = True
                print(
                    f"solving the position: over {positions:,} positions, at most "
                    f"{self.limit:,} (--limit)",
                    file=self.file,
                    flush=True,
                )
                return
            self._bar = bar
        self._bar.update(positions - self._bar.n)

    def __enter__(self) -> PositionProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        self._said = False
