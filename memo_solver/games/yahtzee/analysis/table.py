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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from memo_solver.core.engine import Engine
from memo_solver.core.game import Block
from memo_solver.games.yahtzee.analysis.policy import turn_policy
from memo_solver.games.yahtzee.rules.rule_set import RuleSet, refuse_saved_rolls
from memo_solver.games.yahtzee.solve.game import block_key
from memo_solver.games.yahtzee.solve.turn import Guideposts

IntArray = npt.NDArray[np.int64]
MAX_DECISION_BLOCKS: Final = 2048
"""The largest rule set (in reachable blocks) whose decision table is written: ``yazy``'s
2,048 blocks give 1.5 million decisions; ``yahtzee``'s 8,192 would give tens of millions."""
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
    """The strategy's choice at every turn start, rerolls left and roll; rows as the values."""

    keep: npt.NDArray[np.int16]
    """(N, rerolls, n_rolls): keep index chosen with n = 1..rerolls rerolls left; -1 at game
    end."""
    box: npt.NDArray[np.int16]
    """(N, n_rolls): box index scored with no rerolls left; -1 at game end."""

    @property
    def count(self) -> int:
        """How many decisions the table holds (rows with every box filled have none)."""
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

    def header(self) -> dict[str, Any]:
        return {
            "kind": "header",
            "rules": self.rules.name,
            "fingerprint": self.rules.fingerprint,
            "boxes": [c.name for c in self.rules.categories],
            "rerolls": self.rules.rerolls,
            "values": int(self.value.size),
            "decisions": None if self.decisions is None else self.decisions.count,
            "note": self.note or None,
        }


Progress = Callable[[int], None]


def has_decision_table(rules: RuleSet) -> bool:
    return rules.block_count <= MAX_DECISION_BLOCKS


async def build_table(engine: Engine, rules: RuleSet, progress: Progress | None = None) -> Table:
    """Solve the whole rule set on ``engine`` and lay out its values (and decisions).

    ``progress(n)`` is told after each block: the total is ``rules.block_count``.
    """
    refuse_saved_rolls(rules, "the strategy table (export-table)")
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
    keeps: list[npt.NDArray[np.int16]] = []
    boxes: list[npt.NDArray[np.int16]] = []
    for done, filled in enumerate(masks, start=1):
        guideposts = Guideposts.reachable(rules, filled)
        block = blocks[block_key(filled)]
        columns["filled"].append(np.full(guideposts.upper.size, filled, dtype=np.int64))
        columns["upper"].append(guideposts.upper)
        columns["bonus"].append(guideposts.bonus)
        columns["value"].append(block[guideposts.upper, guideposts.bonus])
        if decide:
            keep, box = _block_decisions(rules, filled, blocks, guideposts)
            keeps.append(keep)
            boxes.append(box)
        if progress is not None:
            progress(done)
    decisions = Decisions(keep=np.concatenate(keeps), box=np.concatenate(boxes)) if decide else None
    return Table(
        rules,
        filled=np.concatenate(columns["filled"]),
        upper=np.concatenate(columns["upper"]).astype(np.int64),
        bonus=np.concatenate(columns["bonus"]).astype(np.int64),
        value=np.concatenate(columns["value"]).astype(np.float64),
        decisions=decisions,
        note=note,
    )


