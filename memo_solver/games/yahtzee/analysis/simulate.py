"""Play many games with the optimal (or a greedy) strategy: Monte Carlo next to the exact answer.

One module of about 860 lines, on purpose: the compact block policies, their cache and the
lockstep play share one encoding of a choice (a keep as a bit mask of the roll's sorted
dice, a box as its place among the open ones, and under saved rolls "score now" beside
them), and the game logs read the play's own record, so they are read and changed together.
What a run scored, as statistics: :mod:`memo_solver.games.yahtzee.analysis.summary`.

The exact distribution (:mod:`memo_solver.games.yahtzee.analysis.distribution`) says what the
strategy scores on
average; a simulation shows it game by game (logs a person can read or replay), checks
the solver end to end against an independent estimate, and measures baselines such as a
greedy player that the exact pass does not cover.

Speed comes from playing all games of a chunk in lockstep, vectorized across games: every
game is in the same turn at the same time, so per turn the games are grouped by their
filled boxes (``np.unique``), each group's choices are gathered from its block policy with
one fancy index per decision, and the dice of all games are thrown at once. A block's
policy is built for the guideposts its games stand on (extended when they reach others),
by the compiled steps and tie rule of :func:`memo_solver.games.yahtzee.analysis.policy.
block_choices`, the choices of :func:`memo_solver.games.yahtzee.analysis.policy.turn_policy` (so the
games follow exactly the strategy of the exact distribution; the tests compare the two
block by block), and kept, compacted to one byte per choice, in a :class:`PolicyCache` that
later turns, chunks and runs reuse. Warm, a game costs microseconds; cold, building the
policies dominates: 2,000 cold ``yahtzee`` games build 5,240 blocks' in about 0.5 CPU s,
the whole strategy (8,191 blocks, every guidepost) takes about 2.

Under saved rolls each game carries its bank from turn to turn, and within a turn the games
stop rolling at different times: a step looks up each still-rolling game's choice at its
rolls left, throws for those that keep, and the others score (:func:`_saved_turn`).

The games are reproducible from the seed: one ``Generator(PCG64(seed))`` draws every die,
in a fixed order (chunk by chunk, turn by turn, roll by roll, all the rule set's dice per
game and roll, whether or not all are thrown; under saved rolls, from the first roll on, for
the games still rolling only).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Final, cast

import anyio
import anyio.to_thread
import numpy as np
import numpy.typing as npt

from memo_solver.core.engine import Engine
from memo_solver.core.game import Block
from memo_solver.games.yahtzee.analysis.distribution import widened
from memo_solver.games.yahtzee.analysis.policy import (
    TurnPolicy,
    block_choices,
    most_rolls_left,
    target_policy,
    turn_policy,
)
from memo_solver.games.yahtzee.analysis.summary import Strategy, Summary
from memo_solver.games.yahtzee.rules.dice import FACES, MAX_DICE, Dice
from memo_solver.games.yahtzee.rules.rule_set import RuleSet, refuse_saved_rolls
from memo_solver.games.yahtzee.solve.forward_kernel import SCORE_NOW
from memo_solver.games.yahtzee.solve.game import YahtzeeGame, block_key
from memo_solver.games.yahtzee.solve.need import (
    NeedBeyondCapError,
    NeedGame,
    reach,
    width as need_width,
)
from memo_solver.games.yahtzee.solve.scoring import land, points
from memo_solver.games.yahtzee.solve.turn import Guideposts

IntArray = npt.NDArray[np.int64]
SmallArray = npt.NDArray[np.uint8]

MAX_GAMES: Final = 10_000_000
CHUNK_GAMES: Final = 1 << 17
"""Games played in lockstep at once: large enough that the per-group Python work is spread
over many games, small enough that a 10-million-game run holds tens of MiB of state."""
DEFAULT_CACHE_BYTES: Final = 1 << 30
"""A whole ``yahtzee`` strategy takes 415 MiB compacted: it fits, with room to spare."""

# --- dice bookkeeping, vectorized -----------------------------------------------------------

_NOT_INSIDE: Final = 255
"""No keep mask: a keep mask has one bit per die, so it is at most 63 (six dice)."""


@dataclass(frozen=True, eq=False)
class DiceTables:
    """The bookkeeping tables of one dice count, built once per :class:`Dice` (:func:`dice_tables`).

    A multiset of dice is coded as its face counts in base ``count + 1`` (a count never
    exceeds the dice): adding a thrown die of face f adds ``base**f``, and the code of all
    the dice looks up the roll index. This turns "keep + thrown dice -> sorted roll" into
    two gathers. A keep inside a roll is also a bit mask of the roll's sorted dice, so that
    a choice fits in one byte.
    """

    dice: Dice
    power: IntArray
    """(6,) ``base**f`` for each face f (0-based)."""
    keep_code: IntArray
    """(n_keeps,) each keep's code."""
    roll_of_code: IntArray
    """(base**6,) the roll of each code of all the dice, -1 for the other codes."""
    keep_of_mask: npt.NDArray[np.int16]
    """(n_rolls, 2**count) the keep of each (roll, mask)."""
    mask_of_keep: SmallArray
    """(n_rolls, n_keeps) one mask for each keep inside a roll (the smallest), 255 where the
    keep is not inside it."""

    @property
    def all_kept(self) -> int:
        """The mask keeping every die: no reroll."""
        return (1 << self.dice.count) - 1


