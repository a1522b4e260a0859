"""The exported strategy table read back as another program would: numpy, json, pyarrow.

``yahtzee-lower`` (128 blocks) is small enough for the decision table, and its decisions
with only Chance or only Yahtzee open can be worked out by hand.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from anyio.from_thread import start_blocking_portal
from support.cli_support import one_error_line
from support.dice_variants import FORCED, SIX_DICE

from memo_solver.cli import analysis
from memo_solver.cli.common import DEFAULT_EXPORT_TABLE_MB
from memo_solver.core.engine import open_engine
from memo_solver.games.yahtzee.advice.mean_advice import advise
from memo_solver.games.yahtzee.analysis import table as table_module
from memo_solver.games.yahtzee.analysis.table import (
    Table,
    build_table,
    decisions_path,
    export_bytes,
    has_decision_table,
    output_format,
    value_rows,
)
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.rules.dice import dice_universe
from memo_solver.games.yahtzee.rules.rule_file import parse_rule_set
from memo_solver.games.yahtzee.rules.rule_set import RuleSet
from memo_solver.games.yahtzee.rules.state import State
from memo_solver.games.yahtzee.solve.game import YahtzeeGame, block_key
from memo_solver.games.yahtzee.solve.turn import Guideposts
from memo_solver.stores.memory import MemoryStore

LOWER = RULE_SETS["yahtzee-lower"]
FIVE = dice_universe(5)
CLI = Path(sys.executable).with_name("memo-solver")
ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("MEMO_SOLVER_")},
    "OPENBLAS_NUM_THREADS": "1",
}
TOL = 1e-9


def only(rules: RuleSet, *names: str) -> int:
    """The filled mask with every box but ``names`` filled."""
    return rules.all_filled & ~sum(1 << rules.category_index(n) for n in names)


@pytest.fixture(scope="module")
def lower() -> Iterator[tuple[Table, dict[str, Any]]]:
    """The yahtzee-lower table, and its blocks as the engine solved them."""
    with start_blocking_portal() as portal, contextlib.ExitStack() as stack:
        opened = open_engine(YahtzeeGame(LOWER), MemoryStore())
        engine = stack.enter_context(portal.wrap_async_context_manager(opened))
        table = portal.call(build_table, engine, LOWER)
        keys = [block_key(m) for m in range(LOWER.all_filled + 1)]
        blocks = portal.call(engine.blocks, keys)
        yield table, blocks


def test_which_rule_sets_get_a_decision_table() -> None:
    small = {name for name, rules in RULE_SETS.items() if has_decision_table(rules)}
    assert small == {"yazy", "yahtzee-lower", "yahtzee-upper", "yahtzee-upper-no-bonus"}


# --- npz ---------------------------------------------------------------------------------------


def test_npz_round_trip(lower: tuple[Table, dict[str, Any]], tmp_path: Path) -> None:
    table, blocks = lower
    out = tmp_path / "lower.table"  # no .npz: the file is written where asked all the same
    assert table_module.write_npz(table, out) == [out]

    with np.load(out, allow_pickle=False) as npz:
        data = {name: npz[name] for name in npz.files}
    assert str(data["rules"]) == "yahtzee-lower"
    assert str(data["fingerprint"]) == LOWER.fingerprint
    assert list(data["boxes"]) == [c.name for c in LOWER.categories]
    assert str(data["note"]) == ""
    assert data["filled"].tolist() == list(range(128))  # one guidepost per block: no bonuses
    assert data["upper"].tolist() == data["bonus"].tolist() == [0] * 128
    assert data["value"][0] == pytest.approx(LOWER.start_value, abs=TOL)
    assert data["value"][127] == 0
    for row, filled in enumerate(data["filled"]):
        assert data["value"][row] == blocks[block_key(int(filled))][0, 0]
    keep, box = data["decision_keep"], data["decision_box"]
    assert keep.shape == (128, 2, 252)
    assert box.shape == (128, 252)
    assert (box[127] == -1).all()
    assert (keep[127] == -1).all()
    assert data["rolls"].tolist() == [list(r) for r in FIVE.rolls]
    assert [tuple(k[:n]) for k, n in zip(data["keeps"], data["keep_size"], strict=True)] == list(
        FIVE.keeps
    )

    def chosen_keep(mask: int, rerolls: int, dice: tuple[int, ...]) -> tuple[int, ...]:
        k = keep[mask, rerolls - 1, FIVE.roll_index[dice]]
        return tuple(int(f) for f in data["keeps"][k][: data["keep_size"][k]])

    chance = only(LOWER, "chance")
    assert {data["boxes"][b] for b in box[chance]} == {"chance"}  # nothing else is open
    # Chance alone: keep the dice worth more than a reroll (4.25 with one reroll after,
    # 3.5 with none).
    assert chosen_keep(chance, 2, (1, 2, 4, 5, 6)) == (5, 6)
    assert chosen_keep(chance, 1, (1, 2, 4, 5, 6)) == (4, 5, 6)
    assert chosen_keep(chance, 2, (1, 1, 1, 1, 1)) == ()
    assert chosen_keep(chance, 2, (6, 6, 6, 6, 6)) == (6, 6, 6, 6, 6)
    # Yahtzee alone: keep the most common face.
    yahtzee = only(LOWER, "yahtzee")
    assert chosen_keep(yahtzee, 2, (2, 3, 3, 5, 6)) == (3, 3)
    # Both open, no rerolls, no Yahtzee: a 0 in Yahtzee keeps Chance (23.33 next turn),
    # worth more than 16 now and a Yahtzee chance (2.30) next turn; 29 in Chance is not.
    both = only(LOWER, "chance", "yahtzee")
    assert data["boxes"][box[both, FIVE.roll_index[(1, 2, 3, 4, 6)]]] == "yahtzee"
    assert data["boxes"][box[both, FIVE.roll_index[(5, 6, 6, 6, 6)]]] == "chance"
    # At the start, a large straight rolled with no rerolls left is scored as one.
    assert data["boxes"][box[0, FIVE.roll_index[(2, 3, 4, 5, 6)]]] == "large_straight"


def test_the_readme_describes_every_npz_array(
    lower: tuple[Table, dict[str, Any]], tmp_path: Path
) -> None:
    """The README's npz table is the one description of the layout: its names, dtypes and
    shapes are the file's (N rows, C boxes, 2 rerolls, R rolls and K keeps of D = 5 dice
    for yahtzee-lower)."""
    table, _ = lower
    out = tmp_path / "lower.npz"
    table_module.write_npz(table, out)
    plain, _ = readme_npz_tables()
    npz_is_described(out, described_arrays(plain, npz_sizes(table)))


def readme_npz_tables() -> tuple[str, str]:
    """The README's section on the table, cut where the saved-rolls arrays begin."""
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("### The strategy table", 1)[1].split("\n## ", 1)[0]
    plain, saved = section.split("**With saved rolls**", 1)
    return plain, saved


