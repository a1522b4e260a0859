"""What a game family gives the registry: its games' entries, the one parameter that picks
one of its games (``--rules yazy``, ``--size 2``), the value tables its fingerprints name,
and its own kinds of background job; and what it tells a service of a question (its
:class:`Cone`), so that the generic layers (the queue, the workers, the service's core,
``prune``) meet a game only through these.

Light on purpose (no numpy, no engine at import): the command line builds its ``--game``
and parameter options from these declarations for every ``--help``, and a family builds
its entries, which need the heavy modules, only when they are first asked for.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import anyio

    from memo_solver.core.engine import Engine
    from memo_solver.core.game import Block, Game

Warm = Callable[["Engine", str], Awaitable[None]]
Stats = Callable[["Engine", str, "anyio.CapacityLimiter"], Awaitable[dict[str, Any]]]
RootSummary = Callable[["Block"], tuple[str, dict[str, float]]]


@dataclass(frozen=True)
class GameEntry:
    """What the service needs to know about one game beyond the engine's protocol."""

    game: Game
    description: str
    summarize_root: RootSummary
    """The root block in words and as JSON fields, its headline figure first (the start
    value, a need table's chance of its cap), for the end of a precompute: a precompute
    job's record keeps that first figure as its ``value``."""
    canonical_state: Callable[[str], str]
    """A state for a ``warm`` or ``stats`` job, checked and written one way (raises
    ValueError naming the problem), so that equal jobs get equal ids."""
    warm: Warm
    """Solve what advice for the state needs, leaving it in the memo."""
    stats: Stats | None = None
    """The statistics a ``stats`` job stores in its record, where the game has them."""
    definition: bytes | None = None
    """For a game outside the registry (a rule-set file): its definition, which the store
    keeps beside its blocks so that workers and ``prune`` know the game by fingerprint."""

    @property
    def name(self) -> str:
        return self.game.name

    @property
    def job_name(self) -> str:
        """How jobs name the game: a registry name, or the fingerprint of one outside it."""
        return self.name if self.definition is None else self.game.fingerprint


@dataclass(frozen=True)
class Cone:
    """What a question reads of one game, as its family weighs it: a service answers it
    cold within a budget, or hands it to the workers, without knowing the game."""

    entry: GameEntry
    """The game whose blocks it reads (for a value table, the table's entry)."""
    keys: Sequence[str]
    """The blocks its answer reads: warm when a memo or the store holds them all."""
    size: int
    """What it weighs against its budget (turn starts for a mean, chances for a table of
    them)."""
    turn_starts: int
    """The turn starts it spans: what a solve of it is weighed by."""
    whole: int
    """The turn starts of the whole game: what a solve of it in the background takes."""
    game: str
    """The game in a player's words (a value table's too: its game's name)."""


@dataclass(frozen=True)
class Parameter:
    """The option that picks one game of a family on the command line, and the name in the
    registry that its value stands for."""

    flag: str
    help: str
    """What the value is, without its default (the command line adds it)."""
    default: Any
    game_name: Callable[[Any], str]
    type: Callable[[str], Any] = str
    choices: Sequence[Any] | None = None

    @property
    def dest(self) -> str:
        """The attribute the parsed value lands in (``--size``: ``size``)."""
        return self.flag.removeprefix("--").replace("-", "_")


@dataclass(frozen=True)
class ValueTable:
    """What a family reads in a fingerprint it owns: the game the table holds values of,
    under which objective (a rule set's own mean values, or its need table up to a cap)."""

    game: str
    """The fingerprint of the game (the table's own for the game's mean values)."""
    label: str
    """The value type in words, for operators (``status``, ``prune``)."""
    entry: Callable[[GameEntry], GameEntry]
    """The table's entry from the game's (raises the family's error when the game has no
    such table)."""


@dataclass(frozen=True)
class GameFamily:
    """One game family, as registered: its name (``--game``), its parameter, its games."""

    name: str
    parameter: Parameter
    entries: Callable[[], list[GameEntry]]
    """Every game of the family, built when the registry is first asked for one."""
    from_definition: Callable[[bytes], GameEntry] | None = None
    """A game outside the registry from the definition its store keeps beside its blocks
    (a rule-set file), for families whose games can be defined so."""
    value_table: Callable[[str], ValueTable | None] = lambda fingerprint: None
    """The value table a fingerprint names, for the fingerprints this family owns (None for
    any other): how jobs, workers and ``prune`` know a namespace beyond the registry's own
    names without spelling the family's formats."""
    job_kinds: Sequence[JobKind] = ()
    """The family's own kinds of background job, beside the ones every game has
    (:mod:`memo_solver.jobs.kinds`): a new kind is an entry here, with no change to the
    queue or the workers."""


class RecordFields(Protocol):
    """Writes fields into the record of the job being run (``status``, ``value``...)."""

    def __call__(self, **fields: str | int | float) -> Awaitable[None]: ...


@dataclass(frozen=True)
class JobRun:
    """One job as a worker runs it: the game, its engine, the job's state, and what the job
    may do beside its solve, in the workers' terms but without their module (a family's job
    kind is written below the job queue)."""

    entry: GameEntry
    engine: Engine
    state: str
    """The job's state as its kind wrote it (:attr:`JobKind.state`); as sent for a game
    named by fingerprint, which the queue cannot check without its definition."""
    limiter: anyio.CapacityLimiter
    """The worker's compute limiter, for work in threads beside the engine's."""
    record: RecordFields
    queue: Callable[[str, str], Awaitable[None]]
    """Queue a job of the same game (its kind, its state), again even if done before: how a
    precompute fans out to every idle worker."""


@dataclass(frozen=True)
class JobKind:
    """A kind of background job: how a message of the kind is checked, and how a worker
    runs it. The queue and the workers choose by this alone."""

    name: str
    run: Callable[[JobRun], Awaitable[None]]
    state: Callable[[GameEntry, str], str] | None = None
    """The job's state for a game of the registry, checked and written one way (raises
    ValueError naming the problem), so that equal jobs get equal ids; None for a kind that
    takes no state (the job is the whole game)."""