@lru_cache(maxsize=MAX_DICE)
def dice_tables(dice: Dice) -> DiceTables:
    base = dice.count + 1
    power = base ** np.arange(FACES, dtype=np.int64)
    roll_of_code = np.full(base**FACES, -1, dtype=np.int64)
    roll_of_code[dice.roll_counts @ power] = np.arange(dice.n_rolls)
    masks = 1 << dice.count
    keep_of_mask = np.zeros((dice.n_rolls, masks), dtype=np.int16)
    mask_of_keep = np.full((dice.n_rolls, dice.n_keeps), _NOT_INSIDE, dtype=np.uint8)
    for r, roll in enumerate(dice.rolls):
        for mask in range(masks - 1, -1, -1):  # descending: the smallest mask wins
            keep = dice.keep_index[tuple(roll[i] for i in range(dice.count) if mask >> i & 1)]
            keep_of_mask[r, mask] = keep
            mask_of_keep[r, keep] = mask
    return DiceTables(
        dice, power, dice.keep_counts @ power, roll_of_code, keep_of_mask, mask_of_keep
    )


def throw(rng: np.random.Generator, dice: Dice, keep: IntArray) -> IntArray:
    """The roll index after keeping ``keep`` (keep indices, one per game) and throwing the
    other dice: ``dice.count`` dice are drawn per game, the first ``count - len(keep)`` of
    them thrown."""
    tables = dice_tables(dice)
    faces = rng.integers(0, FACES, size=(keep.size, dice.count), dtype=np.uint8)
    slot = np.arange(dice.count)[None, :]
    thrown = slot < (dice.count - dice.keep_sizes[keep])[:, None]
    code = tables.keep_code[keep] + np.where(thrown, tables.power[faces], 0).sum(axis=1)
    rolls: IntArray = tables.roll_of_code[code]
    return rolls


# --- block policies, compacted and cached ---------------------------------------------------


@dataclass(frozen=True, eq=False)
class BlockPolicy:
    """One block's strategy at some of its guideposts (its columns), one byte per choice.

    A full :class:`memo_solver.games.yahtzee.analysis.policy.TurnPolicy` also holds every value
    (about 4 MiB for a ``yahtzee`` block of 128 guideposts); the simulation needs only the choices,
    ``rerolls + 1`` bytes per roll and guidepost (756 with five dice), so a whole ``yahtzee``
    strategy fits in memory. With saved rolls a choice is kept for every count of rolls left
    after the first roll, 0 to 40 in the last turn of ``maxi-yatzy-saved``: 41 x 462 rolls x
    85 upper totals, 1.5 MiB for that whole block, against 115 KiB in ``maxi-yatzy`` (and
    0.5 MiB for the last turn of ``yatzy-saved``). The cache's bound counts these bytes as
    any others, so a run keeps within it, rebuilding what it dropped.
    """

    boxes: IntArray
    """(C_open,) the open boxes, scorecard order."""
    points: npt.NDArray[np.int16]
    """(C_open, n_rolls) the points of each roll in each open box (Joker included; -1 where
    the Joker forbids the box, which no strategy picks)."""
    choices: SmallArray
    """(rerolls + 1, n_rolls, B): [0] with no reroll left the position in ``boxes`` of the
    box scored; [n] with n rerolls left the dice kept, as a mask of the roll's sorted dice
    (:attr:`DiceTables.all_kept`: every die, no reroll). With saved rolls the rows are the
    rolls left, 0 up to the most a turn of this block has, and [n] is the mask of a keep
    that rerolls, or ``SCORE_NOW`` plus the box's position: stop and score now."""
    column: npt.NDArray[np.int16]
    """(n_upper, n_bonus) the column of each guidepost, -1 where the policy has none (not
    built yet, or unreachable)."""

    @cached_property
    def rows(self) -> tuple[SmallArray, ...]:
        """The rows of :attr:`choices` as views made once: the play reads a row per block
        and step, thousands of times a turn, where making the view each time cost more than
        the lookup."""
        return tuple(self.choices)

    @property
    def box(self) -> SmallArray:
        """(n_rolls, B) with no reroll left: the position in ``boxes`` of the box scored."""
        return self.rows[0]

    @property
    def keep(self) -> tuple[SmallArray, ...]:
        """keep[n] (n_rolls, B) with n rerolls left (n >= 1); keep[0] is empty."""
        return (np.empty((0, 0), dtype=np.uint8), *self.rows[1:])

    @property
    def nbytes(self) -> int:
        arrays: list[npt.NDArray[np.generic]] = [self.boxes, self.points, self.choices, self.column]
        return sum(a.nbytes for a in arrays)

    def lacking(self, levels: IntArray) -> IntArray:
        """The guideposts among ``levels`` (raveled (upper, bonus) indices) with no column."""
        lacking: IntArray = levels[self.column.ravel()[levels] < 0]
        return lacking

    def joined(self, more: BlockPolicy) -> BlockPolicy:
        """This policy with the columns of ``more`` (the same block's, other guideposts)
        after its own."""
        width = self.choices.shape[2]
        return BlockPolicy(
            boxes=self.boxes,
            points=self.points,
            choices=np.concatenate([self.choices, more.choices], axis=2),
            column=np.where(more.column >= 0, more.column + width, self.column).astype(np.int16),
        )