def npz_sizes(table: Table) -> dict[str, int]:
    """What the README's shapes name: N rows, C boxes, R rolls and K keeps of D dice, and
    with saved rolls G decision rows (guideposts) and L rolls left at most."""
    dice = table.rules.universe
    sizes = {
        "N": table.value.size,
        "C": len(table.rules.categories),
        "rerolls": table.rules.rerolls,
        "R": dice.n_rolls,
        "K": dice.n_keeps,
        "D": dice.count,
    }
    if table.decisions is not None and table.decisions.stop is not None:
        sizes |= {"G": table.decisions.box.shape[0], "L": table.decisions.keep.shape[1]}
    return sizes


def described_arrays(part: str, sizes: dict[str, int]) -> dict[str, tuple[str, tuple[int, ...]]]:
    """Each array a README table names: its dtype and shape."""
    described: dict[str, tuple[str, tuple[int, ...]]] = {}
    for line in part.splitlines():
        if line.startswith("| `"):
            names, dtype, shape, _ = (cell.strip() for cell in line.strip("|").split("|"))
            dims = [d.strip() for d in shape.strip("()").split(",") if d.strip()]
            size = tuple(sizes[d] if d in sizes else int(d) for d in dims)
            described |= {name: (dtype, size) for name in re.findall(r"`(\w+)`", names)}
    return described


