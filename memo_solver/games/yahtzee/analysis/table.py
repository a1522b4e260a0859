"""The optimal strategy as a plain table, for other programs (``memo-solver export-table``).

The solver answers one state at a time; someone training a model, writing a bot in another
language, or checking our numbers wants the whole table in a file they can load without
this package: the turn-start value of every reachable guidepost for every rule set, and,
for rule sets small enough (:data:`MAX_DECISION_BLOCKS`), the choice at every turn start,
rerolls left and roll. The layout of each format (array and column names, dtypes, shapes,
how keeps and boxes are encoded) is documented once, in the README ("The strategy table"),
so that the two cannot drift; the tests check the README's npz table against the file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from memo_solver.core.engine import Engine
from memo_solver.core.game import Block
from memo_solver.games.yahtzee.analysis.policy import turn_policy
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.solve.game import block_key
from memo_solver.games.yahtzee.solve.turn import Guideposts

IntArray = npt.NDArray[np.int64]
MAX_DECISION_BLOCKS: Final = 2048
"""The largest rule set (in reachable blocks) whose decision table is written: ``yazy``'s
2,048 blocks give 1.5 million decisions; ``yahtzee``'s 8,192 would give tens of millions."""
COLUMN_BYTES: Final = 5 * 8 * 2
"""Memory a value row takes while :func:`build_table` lays the table out: its five columns
(filled, upper, bonus, bank, value; 8 bytes each), once in a piece per block, once joined."""
PARQUET_EXTRA = "pip install 'memo-solver[parquet]'"
FORMATS = ("npz", "jsonl", "parquet")


def output_format(out: Path, given: str | None) -> str:
    """The format to write: ``--format`` where given, else the one the file's extension
    names (npz for a name with no extension), so that a ``.jsonl`` name never holds an npz
    archive. Raises ValueError for a mismatch, or an extension that names no format."""
    named = out.suffix.lower().removeprefix(".")
    if named in FORMATS:
        if given not in (None, named):
            raise ValueError(
                f"--format {given} does not match --out {out.name}; "
                f"name the file .{given}, or leave --format out"
            )
        return named
    if given is not None:
        return given
    if out.suffix:
        raise ValueError(
            f"--out {out.name}: {out.suffix} names no format; give --format "
            f"({', '.join(FORMATS)}) or end the name in .npz, .jsonl or .parquet"
        )
    return "npz"


@dataclass(frozen=True)
class Decisions:
    """The strategy's choice at every turn start, rerolls left and roll; rows as the values.

    With saved rolls a row is a guidepost (``guideposts``), not a turn start: the choices
    depend on the rolls left, not on the bank the turn started with, so one row serves every
    bank, and the rerolls-left axis is the rolls-left axis, up to the most a turn of the
    game can have (:func:`most_rolls_left`)."""

    keep: npt.NDArray[np.int16]
    """(N, rerolls, n_rolls): keep index chosen with n = 1..rerolls rerolls left; -1 at game
    end. With saved rolls (G, most rolls left, n_rolls), n rolls left, and -1 too where the
    strategy scores at once (:attr:`stop`) or the block's turns never have n left."""
    box: npt.NDArray[np.int16]
    """(N, n_rolls): box index scored with no rerolls left; -1 at game end."""
    stop: npt.NDArray[np.int16] | None = None
    """With saved rolls, (G, most rolls left, n_rolls): the box index scored at once with
    n rolls left, -1 where the strategy rerolls (:attr:`keep`) or has no such turn."""
    guideposts: tuple[IntArray, IntArray, IntArray] | None = None
    """With saved rolls, each row's filled mask, upper level and bonus flag."""

    @property
    def count(self) -> int:
        """How many decisions the table holds (rows with every box filled have none)."""
        if self.stop is not None:
            chosen = (self.keep >= 0, self.stop >= 0, self.box >= 0)
            return sum(int(np.count_nonzero(made)) for made in chosen)
        live = int(np.count_nonzero(self.box[:, 0] >= 0))
        return live * (int(self.keep.shape[1]) + 1) * int(self.box.shape[1])