def optimal_policies(
    rules: RuleSet,
    masks: Sequence[int],
    successors: Mapping[str, Block],
    levels: Sequence[IntArray] | None = None,
    theta: float = 0.0,
) -> dict[int, BlockPolicy]:
    """The optimal strategy of these blocks (:func:`memo_solver.games.yahtzee.analysis.policy.
    block_choices`, the choices of :func:`memo_solver.games.yahtzee.analysis.policy.turn_policy`),
    packed for lookups: one byte per choice, at the guideposts ``levels[b]`` of each
    (raveled (upper, bonus) indices; default: every reachable one). Every block needs an
    open box.

    With ``theta`` != 0 ``successors`` are the risk table's and the strategy the theta
    strategy: :func:`turn_policy` at theta block by block, the very choices the exact
    distribution at that risk follows (the compiled batch ranks by the mean's values)."""
    if levels is None:
        levels = [Guideposts.reachable(rules, mask).flat for mask in masks]
    tables = dice_tables(rules.universe)
    if theta:
        choices = [
            _risk_choices(rules, mask, successors, lanes, theta)
            for mask, lanes in zip(masks, levels, strict=True)
        ]
    else:
        choices = block_choices(
            rules, masks, lambda mask: successors[block_key(mask)], tables.mask_of_keep, levels
        )
    policies = {}
    for filled, lanes, batch in zip(masks, levels, choices, strict=True):
        chosen = batch.copy()  # the policy's own bytes, not a view of the whole batch
        if (chosen[1:] == _NOT_INSIDE).any():
            raise AssertionError(f"block {filled:x}: a chosen keep is not inside its roll")
        column = np.full(rules.block_shape, -1, dtype=np.int16)
        column.ravel()[lanes] = np.arange(lanes.size)
        boxes = rules.open_boxes(filled)
        policies[filled] = BlockPolicy(
            boxes=np.array(boxes, dtype=np.int64),
            points=_points16(points(rules, filled, boxes)),
            choices=chosen,
            column=column,
        )
    return policies


def _risk_choices(
    rules: RuleSet, filled: int, successors: Mapping[str, Block], lanes: IntArray, theta: float
) -> SmallArray:
    """The theta strategy's choices of one block at guideposts ``lanes`` (raveled)."""
    guideposts = Guideposts(rules, *np.divmod(lanes, rules.n_bonus_levels))
    chosen = turn_policy(
        rules, filled, lambda box: successors[block_key(filled | 1 << box)], guideposts, theta
    )
    return _packed(rules, chosen)


def _packed(rules: RuleSet, chosen: TurnPolicy) -> SmallArray:
    """A plain turn's choices one byte each: the box's position, then each keep's mask."""
    mask_of_keep = dice_tables(rules.universe).mask_of_keep
    rolls = np.arange(rules.universe.n_rolls)[:, None]
    keeps = (mask_of_keep[rolls, k] for k in chosen.keep[1:])
    return np.stack([chosen.box.astype(np.uint8), *keeps])


def greedy_policy(rules: RuleSet, filled: int) -> BlockPolicy:
    """The baseline: never reroll, score the box worth most points now (first on ties).

    It ignores the guideposts (one column serves them all), so it needs no solved blocks.
    With saved rolls it stops at once, every roll carried (keeping every die would spend
    one)."""
    boxes = rules.open_boxes(filled)
    table = points(rules, filled, boxes)  # -inf where the Joker forbids a box
    best = table.argmax(axis=0).astype(np.uint8)[:, None]
    if rules.saved_rolls:
        later = SCORE_NOW + best
        most = most_rolls_left(rules, filled.bit_count())
    else:
        later = np.full_like(best, dice_tables(rules.universe).all_kept)
        most = rules.rerolls
    return BlockPolicy(
        boxes=np.array(boxes, dtype=np.int64),
        points=_points16(table),
        choices=np.stack([best, *([later] * most)]),
        column=np.zeros(rules.block_shape, dtype=np.int16),
    )