def npz_is_described(out: Path, described: dict[str, tuple[str, tuple[int, ...]]]) -> None:
    with np.load(out, allow_pickle=False) as npz:
        assert set(described) == set(npz.files)
        for name, (dtype, size) in described.items():
            array = npz[name]
            assert array.shape == size, name
            assert array.dtype.kind == "U" if dtype == "str" else array.dtype == dtype, name


# --- jsonl -------------------------------------------------------------------------------------


def test_jsonl_round_trip(lower: tuple[Table, dict[str, Any]], tmp_path: Path) -> None:
    table, _ = lower
    out = tmp_path / "lower.jsonl"
    table_module.write_jsonl(table, out)
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]

    header, rest = lines[0], lines[1:]
    assert header == {
        "kind": "header",
        "rules": "yahtzee-lower",
        "fingerprint": LOWER.fingerprint,
        "boxes": [c.name for c in LOWER.categories],
        "rerolls": 2,
        "values": 128,
        "decisions": 127 * 3 * 252,
        "note": None,
    }
    values = [line for line in rest if line["kind"] == "value"]
    decisions = [line for line in rest if line["kind"] == "decision"]
    assert len(values) == 128
    assert len(decisions) == header["decisions"]
    start = next(v for v in values if v["filled"] == [])
    assert start == {
        "kind": "value",
        "filled": [],
        "upper": 0,
        "yahtzee_bonus": False,
        "value": pytest.approx(LOWER.start_value, abs=TOL),
    }
    assert values == [
        {
            "kind": "value",
            "filled": [c.name for i, c in enumerate(LOWER.categories) if f >> i & 1],
            "upper": 0,
            "yahtzee_bonus": False,
            "value": float(v),
        }
        for f, v in zip(table.filled, table.value, strict=True)
    ]

    chance_only = [c.name for c in LOWER.categories if c.name != "chance"]
    here = [d for d in decisions if d["filled"] == chance_only]
    assert len(here) == 3 * 252
    last = [d for d in here if d["rerolls_left"] == 0]
    assert {d["box"] for d in last} == {"chance"}
    assert all("keep" not in d for d in last)
    first = {tuple(d["dice"]): d["keep"] for d in here if d["rerolls_left"] == 2}
    assert first[(1, 2, 4, 5, 6)] == [5, 6]
    second = {tuple(d["dice"]): d["keep"] for d in here if d["rerolls_left"] == 1}
    assert second[(1, 2, 4, 5, 6)] == [4, 5, 6]


# --- parquet -----------------------------------------------------------------------------------


def test_parquet_round_trip_matches_the_npz(
    lower: tuple[Table, dict[str, Any]], tmp_path: Path
) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    table, _ = lower
    out = tmp_path / "lower.parquet"
    assert table_module.write_parquet(table, out) == [out, tmp_path / "lower.decisions.parquet"]

    values = pq.read_table(out)
    assert values.column_names == ["filled", "upper", "bonus", "value"]
    assert values.column("filled").to_pylist() == table.filled.tolist()
    assert values.column("value").to_pylist() == table.value.tolist()
    header = json.loads(values.schema.metadata[b"memo_solver"])
    assert header["rules"] == "yahtzee-lower"
    decisions = pq.read_table(decisions_path(out)).to_pylist()
    assert len(decisions) == 127 * 3 * 252
    assert table.decisions is not None
    for row in decisions[::997]:  # a sample spread over the table
        i = int(np.flatnonzero(table.filled == row["filled"])[0])
        r = FIVE.roll_index[tuple(row["dice"])]
        if row["rerolls_left"]:
            expected = FIVE.keeps[table.decisions.keep[i, row["rerolls_left"] - 1, r]]
            assert tuple(row["keep"]) == expected
            assert row["box"] is None
        else:
            assert row["box"] == LOWER.categories[table.decisions.box[i, r]].name
            assert row["keep"] is None


def test_decisions_path_names() -> None:
    assert decisions_path(Path("a/yazy.parquet")) == Path("a/yazy.decisions.parquet")
    assert decisions_path(Path("yazy.pq")) == Path("yazy.pq.decisions.parquet")


def test_parquet_without_pyarrow_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from memo_solver.cli.common import UsageError

    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(UsageError, match=r"pip install 'memo-solver\[parquet\]'"):
        analysis.check_pyarrow()