@dataclass(frozen=True)
class Table:
    rules: RuleSet
    filled: IntArray
    upper: IntArray
    bonus: IntArray
    value: npt.NDArray[np.float64]
    decisions: Decisions | None
    note: str
    """Why the decision table is left out, or empty."""
    saved: IntArray | None = None
    """With saved rolls, each row's bank (the rolls saved at the turn start); None without."""

    def header(self) -> dict[str, Any]:
        saved: dict[str, Any] = {}
        if self.rules.saved_rolls:
            saved = {"saved_rolls": True, "max_saved": self.rules.max_saved}
        return {
            "kind": "header",
            "rules": self.rules.name,
            "fingerprint": self.rules.fingerprint,
            "boxes": [c.name for c in self.rules.categories],
            "rerolls": self.rules.rerolls,
            **saved,
            "values": int(self.value.size),
            "decisions": None if self.decisions is None else self.decisions.count,
            "note": self.note or None,
        }


Progress = Callable[[int], None]


def has_decision_table(rules: RuleSet) -> bool:
    return rules.block_count <= MAX_DECISION_BLOCKS


def value_rows(rules: RuleSet) -> int:
    """Rows of the values table: every reachable turn start, each bank of it with saved
    rolls (1.27 billion for ``maxi-yatzy-saved``)."""
    masks = np.asarray(rules.reachable_masks(0), dtype=np.int64)
    banks = np.array([rules.saved_levels(n) for n in range(len(rules.categories) + 1)])
    return int((Guideposts.counts(rules, masks) * banks[rules.filled_counts(masks)]).sum())


def export_bytes(rules: RuleSet) -> int:
    """Memory :func:`build_table` takes, at most, before anything is solved: every block
    read whole (each turn start its shape holds, 8 bytes) and every value row's columns
    (:data:`COLUMN_BYTES`). Yatzy with saved rolls: 2.2 GB (2.5 measured as the whole
    process); ``maxi-yatzy-saved``, 111,148 MiB, is refused at the command line's limit."""
    return value_rows(rules) * COLUMN_BYTES + rules.cone_turn_starts(0) * 8


def most_rolls_left(rules: RuleSet) -> int:
    """The most rolls left after a first roll in any turn of the game: the rerolls, and with
    saved rolls the largest bank too, which the last turn may hold."""
    return rules.saved_levels(len(rules.categories) - 1) - 1 + rules.rerolls


