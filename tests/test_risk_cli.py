"""``advise --risk``, ``value --risk`` and ``precompute --risk`` as real processes.

The game is one die and one chance box with one reroll (``cli_support.TINY_RULES``): a die
in hand is worth its face, a reroll exp(theta face) averaged over the faces, in points
(1/theta) ln of it, which the brute force of the risk dial computes on its own.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from support import risk_brute_force as brute
from support.cli_support import TINY_RULES, answer, memo_solver, one_error_line

from memo_solver.core.engine import namespace_of
from memo_solver.games.yahtzee.rules.rule_file import parse_rule_set

REL = 1e-9

pytestmark = pytest.mark.slow  # each test starts processes


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store.sqlite3"


def rerolled(theta: float) -> float:
    """A reroll of the last roll: (1/theta) ln of the mean of exp(theta face)."""
    return math.log(sum(math.exp(theta * face) for face in range(1, 7)) / 6) / theta


def test_advise_at_a_risk_ranks_by_certainty_equivalent(store: Path, tiny_rules_file: Path) -> None:
    """A 4 in hand: scored it is 4 at any risk; the reroll is worth 3.5 on average, but
    more than 4 to a bold player (theta 0.5: 4.17) and less to a careful one. The mean
    advice scores the 4; at 0.5 the reroll comes first, its mean value and loss beside it."""
    args = ("advise", "--rules-file", str(tiny_rules_file), "dice=4 rerolls=1", "--json")
    bold = answer(memo_solver(store, *args, "--risk", "0.5"))

    assert bold["risk"] == 0.5
    assert [(a["words"], a["value"]) for a in bold["actions"]] == [
        ("reroll the die", pytest.approx(3.5)),
        ("score 4 in Chance", 4.0),
        ("keep the die", 4.0),
    ]
    certain = [a["certainty_equivalent"] for a in bold["actions"]]
    assert certain == pytest.approx([rerolled(0.5), 4.0, 4.0], rel=REL)
    assert certain[0] == pytest.approx(
        brute.actions(TINY_RULES, 0.5, (), 0, False, (4,), 1)["keep nothing"], rel=REL
    )
    careful = answer(memo_solver(store, *args, "--risk", "-0.5"))
    assert careful["actions"][0]["words"] == "score 4 in Chance"
    words = memo_solver(store, *args[:-1], "--risk", "0.5")
    assert words.returncode == 0, words.stderr
    assert "Best at risk 0.5: reroll the die  (certainty equivalent 4.1" in words.stdout
    assert "Best for points: score 4 in Chance" in words.stdout


def test_precompute_at_a_risk_solves_the_risk_table_that_value_reads(
    store: Path, tiny_rules_file: Path
) -> None:
    """With the mean table there too (the advice's mean values and ties), a value at the
    risk computes nothing: the start's certainty equivalent, the brute force's."""
    for table in ((), ("--risk", "-0.1")):
        done = memo_solver(store, "precompute", "--rules-file", str(tiny_rules_file), *table)
        assert done.returncode == 0, done.stderr
    assert "certainty equivalent at risk -0.1" in done.stdout
    value = answer(
        memo_solver(
            store, "value", "--rules-file", str(tiny_rules_file), "--risk", "-0.1", "--json"
        )
    )
    assert value["blocks_computed"] == 0
    assert value["certainty_equivalent"] == pytest.approx(
        brute.value(TINY_RULES, -0.1, (), 0, False), rel=REL
    )
    assert value["value"] == pytest.approx(4.25)


@pytest.mark.full  # six processes: the operator's commands, each as it is run
def test_status_export_import_and_prune_take_a_risk_table_like_any_value_type(
    store: Path, tiny_rules_file: Path, tmp_path: Path
) -> None:
    """``status`` lists the table by its rule set and risk; ``export --risk`` and
    ``import --risk`` copy it whole into another store, which answers a value at the risk
    from it; ``prune`` knows its namespace and keeps it."""
    rules = ("--rules-file", str(tiny_rules_file), "--risk", "0.1", "--json")
    solved = answer(memo_solver(store, "precompute", *rules))
    listed = answer(memo_solver(store, "status", "--json"))["tables"]
    fingerprint = parse_rule_set(TINY_RULES).fingerprint
    table = listed[namespace_of(f"{fingerprint}-risk100")]
    assert (table["rules"], table["value_type"]) == (fingerprint, "risk table at 0.1")
    assert table["blocks_done"] == solved["blocks_total"]

    dump, other = tmp_path / "risk.msgpack", tmp_path / "other.sqlite3"
    exported = answer(memo_solver(store, "export", *rules, "--to", str(dump)))
    imported = answer(memo_solver(other, "import", *rules, "--from", str(dump)))
    assert exported["blocks"] == imported["blocks"] == solved["blocks_total"]
    value = answer(memo_solver(other, "value", *rules))
    assert value["certainty_equivalent"] == solved["certainty_equivalent"]
    pruned = answer(memo_solver(other, "prune", "--json"))
    assert (pruned["namespaces"], pruned["known"]) == ([], 2)  # the risk table and the mean's


@pytest.mark.parametrize(
    ("command", "theta"), [("advise", "0.6"), ("value", "0.0001"), ("precompute", "bold")]
)
def test_a_risk_off_the_dial_is_one_line_naming_it(
    store: Path, tiny_rules_file: Path, command: str, theta: str
) -> None:
    state = ["dice=4 rerolls=1"] if command == "advise" else []
    result = memo_solver(
        store, command, "--rules-file", str(tiny_rules_file), *state, f"--risk={theta}"
    )
    assert "the risk must be a number from -0.5 to 0.5" in one_error_line(result)


def test_a_risk_beside_a_need_is_one_line(store: Path, tiny_rules_file: Path) -> None:
    result = memo_solver(
        store, "advise", "--rules-file", str(tiny_rules_file), "dice=4 rerolls=1",
        "--risk", "0.1", "--need", "5",
    )  # fmt: skip
    assert "give --risk alone, not with --need or --opponent" in one_error_line(result)