# --- big rule sets -----------------------------------------------------------------------------


def test_a_big_rule_set_gets_values_and_a_note_not_an_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """As yahtzee would (8,192 blocks), shown on yahtzee-lower with the limit lowered."""
    monkeypatch.setattr(table_module, "MAX_DECISION_BLOCKS", 64)
    with start_blocking_portal() as portal, contextlib.ExitStack() as stack:
        opened = open_engine(YahtzeeGame(LOWER), MemoryStore())
        engine = stack.enter_context(portal.wrap_async_context_manager(opened))
        table = portal.call(build_table, engine, LOWER)
    assert table.decisions is None
    assert "no decision table: yahtzee-lower has 128 blocks, more than the 64" in table.note
    table_module.write_npz(table, tmp_path / "t.npz")
    with np.load(tmp_path / "t.npz") as npz:
        assert "decision_keep" not in npz.files
        assert "no decision table" in str(npz["note"])
    table_module.write_jsonl(table, tmp_path / "t.jsonl")
    header = json.loads((tmp_path / "t.jsonl").read_text().splitlines()[0])
    assert header["decisions"] is None
    assert "no decision table" in header["note"]


def test_yahtzee_upper_has_every_reachable_upper_total(tmp_path: Path) -> None:
    """With the upper bonus the rows are guideposts: (filled, upper level) pairs."""
    rules = RULE_SETS["yahtzee-upper"]
    with start_blocking_portal() as portal, contextlib.ExitStack() as stack:
        opened = open_engine(YahtzeeGame(rules), MemoryStore())
        engine = stack.enter_context(portal.wrap_async_context_manager(opened))
        table = portal.call(build_table, engine, rules)
    assert table.value[0] == pytest.approx(rules.start_value, abs=TOL)
    sixes = 1 << rules.category_index("sixes")
    levels = table.upper[table.filled == sixes].tolist()
    assert levels == [0, 6, 12, 18, 24, 30]
    all_filled = table.upper[table.filled == rules.all_filled]
    assert all_filled.max() == 63  # totals past the threshold collapse onto it
    assert table.decisions is not None
    # Only Sixes open, 63 already reached: every roll keeps its sixes, the bonus is banked.
    row = int(np.flatnonzero((table.filled == rules.all_filled & ~sixes) & (table.upper == 63))[0])
    keep = table.decisions.keep[row, 1, FIVE.roll_index[(1, 2, 6, 6, 6)]]
    assert FIVE.keeps[keep] == (6, 6, 6)
    assert FIVE.keep_index[(6, 6, 6)] == keep


# --- other dice counts and forced order -------------------------------------------------------


def _table(rules: RuleSet) -> tuple[Table, dict[str, Any]]:
    with start_blocking_portal() as portal, contextlib.ExitStack() as stack:
        opened = open_engine(YahtzeeGame(rules), MemoryStore())
        engine = stack.enter_context(portal.wrap_async_context_manager(opened))
        table = portal.call(build_table, engine, rules)
        keys = [block_key(m) for m in rules.reachable_masks(0)]
        return table, portal.call(engine.blocks, keys)


def test_a_six_dice_table_indexes_its_462_rolls_and_924_keeps(tmp_path: Path) -> None:
    table, blocks = _table(SIX_DICE)
    dice = SIX_DICE.universe
    assert table.value[0] == blocks[block_key(0)][0, 0]
    assert table.decisions is not None
    assert table.decisions.keep.shape == (table.value.size, SIX_DICE.rerolls, 462)
    live = int(np.count_nonzero(table.filled != SIX_DICE.all_filled))
    assert table.decisions.count == live * 3 * 462
    out = tmp_path / "six.npz"
    table_module.write_npz(table, out)
    with np.load(out, allow_pickle=False) as npz:
        assert npz["rolls"].shape == (462, 6)
        assert npz["keeps"].shape == (924, 6)
        assert npz["keep_size"].tolist() == dice.keep_sizes.tolist()
        assert npz["rolls"].tolist() == [list(r) for r in dice.rolls]
    # Only the straight open, no rerolls left: the dice are scored there, whatever they are.
    straight = only(SIX_DICE, "full_straight")
    row = int(np.flatnonzero(table.filled == straight)[0])
    assert (table.decisions.box[row] == SIX_DICE.category_index("full_straight")).all()
    # One reroll left with 1 2 3 4 5 5: keep the five faces of the straight, reroll a five.
    roll = dice.roll_index[(1, 2, 3, 4, 5, 5)]
    assert dice.keeps[table.decisions.keep[row, 0, roll]] == (1, 2, 3, 4, 5)

    jsonl = tmp_path / "six.jsonl"
    table_module.write_jsonl(table, jsonl)
    lines = jsonl.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 + table.value.size + table.decisions.count
    sample = [json.loads(line) for line in lines[1 + table.value.size :: 997]]
    assert all(len(line["dice"]) == 6 for line in sample)
    assert {len(line["keep"]) for line in sample if "keep" in line} <= set(range(7))