async def build_table(engine: Engine, rules: RuleSet, progress: Progress | None = None) -> Table:
    """Solve the whole rule set on ``engine`` and lay out its values (and decisions).

    ``progress(n)`` is told after each block: the total is ``rules.block_count``.
    """
    await engine.block(block_key(0))  # solves every block below the start: all of them
    masks = sorted(rules.reachable_masks(0))
    n_blocks = len(masks)
    blocks = await engine.blocks([block_key(filled) for filled in masks])
    decide = has_decision_table(rules)
    note = (
        ""
        if decide
        else f"no decision table: {rules.name} has {n_blocks} blocks, more than the "
        f"{MAX_DECISION_BLOCKS} a decision table is written for; the values are complete"
    )
    columns: dict[str, list[Any]] = {"filled": [], "upper": [], "bonus": [], "value": []}
    banks: list[IntArray] = []
    keeps: list[npt.NDArray[np.int16]] = []
    boxes: list[npt.NDArray[np.int16]] = []
    stops: list[npt.NDArray[np.int16]] = []
    for done, filled in enumerate(masks, start=1):
        guideposts = Guideposts.reachable(rules, filled)
        block = blocks[block_key(filled)]
        saved = rules.saved_levels(filled.bit_count()) if rules.saved_rolls else 1
        columns["filled"].append(np.full(guideposts.upper.size * saved, filled, dtype=np.int64))
        columns["upper"].append(np.repeat(guideposts.upper, saved))
        columns["bonus"].append(np.repeat(guideposts.bonus, saved))
        columns["value"].append(block[guideposts.upper, guideposts.bonus].ravel())
        banks.append(np.tile(np.arange(saved), guideposts.upper.size))
        if decide:
            keep, box, stop = _block_decisions(rules, filled, blocks, guideposts)
            keeps.append(keep)
            boxes.append(box)
            stops.append(stop)
        if progress is not None:
            progress(done)
    decisions = None
    if decide:
        decisions = Decisions(keep=np.concatenate(keeps), box=np.concatenate(boxes))
        if rules.saved_rolls:
            rows = _guidepost_columns(rules, masks)
            decisions = replace(decisions, stop=np.concatenate(stops), guideposts=rows)
    return Table(
        rules,
        filled=np.concatenate(columns["filled"]),
        upper=np.concatenate(columns["upper"]).astype(np.int64),
        bonus=np.concatenate(columns["bonus"]).astype(np.int64),
        value=np.concatenate(columns["value"]).astype(np.float64),
        decisions=decisions,
        note=note,
        saved=np.concatenate(banks) if rules.saved_rolls else None,
    )


def _guidepost_columns(rules: RuleSet, masks: list[int]) -> tuple[IntArray, IntArray, IntArray]:
    """The filled mask, upper level and bonus flag of every block's guideposts, the blocks
    in order: the rows of a saved-rolls decision table."""
    guideposts = [Guideposts.reachable(rules, filled) for filled in masks]
    return (
        np.repeat(np.asarray(masks, dtype=np.int64), [g.upper.size for g in guideposts]),
        np.concatenate([g.upper for g in guideposts]).astype(np.int64),
        np.concatenate([g.bonus for g in guideposts]).astype(np.int64),
    )


def _block_decisions(
    rules: RuleSet, filled: int, blocks: dict[str, Block], guideposts: Guideposts
) -> tuple[npt.NDArray[np.int16], npt.NDArray[np.int16], npt.NDArray[np.int16]]:
    """(B, rerolls, n_rolls) keeps and (B, n_rolls) boxes chosen at the block's guideposts;
    with saved rolls the keeps are (B, most rolls left, n_rolls), beside the boxes scored at
    once (the same shape: :attr:`Decisions.stop`; empty without saved rolls)."""
    width = guideposts.upper.size
    n_rolls = rules.universe.n_rolls
    most = most_rolls_left(rules)
    stop = np.full((width, most if rules.saved_rolls else 0, n_rolls), -1, dtype=np.int16)
    if filled == rules.all_filled:
        return (
            np.full((width, most, n_rolls), -1, dtype=np.int16),
            np.full((width, n_rolls), -1, dtype=np.int16),
            stop,
        )
    policy = turn_policy(
        rules, filled, lambda box: blocks[block_key(filled | 1 << box)], guideposts
    )
    names = np.asarray(policy.tables.boxes, dtype=np.int64)
    box = names[policy.box].T.astype(np.int16)
    if not rules.saved_rolls:
        chosen = np.stack([policy.keep[n].T for n in range(1, rules.rerolls + 1)], axis=1)
        return chosen.astype(np.int16), box, stop
    keep = np.full((width, most, n_rolls), -1, dtype=np.int16)
    for left in range(1, len(policy.keep)):
        scored = policy.stop[left].T
        keep[:, left - 1] = np.where(scored < 0, policy.keep[left].T, -1)
        stop[:, left - 1] = np.where(scored < 0, -1, names[scored])
    return keep, box, stop


# --- the formats -----------------------------------------------------------------------------