def _points16(table: npt.NDArray[np.float64]) -> npt.NDArray[np.int16]:
    return np.where(np.isfinite(table), table, -1).astype(np.int16)


class PolicyCache:
    """Block policies by filled mask for one rule set and strategy, least recently used
    dropped first once ``max_bytes`` is exceeded.

    Building the optimal policies is the cold cost of a simulation; keeping them makes every
    later game, chunk or run cost only the play itself. A block's policy is built for the
    guideposts its games stand on, and extended when games reach others (a few of a block's
    up to 128, in a cold run of thousands of games: most of the cost saved).
    """

    def __init__(
        self,
        rules: RuleSet,
        strategy: Strategy = "optimal",
        max_bytes: int | None = DEFAULT_CACHE_BYTES,
        theta: float = 0.0,
    ) -> None:
        """``theta`` != 0: the optimal strategy at that risk, from the risk table's engine."""
        if theta:
            refuse_saved_rolls(rules, "simulate at a risk (--risk)")
        self.theta = theta
        self.rules = rules
        self.strategy: Strategy = strategy
        self.max_bytes = max_bytes
        self.nbytes = 0
        self.built = 0
        self.build_seconds = 0.0
        self._policies: OrderedDict[int, BlockPolicy] = OrderedDict()

    def __len__(self) -> int:
        return len(self._policies)

    def __contains__(self, filled: object) -> bool:
        return filled in self._policies

    def _put(self, filled: int, policy: BlockPolicy) -> None:
        replaced = self._policies.pop(filled, None)
        if replaced is not None:
            self.nbytes -= replaced.nbytes
        self._policies[filled] = policy
        self.nbytes += policy.nbytes
        while self.max_bytes is not None and self.nbytes > self.max_bytes and self._policies:
            _, evicted = self._policies.popitem(last=False)
            self.nbytes -= evicted.nbytes

    async def policies(
        self,
        engine: Engine | None,
        masks: Iterable[int],
        levels: Sequence[IntArray] | None = None,
    ) -> list[BlockPolicy]:
        """The policies of ``masks``, each with a column for the guideposts ``levels[i]``
        (raveled (upper, bonus) indices; default: every reachable one), building what is
        missing (solving the successors through the engine, off the event loop)."""
        wanted = [int(m) for m in masks]
        found: dict[int, BlockPolicy] = {}
        missing: dict[int, IntArray] = {}
        for i, m in enumerate(wanted):
            need = Guideposts.reachable(self.rules, m).flat if levels is None else levels[i]
            have = self._policies.get(m)
            if have is not None:
                self._policies.move_to_end(m)
                found[m] = have
                need = have.lacking(need)
            if need.size:
                missing[m] = need
        if missing:
            started = time.perf_counter()
            if self.strategy == "greedy":
                built = {m: greedy_policy(self.rules, m) for m in missing}
            else:
                if engine is None:
                    raise ValueError("the optimal strategy needs an engine to solve blocks")
                game = engine.game
                if (
                    not isinstance(game, YahtzeeGame)
                    or game.rules.fingerprint != self.rules.fingerprint
                    or game.theta != self.theta
                ):
                    raise ValueError(f"the engine does not play {self.rules.name}")
                keys = {
                    block_key(m | 1 << box) for m in missing for box in self.rules.open_boxes(m)
                }
                successors = await engine.blocks(sorted(keys))
                built = await anyio.to_thread.run_sync(self._build, missing, successors)
            self.build_seconds += time.perf_counter() - started
            self.built += len(built)
            for m, policy in built.items():
                found[m] = found[m].joined(policy) if m in found else policy
                self._put(m, found[m])
        return [found[m] for m in wanted]

    def _build(
        self, missing: dict[int, IntArray], successors: Mapping[str, Block]
    ) -> dict[int, BlockPolicy]:
        """Runs in a worker thread, so the event loop (and the engine's claim renewals)
        keeps running: the compiled choices release the GIL."""
        rules, levels = self.rules, list(missing.values())
        return optimal_policies(rules, list(missing), successors, levels, self.theta)

    async def fill(self, engine: Engine | None, batch: int = 512) -> None:
        """Build the policy of every block a game can play (all but the full scorecard),
        so that any number of games runs warm; for ``yahtzee`` about 2 CPU s and 415 MiB."""
        rules = self.rules
        masks = [m for m in rules.reachable_masks(0) if m != rules.all_filled]
        for first in range(0, len(masks), batch):
            await self.policies(engine, masks[first : first + batch])