def test_a_forced_order_table_lists_the_scorecard_prefixes_only() -> None:
    table, blocks = _table(FORCED)
    assert sorted(set(table.filled.tolist())) == [0, 1, 3, 7, 15, 31]
    assert has_decision_table(FORCED)
    assert table.decisions is not None
    for i, filled in enumerate(table.filled.tolist()):
        block = blocks[block_key(filled)]
        assert table.value[i] == block[table.upper[i], table.bonus[i]]
        if filled != FORCED.all_filled:  # the next box in scorecard order, every roll
            assert (table.decisions.box[i] == filled.bit_count()).all()


# --- the command -------------------------------------------------------------------------------


def export_table(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLI), "--store", str(tmp_path / "s.sqlite3"), "export-table", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
        check=False,
    )


@pytest.mark.parametrize("fmt", ["npz", "jsonl", "parquet"])
def test_cli_export_table(tmp_path: Path, fmt: str) -> None:
    out = tmp_path / f"upper.{fmt}"
    rules = "yahtzee-upper-no-bonus"
    result = export_table(tmp_path, "--rules", rules, "--format", fmt, "--out", str(out), "--json")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["files"][0] == str(out)
    assert answer["values"] == 64
    assert answer["decisions"] == 63 * 3 * 252
    assert answer["note"] is None
    assert all(Path(f).stat().st_size > 0 for f in answer["files"])
    words = export_table(tmp_path, "--rules", rules, "--format", fmt, "--out", str(out))
    assert words.stdout.startswith(f"wrote 64 turn-start values and 47,628 decisions of {rules}")


@pytest.mark.parametrize(
    ("how", "env"),
    [(["--max-memory-mb", "0"], {}), ([], {"MEMO_SOLVER_EXPORT_TABLE_MB": "0"})],
    ids=["option", "environment"],
)
def test_a_table_past_the_memory_limit_is_refused_before_any_solve(
    tmp_path: Path, how: list[str], env: dict[str, str]
) -> None:
    """The limit forced to 0 MiB on ``yahtzee-lower``: one line naming the table's size
    and what to do, before the line a solve starts with; no file written."""
    out = tmp_path / "t.npz"
    result = subprocess.run(
        [str(CLI), "--store", str(tmp_path / "s.sqlite3"), "export-table", "--rules",
         "yahtzee-lower", "--out", str(out), *how],
        capture_output=True, text=True, timeout=120, env={**ENV, **env}, check=False,
    )  # fmt: skip
    line = one_error_line(result)
    assert line.startswith("memo-solver: error: --max-memory-mb: the strategy table of ")
    assert "yahtzee-lower has 128 values and takes about 1 MiB" in line
    assert "past the limit of 0: raise --max-memory-mb" in line
    assert "'memo-solver export'" in line
    assert not out.exists()  # and its one line: no 'solving' line before it


def test_the_default_limit_refuses_maxi_yatzy_saved_and_takes_the_plain_games() -> None:
    """Its 1.27 billion value rows would take about 109 GiB to lay out: refused at once,
    not after the solve, nor by running out of memory; ``yahtzee``'s 49 MiB go through."""
    limit = DEFAULT_EXPORT_TABLE_MB << 20
    assert export_bytes(RULE_SETS["maxi-yatzy-saved"]) > limit >= export_bytes(RULE_SETS["yahtzee"])