def write_npz(table: Table, out: Path) -> list[Path]:
    """Compressed, and written to ``out`` exactly (``numpy.savez`` would add ``.npz``)."""
    arrays: dict[str, npt.NDArray[Any]] = {
        "filled": table.filled,
        "upper": table.upper,
        "bonus": table.bonus,
        "value": table.value,
        "boxes": np.array([c.name for c in table.rules.categories]),
        "rules": np.array(table.rules.name),
        "fingerprint": np.array(table.rules.fingerprint),
        "rerolls": np.array(table.rules.rerolls),
        "note": np.array(table.note),
    }
    if table.saved is not None:
        arrays["saved"] = table.saved
    decisions = table.decisions
    if decisions is not None:
        dice = table.rules.universe
        keeps = np.zeros((dice.n_keeps, dice.count), dtype=np.int8)
        for k, faces in enumerate(dice.keeps):
            keeps[k, : len(faces)] = faces
        arrays |= {
            "decision_keep": decisions.keep,
            "decision_box": decisions.box,
            "rolls": np.array(dice.rolls, dtype=np.int8),
            "keeps": keeps,
            "keep_size": dice.keep_sizes.astype(np.int64),
        }
        if decisions.stop is not None and decisions.guideposts is not None:
            filled, upper, bonus = decisions.guideposts
            arrays |= {
                "decision_stop": decisions.stop,
                "decision_filled": filled,
                "decision_upper": upper,
                "decision_bonus": bonus,
            }
    save: Callable[..., None] = np.savez_compressed  # its stubs type **arrays as options
    with out.open("wb") as file:
        save(file, **arrays)
    return [out]


def write_jsonl(table: Table, out: Path) -> list[Path]:
    with out.open("w", encoding="utf-8") as file:
        file.write(json.dumps(table.header()) + "\n")
        file.writelines(_jsonl_lines(table))
    return [out]


def _jsonl_lines(table: Table) -> Iterator[str]:
    """The lines after the header, built from pieces serialized once: a game's decision
    table has over a million lines, and a json.dumps per line would triple the time."""
    rules = table.rules
    names = [c.name for c in rules.categories]
    filled_json: dict[int, str] = {}

    def where(rows: tuple[IntArray, IntArray, IntArray], i: int) -> str:
        filled = int(rows[0][i])
        shown = filled_json.get(filled)
        if shown is None:
            shown = filled_json[filled] = json.dumps(
                [n for b, n in enumerate(names) if filled >> b & 1]
            )
        flag = "true" if rows[2][i] else "false"
        return f'"filled": {shown}, "upper": {int(rows[1][i])}, "yahtzee_bonus": {flag}'

    values = (table.filled, table.upper, table.bonus)
    for i in range(table.value.size):
        bank = "" if table.saved is None else f', "saved": {int(table.saved[i])}'
        yield f'{{"kind": "value", {where(values, i)}{bank}, "value": {float(table.value[i])!r}}}\n'
    decisions = table.decisions
    if decisions is None:
        return
    dice = rules.universe
    rolls = [json.dumps(list(r)) for r in dice.rolls]
    keeps = [json.dumps(list(k)) for k in dice.keeps]
    boxes = [json.dumps(n) for n in names]
    keep, box, stop = decisions.keep, decisions.box, decisions.stop
    rows = values if decisions.guideposts is None else decisions.guideposts
    left = "rerolls_left" if stop is None else "rolls_left"
    for i in range(box.shape[0]):
        if box[i, 0] < 0:
            continue
        head = f'{{"kind": "decision", {where(rows, i)}, "{left}": '
        for n in range(keep.shape[1], 0, -1):
            chosen = keep[i, n - 1]
            for r in range(dice.n_rolls):
                if chosen[r] >= 0:
                    yield f'{head}{n}, "dice": {rolls[r]}, "keep": {keeps[chosen[r]]}}}\n'
                elif stop is not None and stop[i, n - 1, r] >= 0:
                    yield f'{head}{n}, "dice": {rolls[r]}, "box": {boxes[stop[i, n - 1, r]]}}}\n'
        for r in range(dice.n_rolls):
            yield f'{head}0, "dice": {rolls[r]}, "box": {boxes[box[i, r]]}}}\n'