def _block_decisions(
    rules: RuleSet, filled: int, blocks: dict[str, Block], guideposts: Guideposts
) -> tuple[npt.NDArray[np.int16], npt.NDArray[np.int16]]:
    """(B, rerolls, n_rolls) keeps and (B, n_rolls) boxes chosen at the block's guideposts."""
    width = guideposts.upper.size
    n_rolls = rules.universe.n_rolls
    if filled == rules.all_filled:
        return (
            np.full((width, rules.rerolls, n_rolls), -1, dtype=np.int16),
            np.full((width, n_rolls), -1, dtype=np.int16),
        )
    policy = turn_policy(
        rules, filled, lambda box: blocks[block_key(filled | 1 << box)], guideposts
    )
    keep = np.stack([policy.keep[n].T for n in range(1, rules.rerolls + 1)], axis=1)
    box = np.asarray(policy.tables.boxes, dtype=np.int64)[policy.box].T
    return keep.astype(np.int16), box.astype(np.int16)


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
    if table.decisions is not None:
        dice = table.rules.universe
        keeps = np.zeros((dice.n_keeps, dice.count), dtype=np.int8)
        for k, faces in enumerate(dice.keeps):
            keeps[k, : len(faces)] = faces
        arrays |= {
            "decision_keep": table.decisions.keep,
            "decision_box": table.decisions.box,
            "rolls": np.array(dice.rolls, dtype=np.int8),
            "keeps": keeps,
            "keep_size": dice.keep_sizes.astype(np.int64),
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

    def where(i: int) -> str:
        filled = int(table.filled[i])
        shown = filled_json.get(filled)
        if shown is None:
            shown = filled_json[filled] = json.dumps(
                [n for b, n in enumerate(names) if filled >> b & 1]
            )
        flag = "true" if table.bonus[i] else "false"
        return f'"filled": {shown}, "upper": {int(table.upper[i])}, "yahtzee_bonus": {flag}'

    for i in range(table.value.size):
        yield f'{{"kind": "value", {where(i)}, "value": {float(table.value[i])!r}}}\n'
    if table.decisions is None:
        return
    dice = rules.universe
    rolls = [json.dumps(list(r)) for r in dice.rolls]
    keeps = [json.dumps(list(k)) for k in dice.keeps]
    boxes = [json.dumps(n) for n in names]
    keep, box = table.decisions.keep, table.decisions.box
    for i in range(table.value.size):
        if box[i, 0] < 0:
            continue
        head = f'{{"kind": "decision", {where(i)}, "rerolls_left": '
        for n in range(rules.rerolls, 0, -1):
            chosen = keep[i, n - 1]
            for r in range(dice.n_rolls):
                yield f'{head}{n}, "dice": {rolls[r]}, "keep": {keeps[chosen[r]]}}}\n'
        for r in range(dice.n_rolls):
            yield f'{head}0, "dice": {rolls[r]}, "box": {boxes[box[i, r]]}}}\n'


def decisions_path(out: Path) -> Path:
    """``yazy.parquet`` -> ``yazy.decisions.parquet``; another name gets the suffix added."""
    stem = out.name.removesuffix(".parquet")
    return out.with_name(f"{stem}.decisions.parquet")


def write_parquet(table: Table, out: Path) -> list[Path]:
    pa, pq = _pyarrow()
    metadata = {b"memo_solver": json.dumps(table.header()).encode()}
    values = pa.table(
        {
            "filled": table.filled,
            "upper": table.upper,
            "bonus": table.bonus,
            "value": table.value,
        }
    ).replace_schema_metadata(metadata)
    pq.write_table(values, out)
    if table.decisions is None:
        return [out]
    rules = table.rules
    dice = rules.universe
    live = np.flatnonzero(table.decisions.box[:, 0] >= 0)
    steps = rules.rerolls + 1
    # Rows: for each live turn start, rerolls left from the most to none, each of the rolls.
    row = np.repeat(live, steps * dice.n_rolls)
    rerolls = np.tile(np.repeat(np.arange(rules.rerolls, -1, -1), dice.n_rolls), live.size)
    roll = np.tile(np.arange(dice.n_rolls), live.size * steps)
    keep_index = np.full(row.size, -1, dtype=np.int64)
    with_keep = rerolls > 0
    keep_index[with_keep] = table.decisions.keep[
        row[with_keep], rerolls[with_keep] - 1, roll[with_keep]
    ]
    box_index = np.where(with_keep, -1, table.decisions.box[row, roll])
    keep_lists = [list(k) for k in dice.keeps]
    names = [c.name for c in rules.categories]
    decisions = pa.table(
        {
            "filled": table.filled[row],
            "upper": table.upper[row],
            "bonus": table.bonus[row],
            "rerolls_left": rerolls.astype(np.int8),
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