def test_the_rows_counted_before_a_table_is_built_are_the_rows_it_has(
    lower: tuple[Table, dict[str, Any]], saved: tuple[Table, dict[str, Any], Any]
) -> None:
    """What the memory limit weighs (:func:`value_rows`) against the tables themselves."""
    for table in (lower[0], saved[0]):
        assert value_rows(table.rules) == table.value.size


def test_an_unreadable_memory_limit_is_a_usage_error(tmp_path: Path) -> None:
    result = subprocess.run(
        [str(CLI), "--store", str(tmp_path / "s.sqlite3"), "export-table", "--rules",
         "yahtzee-lower", "--out", str(tmp_path / "t.npz")],
        capture_output=True, text=True, timeout=120,
        env={**ENV, "MEMO_SOLVER_EXPORT_TABLE_MB": "lots"}, check=False,
    )  # fmt: skip
    line = one_error_line(result)
    assert line.endswith("--max-memory-mb must be a number of MiB "
                         "($MEMO_SOLVER_EXPORT_TABLE_MB is 'lots')")  # fmt: skip


def test_cli_export_table_to_a_missing_folder_is_a_usage_error(tmp_path: Path) -> None:
    result = export_table(tmp_path, "--rules", "yahtzee-upper", "--out", str(tmp_path / "a/t.npz"))
    assert result.returncode == 2
    assert result.stderr.startswith("memo-solver: error: --out: the folder ")
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("name", "given", "written"),
    [
        ("t.jsonl", None, "jsonl"),
        ("t.NPZ", None, "npz"),
        ("t.parquet", None, "parquet"),
        ("t", None, "npz"),
        ("t.jsonl", "jsonl", "jsonl"),
        ("t.json", "jsonl", "jsonl"),
        ("t", "parquet", "parquet"),
    ],
)
def test_the_format_comes_from_the_option_else_the_extension(
    name: str, given: str | None, written: str
) -> None:
    assert output_format(Path(name), given) == written


def test_cli_export_table_without_format_writes_what_the_name_says(tmp_path: Path) -> None:
    out = tmp_path / "upper.jsonl"
    result = export_table(
        tmp_path, "--rules", "yahtzee-upper-no-bonus", "--out", str(out), "--json"
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["format"] == "jsonl"
    header = json.loads(out.read_text().splitlines()[0])
    assert header["rules"] == "yahtzee-upper-no-bonus"
    bare = tmp_path / "upper"
    assert export_table(tmp_path, "--rules", "yahtzee-upper", "--out", str(bare)).returncode == 0
    with np.load(bare) as archive:
        assert str(archive["rules"]) == "yahtzee-upper"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--format", "npz", "--out", "x.jsonl"], "--format npz does not match --out x.jsonl"),
        (["--format", "jsonl", "--out", "x.parquet"], "does not match --out x.parquet"),
        (["--out", "x.txt"], ".txt names no format; give --format (npz, jsonl, parquet)"),
    ],
)
def test_cli_export_table_refuses_a_format_the_name_contradicts(
    tmp_path: Path, args: list[str], words: str
) -> None:
    argv = [a if not a.startswith("x.") else str(tmp_path / a) for a in args]
    result = export_table(tmp_path, "--rules", "yahtzee-upper", *argv)
    assert words in one_error_line(result)
    assert not list(tmp_path.glob("x.*"))


# --- saved rolls -------------------------------------------------------------------------------

SAVED_BOXES = [
    {"name": "fives", "kind": "upper", "face": 5},
    {"name": "sixes", "kind": "upper", "face": 6},
    {"name": "chance", "kind": "chance"},
    {"name": "yatzy", "kind": "all_alike", "points": 50},
]
"""Four boxes, free order (16 blocks), and an upper bonus within reach, so that a block has
several guideposts: with two rerolls a turn the last turn's bank is up to 6 rolls."""


def saved_rules(cap: int | None) -> RuleSet:
    document: dict[str, Any] = {
        "name": "four-saved" if cap is None else f"four-saved-{cap}",
        "dice": 5,
        "upper_threshold": 20,
        "upper_bonus": 25,
        "saved_rolls": True,
        "boxes": SAVED_BOXES,
    }
    if cap is not None:
        document["max_saved"] = cap
    return parse_rule_set(document)