def decisions_path(out: Path) -> Path:
    """``yazy.parquet`` -> ``yazy.decisions.parquet``; another name gets the suffix added."""
    stem = out.name.removesuffix(".parquet")
    return out.with_name(f"{stem}.decisions.parquet")


def write_parquet(table: Table, out: Path) -> list[Path]:
    pa, pq = _pyarrow()
    metadata = {b"memo_solver": json.dumps(table.header()).encode()}
    bank = {} if table.saved is None else {"saved": table.saved}
    values = pa.table(
        {
            "filled": table.filled,
            "upper": table.upper,
            "bonus": table.bonus,
            **bank,
            "value": table.value,
        }
    ).replace_schema_metadata(metadata)
    pq.write_table(values, out)
    chosen = table.decisions
    if chosen is None:
        return [out]
    rules = table.rules
    dice = rules.universe
    live = np.flatnonzero(chosen.box[:, 0] >= 0)
    most = chosen.keep.shape[1]
    steps = most + 1
    # Rows: for each live turn start, rerolls left from the most to none, each of the rolls.
    row = np.repeat(live, steps * dice.n_rolls)
    rerolls = np.tile(np.repeat(np.arange(most, -1, -1), dice.n_rolls), live.size)
    roll = np.tile(np.arange(dice.n_rolls), live.size * steps)
    keep_index = np.full(row.size, -1, dtype=np.int64)
    with_keep = rerolls > 0
    keep_index[with_keep] = chosen.keep[row[with_keep], rerolls[with_keep] - 1, roll[with_keep]]
    box_index = np.where(with_keep, -1, chosen.box[row, roll])
    filled, upper, bonus = table.filled, table.upper, table.bonus
    left = "rerolls_left"
    if chosen.stop is not None and chosen.guideposts is not None:
        # With saved rolls a row per guidepost, and with rolls left a box where it stops;
        # rolls left past what the block's turns can have are no decisions.
        box_index[with_keep] = chosen.stop[row[with_keep], rerolls[with_keep] - 1, roll[with_keep]]
        made = (keep_index >= 0) | (box_index >= 0)
        row, rerolls, roll = row[made], rerolls[made], roll[made]
        keep_index, box_index = keep_index[made], box_index[made]
        filled, upper, bonus = chosen.guideposts
        left = "rolls_left"
    keep_lists = [list(k) for k in dice.keeps]
    names = [c.name for c in rules.categories]
    decisions = pa.table(
        {
            "filled": filled[row],
            "upper": upper[row],
            "bonus": bonus[row],
            left: rerolls.astype(np.int8),
            "dice": pa.array([list(dice.rolls[r]) for r in roll], type=pa.list_(pa.int8())),
            "keep": pa.array(
                [keep_lists[k] if k >= 0 else None for k in keep_index.tolist()],
                type=pa.list_(pa.int8()),
            ),
            "box": pa.array(
                [names[b] if b >= 0 else None for b in box_index.tolist()], type=pa.string()
            ),
        }
    ).replace_schema_metadata(metadata)
    second = decisions_path(out)
    pq.write_table(decisions, second)
    return [out, second]


def _pyarrow() -> tuple[Any, Any]:
    """pyarrow, imported only when asked for: it is an optional extra of 100 MB (the
    command line checks it is there before the work, naming :data:`PARQUET_EXTRA`)."""
    import pyarrow
    import pyarrow.parquet

    return pyarrow, pyarrow.parquet


WRITERS: Final[dict[str, Callable[[Table, Path], list[Path]]]] = {
    "npz": write_npz,
    "jsonl": write_jsonl,
    "parquet": write_parquet,
}