# --- the target policy, turn by turn --------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """Play for the best chance of a final score of at least ``need``: the chance
    objective's blocks come from ``engine`` (a :class:`memo_solver.games.yahtzee.solve.need.
    NeedGame`'s, its cap at least ``need``)."""

    engine: Engine
    need: int


def _chasing(rules: RuleSet, filled: int, left: IntArray) -> npt.NDArray[np.bool_]:
    """The games of a block whose need left is one the target policy plays for: met (0 or
    less) or past what the open boxes can give, every action ties and the mean plays."""
    return (left >= 1) & (left <= reach(rules, filled))


async def _target_turn(
    target: Target,
    mean_engine: Engine,
    rules: RuleSet,
    chasing: Mapping[int, tuple[IntArray, IntArray]],
) -> dict[int, tuple[BlockPolicy, IntArray]]:
    """For each block of ``chasing`` (filled mask: the games' raveled guideposts and needs
    left), the target policy's choices at the (guidepost, need left) lanes of its games,
    packed as a :class:`BlockPolicy` with no guidepost columns, and each game's lane.

    A need left changes with every score, so these serve one turn of one chunk: built for
    the lanes the games stand on, the successors of every block asked for at once, and the
    choices made in one worker thread, then dropped."""
    game = target.engine.game
    assert isinstance(game, NeedGame)
    keys = sorted(
        {block_key(filled | 1 << box) for filled in chasing for box in rules.open_boxes(filled)}
    )
    mean_blocks = await mean_engine.blocks(keys)
    need_blocks = await target.engine.blocks(keys)

    def build() -> dict[int, tuple[BlockPolicy, IntArray]]:
        built = {}
        for filled, (level, left) in chasing.items():
            lanes, of_game = np.unique(np.stack([level, left]), axis=1, return_inverse=True)
            width = need_width(rules, game.cap, filled)
            boxes = rules.open_boxes(filled)
            after = [block_key(filled | 1 << box) for box in boxes]
            mean_of = {box: mean_blocks[key] for box, key in zip(boxes, after, strict=True)}
            chance_of = widened(
                {box: need_blocks[key] for box, key in zip(boxes, after, strict=True)}, width
            )
            policy = _target_choices(
                rules, filled, mean_of, chance_of, lanes[0], lanes[1] - 1, width
            )
            built[filled] = policy, of_game.ravel()
        return built

    return await anyio.to_thread.run_sync(build)


def _target_choices(
    rules: RuleSet,
    filled: int,
    mean_of: Mapping[int, Block],
    chance_of: Mapping[int, Block],
    levels: IntArray,
    steps: IntArray,
    width: int,
) -> BlockPolicy:
    """The target policy's choices at lanes (raveled guidepost ``levels[l]``, need
    ``steps[l] + 1``), packed as a :class:`BlockPolicy` with no guidepost columns of its own:
    :func:`memo_solver.games.yahtzee.analysis.policy.target_policy`, its ties the mean policy's."""
    shown, guide = np.unique(levels, return_inverse=True)
    guideposts = Guideposts(rules, *np.divmod(shown, rules.n_bonus_levels))
    mean = turn_policy(rules, filled, mean_of.__getitem__, guideposts)
    chosen = target_policy(
        rules, filled, mean, guideposts, chance_of.__getitem__, guide.astype(np.int64),
        np.ascontiguousarray(steps, dtype=np.int64), width,
    )  # fmt: skip
    boxes = rules.open_boxes(filled)
    return BlockPolicy(
        boxes=np.array(boxes, dtype=np.int64),
        points=_points16(points(rules, filled, boxes)),
        choices=_packed(rules, chosen),
        column=np.full(rules.block_shape, -1, dtype=np.int16),
    )


# --- the lockstep simulation ----------------------------------------------------------------


@dataclass
class GameRecord:
    """Every decision of the first games of a chunk, for logs and narration: each game's
    rolls and keeps one after another, turn by turn, where each turn starts (:attr:`start`).

    A game holds what a game without saved rolls holds, a turn's own rolls each turn, plus
    its banks: under saved rolls a turn may reroll up to 40 times (``maxi-yatzy-saved``'s
    last), but a roll it makes is one an earlier turn saved, so a whole game never makes
    more rolls than its turns' own. Room per turn for the most rolls a turn can make held
    8 times as much for ``maxi-yatzy-saved`` (451 MB a chunk of logged games)."""

    rolls: npt.NDArray[np.int16]
    """(games, turns * (rerolls + 1)) roll index after each roll, -1 where every die was
    kept (a turn without saved rolls has a slot for each of its rolls, made or not)."""
    keeps: npt.NDArray[np.int16]
    """(games, turns * rerolls) keep index before each reroll, -1 where every die was kept:
    a turn's keeps start at its :attr:`start` less the turns before it (one keep fewer
    than rolls a turn)."""
    start: npt.NDArray[np.int16]
    """(games, turns + 1) the slot of each turn's first roll in :attr:`rolls`, then the
    end of the last turn's."""
    box: npt.NDArray[np.int16]
    points: npt.NDArray[np.int16]
    upper_bonus: npt.NDArray[np.int16]
    extra: npt.NDArray[np.int16]
    saved: npt.NDArray[np.int16]
    """(games, turns) the bank each turn started with (0 without saved rolls)."""

    @classmethod
    def empty(cls, games: int, rules: RuleSet) -> GameRecord:
        """Room for ``games`` whole games of ``rules``."""
        turns, rolls = len(rules.categories), rules.rerolls + 1

        def table(*shape: int) -> npt.NDArray[np.int16]:
            return np.full((games, *shape), -1, dtype=np.int16)

        return cls(
            table(turns * rolls),
            table(turns * (rolls - 1)),
            np.zeros((games, turns + 1), dtype=np.int16),
            table(turns),
            table(turns),
            table(turns),
            table(turns),
            np.zeros((games, turns), dtype=np.int16),
        )

    def roll(self, games: IntArray, turn: int, step: int, roll: IntArray) -> None:
        """The roll ``step`` of ``turn`` (0: the first) of each of ``games``."""
        self.rolls[games, self.start[games, turn] + step] = roll

    def keep(self, games: IntArray, turn: int, step: int, keep: IntArray) -> None:
        """The keep before the roll ``step`` (1 on) of ``turn`` of each of ``games``."""
        self.keeps[games, self.start[games, turn] + step - 1 - turn] = keep

    def end_turn(self, turn: int, rolled: IntArray) -> None:
        """``turn`` of each game made ``rolled`` rolls: the next starts after them."""
        self.start[:, turn + 1] = self.start[:, turn] + rolled

    def turns(self, g: int) -> list[tuple[list[int], list[int]]]:
        """The rolls of each turn of game ``g`` and the keeps between them (the game's rows
        made lists once: a log of a million games reads them all)."""
        rolls, keeps, start = (table[g].tolist() for table in (self.rolls, self.keeps, self.start))
        return [
            (rolls[start[t] : start[t + 1]], keeps[start[t] - t : start[t + 1] - t - 1])
            for t in range(len(start) - 1)
        ]


async def simulate(
    engine: Engine | None,
    cache: PolicyCache,
    games: int,
    seed: int,
    *,
    on_games: Callable[[list[dict[str, object]]], Awaitable[None]] | None = None,
    record: int = 0,
    chunk_games: int = CHUNK_GAMES,
    target: Target | None = None,
) -> Summary:
    """Play ``games`` games of ``cache.rules`` with ``cache.strategy``, seeded.

    ``on_games`` receives the logs (:func:`game_log`) of the first ``record`` games, in
    order, a chunk at a time as soon as the chunk is played (so a log of millions of games
    never sits in memory). With a ``target`` the games play the target policy for its need
    (the optimal strategy's cache playing the turns whose need is met or out of reach), and
    the summary has no exact mean: the target policy's is not the value; nor at a risk
    (``cache.theta``), whose table holds certainty equivalents.
    """
    if target is not None:
        if engine is None or cache.strategy != "optimal":
            raise ValueError("the target policy plays the optimal strategy's engine and cache")
        cap = cast(NeedGame, target.engine.game).cap
        if cap < target.need <= reach(cache.rules, 0):
            raise NeedBeyondCapError(target.need, cap)
    rules = cache.rules
    rng = np.random.Generator(np.random.PCG64(seed))
    n_boxes = len(rules.categories)
    summary = Summary(
        rules, cache.strategy, seed, box_points=np.zeros(n_boxes), box_squares=np.zeros(n_boxes)
    )
    built, building = cache.built, cache.build_seconds
    started = time.perf_counter()
    if engine is not None and cache.strategy == "optimal":
        await _solved(engine)
    first = 0
    while first < games:
        size = min(chunk_games, games - first)
        kept = max(0, min(size, record - first)) if on_games is not None else 0
        chunk_record = GameRecord.empty(kept, rules)
        await _play_chunk(engine, cache, rng, size, summary, chunk_record, target)
        if on_games is not None and kept:
            await on_games([game_log(rules, chunk_record, g, first + g) for g in range(kept)])
        first += size
    summary.seconds = time.perf_counter() - started
    if engine is not None and cache.strategy == "optimal" and target is None and not cache.theta:
        start = await engine.block(block_key(0))  # upper 0, no bonus (and an empty bank) first
        summary.exact_mean = float(np.ravel(start)[0])
    summary.policies_built = cache.built - built
    summary.policy_seconds = cache.build_seconds - building
    summary.policy_bytes = cache.nbytes
    return summary


async def _solved(engine: Engine) -> None:
    """Solve the whole game first if the store lacks it, a layer at a time (the engine's
    whole-solve path): games from the start need nearly every block, and the policies
    asking for their successors one turn at a time would solve them top-down instead."""
    root = engine.game.root()
    if root not in await engine.stored([root]):
        await engine.solve_layers(root)


async def _play_chunk(
    engine: Engine | None,
    cache: PolicyCache,
    rng: np.random.Generator,
    games: int,
    summary: Summary,
    record: GameRecord,
    target: Target | None = None,
) -> None:
    """Play ``games`` games from the empty scorecard, all in lockstep, into ``summary``."""
    rules = cache.rules
    dice = rules.universe
    tables = dice_tables(dice)
    n_boxes = len(rules.categories)
    kept = record.box.shape[0]
    filled = np.zeros(games, dtype=np.int64)
    upper = np.zeros(games, dtype=np.int64)  # the guidepost: capped, 0 without an upper bonus
    flag = np.zeros(games, dtype=np.int64)  # the Yahtzee-bonus flag: 50 scored in its box
    score = np.zeros(games, dtype=np.int64)
    extra_total = np.zeros(games, dtype=np.int64)
    rolled_alike = np.zeros(games, dtype=bool)
    nothing = np.zeros(games, dtype=np.int64)
    bank = np.zeros(games, dtype=np.int64)  # saved rolls: the rolls each game's turn starts with
    carry = np.array([rules.carried(left) for left in range(most_rolls_left(rules, n_boxes) + 1)])
    for turn in range(n_boxes):
        masks, inverse = np.unique(filled, return_inverse=True)
        groups = _split(inverse.ravel(), masks.size)
        level = upper * rules.n_bonus_levels + flag  # the guidepost, raveled
        needed = [np.unique(level[idx]) for idx in groups]
        policies = await cache.policies(engine, masks.tolist(), needed)
        column = np.empty(games, dtype=np.int64)
        for policy, idx in zip(policies, groups, strict=True):
            column[idx] = policy.column[upper[idx], flag[idx]]
        if target is not None and engine is not None:
            chasing = {}
            for g, idx in enumerate(groups):
                games_here = idx[_chasing(rules, int(masks[g]), target.need - score[idx])]
                if games_here.size:
                    chasing[g] = games_here
            by_mask = {
                int(masks[g]): (level[idx], target.need - score[idx]) for g, idx in chasing.items()
            }
            built = await _target_turn(target, engine, rules, by_mask)
            for g, idx in chasing.items():
                lanes, of_game = built[int(masks[g])]
                column[idx] = policies[g].box.shape[1] + of_game
                policies[g] = policies[g].joined(lanes)
        if (column < 0).any():
            raise AssertionError("a game reached a guidepost its block does not list")
        roll = throw(rng, dice, nothing)
        logged = np.arange(kept)
        record.roll(logged, turn, 0, roll[:kept])
        if rules.saved_rolls:
            record.saved[:, turn] = bank[:kept]
            left = bank + rules.rerolls
            position = _saved_turn(rng, dice, policies, groups, column, roll, left, record, turn)
            record.end_turn(turn, 1 + bank[:kept] + rules.rerolls - left[:kept])
            bank = carry[left]
        else:
            for step, n in enumerate(range(rules.rerolls, 0, -1), start=1):
                mask = np.empty(games, dtype=np.uint8)
                for policy, idx in zip(policies, groups, strict=True):
                    mask[idx] = policy.rows[n][roll[idx], column[idx]]
                keep = tables.keep_of_mask[roll, mask].astype(np.int64)
                roll = throw(rng, dice, keep)  # keeping every die throws nothing: the same roll
                rerolled = mask[:kept] != tables.all_kept
                record.keep(logged, turn, step, np.where(rerolled, keep[:kept], -1))
                record.roll(logged, turn, step, np.where(rerolled, roll[:kept], -1))
            record.end_turn(turn, np.full(kept, rules.rerolls + 1))
            position = None
        box = np.empty(games, dtype=np.int64)
        gained = np.empty(games, dtype=np.int64)
        for policy, idx in zip(policies, groups, strict=True):
            at = policy.box[roll[idx], column[idx]] if position is None else position[idx]
            box[idx] = policy.boxes[at]
            gained[idx] = policy.points[at, roll[idx]]
        if (gained < 0).any():
            raise AssertionError("the strategy scored a box the Joker rule forbids")
        alike = dice.all_alike[roll]
        rolled_alike |= alike
        landing = land(rules, box, gained, alike, upper, flag)
        upper, flag = landing.upper, landing.flag
        bonus, extra = landing.upper_bonus, landing.extra
        summary.yahtzee_games += int(landing.fifty.sum())
        score += gained + bonus + extra
        extra_total += extra
        filled |= np.left_shift(1, box)
        summary.box_points += np.bincount(box, weights=gained, minlength=n_boxes)
        summary.box_squares += np.bincount(box, weights=gained**2, minlength=n_boxes)
        summary.upper_bonus_games += int((bonus > 0).sum())
        summary.upper_bonus_points += int(bonus.sum())
        summary.extra_points += int(extra.sum())
        record.box[:, turn] = box[:kept]
        record.points[:, turn] = gained[:kept]
        record.upper_bonus[:, turn] = bonus[:kept]
        record.extra[:, turn] = extra[:kept]
    if (filled != rules.all_filled).any():
        raise AssertionError("a game ended with an open box")
    summary.extra_games += int((extra_total > 0).sum())
    summary.any_yahtzee_games += int(rolled_alike.sum())
    counts = np.bincount(score)
    if counts.size > summary.histogram.size:
        counts[: summary.histogram.size] += summary.histogram
        summary.histogram = counts
    else:
        summary.histogram[: counts.size] += counts


def _saved_turn(
    rng: np.random.Generator,
    dice: Dice,
    policies: Sequence[BlockPolicy],
    groups: Sequence[IntArray],
    column: IntArray,
    roll: IntArray,
    left: IntArray,
    record: GameRecord,
    turn: int,
) -> IntArray:
    """One turn of saved rolls after its first roll: each game rerolls while its policy
    keeps dice at its rolls left (``left``, counted down in place; ``roll`` moves in place)
    and stops to score; returns the position of each game's box among its block's open
    ones. A step throws the dice of the games still rolling only, in game order: games stop
    after different counts of rolls (up to 40 in a turn of ``maxi-yatzy-saved``), and the
    dice of the stopped ones would be thrown away."""
    tables = dice_tables(dice)
    kept = record.box.shape[0]
    position = np.empty(roll.size, dtype=np.int64)
    mask = np.empty(roll.size, dtype=np.uint8)
    rolling = list(groups)  # per block, its games still rolling
    step = 0
    while True:
        step += 1
        for g, (policy, idx) in enumerate(zip(policies, rolling, strict=True)):
            if not idx.size:
                continue
            here = left[idx]
            code = policy.choices[here, roll[idx], column[idx]]
            stop = (here == 0) | (code >= SCORE_NOW)
            position[idx[stop]] = np.where(here[stop] == 0, code[stop], code[stop] - SCORE_NOW)
            mask[idx[~stop]] = code[~stop]
            rolling[g] = idx[~stop]
        moving = np.sort(np.concatenate(rolling))
        if not moving.size:
            return position
        keep = tables.keep_of_mask[roll[moving], mask[moving]].astype(np.int64)
        roll[moving] = throw(rng, dice, keep)
        left[moving] -= 1
        shown = moving[moving < kept]
        record.keep(shown, turn, step, keep[: shown.size])
        record.roll(shown, turn, step, roll[shown])


def _split(inverse: IntArray, groups: int) -> list[IntArray]:
    """The games of each group (the indices where ``inverse`` equals it), in game order."""
    order = np.argsort(inverse, kind="stable")
    bounds = np.cumsum(np.bincount(inverse, minlength=groups))[:-1]
    return cast(list[IntArray], np.split(order, bounds))


# --- logs and narration ---------------------------------------------------------------------


def game_log(rules: RuleSet, record: GameRecord, g: int, number: int) -> dict[str, object]:
    """One game as JSON: per turn the dice after each roll (and the rerolls then left),
    the dice kept before each reroll, the box, its points and the bonuses banked. With saved
    rolls a turn says the bank it started with (``saved``), the rolls left after each roll
    (``rolls_left``) and the bank its score carries (``carried``)."""
    dice = rules.universe
    turns = []
    for t, (rolls, keeps) in enumerate(record.turns(g)):
        shown = [0] + [step for step in range(1, len(rolls)) if rolls[step] >= 0]
        saved = int(record.saved[g, t])
        left = [saved + rules.rerolls - s for s in shown]
        bank: dict[str, object] = (
            {"saved": saved, "rolls_left": left, "carried": rules.carried(left[-1])}
            if rules.saved_rolls
            else {"rerolls_left": left}
        )
        turns.append(
            {
                "turn": t + 1,
                "rolls": [list(dice.rolls[rolls[s]]) for s in shown],
                **bank,
                "keeps": [list(dice.keeps[keeps[s - 1]]) for s in shown[1:]],
                "box": rules.categories[int(record.box[g, t])].name,
                "points": int(record.points[g, t]),
                "upper_bonus": int(record.upper_bonus[g, t]),
                "yahtzee_bonus": int(record.extra[g, t]),
            }
        )
    upper_bonus = int(record.upper_bonus[g].sum())
    extra = int(record.extra[g].sum())
    return {
        "game": number,
        "score": int(record.points[g].sum()) + upper_bonus + extra,
        "upper_bonus": upper_bonus,
        "yahtzee_bonus": extra,
        "turns": turns,
    }


__all__ = [
    "BlockPolicy",
    "DiceTables",
    "GameRecord",
    "PolicyCache",
    "Target",
    "dice_tables",
    "game_log",
    "greedy_policy",
    "optimal_policies",
    "simulate",
    "throw",
]