@pytest.fixture(scope="module", params=[None, 2], ids=["no-cap", "cap-2"])
def saved(request: pytest.FixtureRequest) -> Iterator[tuple[Table, dict[str, Any], Any]]:
    """A saved-rolls table, its blocks as the engine solved them, and a way to call the
    engine's ``advise`` (the portal)."""
    rules = saved_rules(request.param)
    with start_blocking_portal() as portal, contextlib.ExitStack() as stack:
        opened = open_engine(YahtzeeGame(rules), MemoryStore())
        engine = stack.enter_context(portal.wrap_async_context_manager(opened))
        table = portal.call(build_table, engine, rules)
        keys = [block_key(m) for m in range(rules.all_filled + 1)]
        blocks = portal.call(engine.blocks, keys)
        yield table, blocks, lambda state: portal.call(advise, engine, rules, state)


def test_a_saved_rolls_table_has_a_value_for_every_bank_of_every_guidepost(
    saved: tuple[Table, dict[str, Any], Any],
) -> None:
    """Each guidepost of a block with L boxes filled has banks 0..min(2L, cap), in rows
    ascending by filled, upper, bonus, then bank; each value is the block's (the end of the
    game's too, 0 with whatever bank is left)."""
    table, blocks, _ = saved
    rules = table.rules
    assert table.saved is not None
    rows = 0
    for filled in range(rules.all_filled + 1):
        levels = Guideposts.reachable(rules, filled).upper.size
        rows += levels * rules.saved_levels(filled.bit_count())
    assert table.value.size == rows
    keys = np.stack([table.filled, table.upper, table.bonus, table.saved])
    assert (np.diff(np.ravel_multi_index(keys, (16, 21, 1, 9))) > 0).all()
    for i in range(table.value.size):
        block = blocks[block_key(int(table.filled[i]))]
        assert table.value[i] == block[table.upper[i], table.bonus[i], table.saved[i]]
    assert table.value[0] == pytest.approx(float(blocks[block_key(0)][0, 0, 0]), abs=0)
    assert int(table.saved.max()) == min(4 * 2, 8 if rules.max_saved is None else rules.max_saved)


def test_saved_rolls_decisions_are_advices_best_action(
    saved: tuple[Table, dict[str, Any], Any],
) -> None:
    """At sampled guideposts, rolls left and rolls: the keep, or the box scored at once or
    with no roll left, is advice's first action (the tie rule's); rolls left past what the
    block's turns can have hold no decision."""
    table, _, ask = saved
    rules, decisions = table.rules, table.decisions
    assert decisions is not None
    assert decisions.stop is not None
    assert decisions.guideposts is not None
    filled, upper, bonus = decisions.guideposts
    most = decisions.keep.shape[1]
    assert most == min(3 * 2, rules.max_saved or 6) + rules.rerolls
    random = np.random.default_rng(31)
    live = np.flatnonzero(decisions.box[:, 0] >= 0)
    checked = {"keep": 0, "stop": 0, "box": 0}
    for g in random.choice(live, 60):
        mask = int(filled[g])
        reach = rules.saved_levels(mask.bit_count()) - 1 + rules.rerolls
        beyond = decisions.keep[g, reach:], decisions.stop[g, reach:]
        assert all((part == -1).all() for part in beyond)
        for left in random.choice(reach + 1, 3):
            roll = int(random.integers(FIVE.n_rolls))
            state = State(mask, int(upper[g]), bool(bonus[g]), int(left), FIVE.rolls[roll])
            best = ask(state).actions[0]
            if left == 0:
                assert best.kind == "score"
                assert best.category == rules.categories[decisions.box[g, roll]].name
                checked["box"] += 1
            elif decisions.keep[g, left - 1, roll] >= 0:
                assert decisions.stop[g, left - 1, roll] == -1
                assert best.kind == "keep"
                assert best.keep == FIVE.keeps[decisions.keep[g, left - 1, roll]]
                checked["keep"] += 1
            else:
                assert best.kind == "score"
                assert best.category == rules.categories[decisions.stop[g, left - 1, roll]].name
                checked["stop"] += 1
    assert min(checked.values()) > 0, checked


def test_saved_rolls_in_every_format_and_in_the_readme(
    saved: tuple[Table, dict[str, Any], Any], tmp_path: Path
) -> None:
    """The npz holds what the README's two tables say; the jsonl and parquet decisions are
    the npz's, one per decision the header counts, rolls left from the most down."""
    table, _, _ = saved
    rules, decisions = table.rules, table.decisions
    assert decisions is not None
    assert decisions.stop is not None
    assert decisions.guideposts is not None
    table_module.write_npz(table, tmp_path / "t.npz")
    plain, with_saved = readme_npz_tables()
    sizes = npz_sizes(table)
    described = described_arrays(plain, sizes) | described_arrays(with_saved, sizes)
    npz_is_described(tmp_path / "t.npz", described)

    table_module.write_jsonl(table, tmp_path / "t.jsonl")
    lines = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    header = lines[0]
    assert header["saved_rolls"] is True
    assert header["max_saved"] == rules.max_saved
    values = [line for line in lines if line["kind"] == "value"]
    saved_column = table.saved
    assert saved_column is not None
    assert [v["saved"] for v in values] == saved_column.tolist()
    made = [line for line in lines if line["kind"] == "decision"]
    assert len(made) == header["decisions"] == decisions.count
    g_of = {
        (int(f), int(u), int(b)): g
        for g, (f, u, b) in enumerate(zip(*decisions.guideposts, strict=True))
    }
    names = [c.name for c in rules.categories]
    stop = decisions.stop

    def npz_choice(line: dict[str, Any]) -> tuple[str, Any]:
        mask = sum(1 << names.index(name) for name in line["filled"])
        g = g_of[mask, line["upper"], int(line["yahtzee_bonus"])]
        r, n = FIVE.roll_index[tuple(line["dice"])], line["rolls_left"]
        if n == 0:
            return "box", names[decisions.box[g, r]]
        if decisions.keep[g, n - 1, r] >= 0:
            return "keep", list(FIVE.keeps[decisions.keep[g, n - 1, r]])
        return "box", names[stop[g, n - 1, r]]

    for line in made[::211]:
        kind = "keep" if "keep" in line else "box"
        assert (kind, line[kind]) == npz_choice(line)
    lefts = [line["rolls_left"] for line in made if line["filled"] == []]
    assert lefts == sorted(lefts, reverse=True)
    assert lefts[0] == rules.rerolls  # the first turn's bank is empty

    pq = pytest.importorskip("pyarrow.parquet")
    table_module.write_parquet(table, tmp_path / "t.parquet")
    banks = pq.read_table(tmp_path / "t.parquet").column("saved").to_pylist()
    assert banks == saved_column.tolist()
    rows = pq.read_table(tmp_path / "t.decisions.parquet").to_pylist()
    assert len(rows) == len(made)
    for row, line in zip(rows[::97], made[::97], strict=True):
        assert row["rolls_left"] == line["rolls_left"]
        assert row["dice"] == line["dice"]
        assert (row["keep"], row["box"]) == (line.get("keep"), line.get("box"))
        assert row["filled"] == sum(1 << names.index(name) for name in line["filled"])


def test_cli_export_table_of_a_saved_rolls_rule_file(tmp_path: Path) -> None:
    """Forced Yatzy with saved rolls: 16 blocks, so its decision table is written; its
    first value row is the start value, pinned elsewhere (tests/test_saved_rolls.py)."""
    document = json.loads(
        (Path(__file__).parents[1] / "examples/rules/yatzy-saved.json").read_text()
    )
    rules_file = tmp_path / "forced-saved.json"
    rules_file.write_text(json.dumps({**document, "name": "forced-saved", "order": "forced"}))
    out = tmp_path / "forced.npz"
    result = export_table(tmp_path, "--rules-file", str(rules_file), "--out", str(out), "--json")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["values"] == 15_559
    assert answer["decisions"] == 3_796_380
    with np.load(out, allow_pickle=False) as npz:
        assert npz["value"][0] == pytest.approx(174.0530941844, abs=1e-9)
        assert npz["saved"][0] == 0
        assert npz["decision_keep"].shape == (npz["decision_box"].shape[0], 30, 252)
