"""``advise`` and ``value`` as a real process: the answers pinned, in words and in JSON,
and states read line by line from stdin.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from support.cli_support import (
    PINS,
    TOL,
    answer,
    memo_solver,
)

HASKELL_EXAMPLE = "- x x x x x x x x x x - x 62 False 2 1 2 2 2 6"


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One store for the tests that only read: blocks solved by one test serve the next."""
    return tmp_path_factory.mktemp("cli") / "store.sqlite3"


# --- advise -----------------------------------------------------------------------------------


@pytest.mark.parametrize("rules", ["yahtzee", "yahtzee-no-joker"])
def test_advise_answers_the_reference_haskell_example(shared_store: Path, rules: str) -> None:
    advice = answer(
        memo_solver(shared_store, "advise", "--rules", rules, HASKELL_EXAMPLE, "--json")
    )

    assert advice["value"] == pytest.approx(40.998025624, abs=TOL)
    assert advice["turn_start_value"] == pytest.approx(40.430844806, abs=TOL)
    actions = advice["actions"]
    assert [(a["kind"], a.get("keep")) for a in actions[:3]] == [
        ("keep", [2, 2, 2]),
        ("keep", [1, 2, 2, 2]),
        ("keep", [1]),
    ]
    assert [a["value"] for a in actions[:3]] == pytest.approx(
        [40.998025624, 40.001351082, 39.926679721], abs=TOL
    )
    scores = {a["category"]: a for a in actions if a["kind"] == "score"}
    assert set(scores) == {"ones", "yahtzee"}
    assert scores["ones"]["value"] == pytest.approx(38.301432126, abs=TOL)
    assert (scores["ones"]["points"], scores["ones"]["bonus"]) == (1, 35)
    assert scores["yahtzee"]["value"] == pytest.approx(34.834789978, abs=TOL)
    assert (scores["yahtzee"]["points"], scores["yahtzee"]["bonus"]) == (0, 0)


def test_advise_offers_every_distinct_keep_and_every_open_box_ranked(shared_store: Path) -> None:
    advice = answer(memo_solver(shared_store, "advise", HASKELL_EXAMPLE, "--json"))
    actions = advice["actions"]

    dice = (1, 2, 2, 2, 6)
    distinct = {tuple(sorted(c)) for n in range(6) for c in itertools.combinations(dice, n)}
    keeps = [tuple(a["keep"]) for a in actions if a["kind"] == "keep"]
    assert len(distinct) == 2 * 4 * 2
    assert len(keeps) == len(set(keeps)) == len(distinct)
    assert set(keeps) == distinct
    assert {(), dice} <= set(keeps)
    assert len(actions) == len(keeps) + 2  # scoring in Ones or in Yahtzee

    values = [a["value"] for a in actions]
    # best first; values equal to 1e-9 are ties, ordered by the tie rule
    assert all(a >= b - 1e-9 for a, b in itertools.pairwise(values))
    assert actions[0]["loss"] == 0
    assert advice["value"] == actions[0]["value"]
    for action in actions:
        assert action["loss"] >= 0
        assert action["loss"] == pytest.approx(advice["value"] - action["value"], abs=1e-12)


def test_advise_in_words_names_the_best_keep(shared_store: Path) -> None:
    result = memo_solver(shared_store, "advise", "--rules", "yahtzee", HASKELL_EXAMPLE)

    assert result.returncode == 0, result.stderr
    first = result.stdout.splitlines()[0]
    assert "keep 2 2 2" in first
    assert "40.9980" in first
    assert "Turn-start value of this scorecard: 40.4308" in result.stdout
    assert "score 1 in Ones (+35 bonus)" in result.stdout


def test_advise_before_the_roll_gives_the_turn_start_value(shared_store: Path) -> None:
    advice = answer(memo_solver(shared_store, "advise", "open=ones,yahtzee upper=62", "--json"))

    assert advice["actions"] == []
    assert advice["value"] == advice["turn_start_value"]
    assert advice["value"] == pytest.approx(40.430844806, abs=TOL)


def test_advise_reads_json_states_line_by_line_from_stdin(shared_store: Path) -> None:
    lines = [
        json.dumps({"filled": [], "dice": [6, 6, 6, 6, 6], "rerolls_left": 0}),
        '{"filled": [',  # malformed JSON
        "",  # blank lines are skipped but counted
        json.dumps({"filled": ["twos"], "upper": 3}),  # twos cannot make 3
        "open=chance",
        json.dumps({"filled": ["one_pair"]}),  # a box yahtzee-lower lacks
    ]
    result = memo_solver(
        shared_store, "advise", "--rules", "yahtzee-lower", "-", stdin="\n".join(lines) + "\n"
    )

    assert result.returncode == 2
    assert "error" not in result.stderr  # bad lines are answered on stdout (a solve may be said)
    out = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(out) == 5
    first, bad_json, bad_upper, chance, bad_box = out
    assert (first["actions"][0]["category"], first["actions"][0]["points"]) == ("yahtzee", 50)
    assert first["value"] == first["actions"][0]["value"]
    assert bad_json["error"]["line"] == 2
    assert bad_json["error"]["field"] == "state"
    assert "malformed JSON" in bad_json["error"]["message"]
    assert bad_upper["error"]["line"] == 4
    assert bad_box["error"]["line"] == 6
    assert bad_box["error"]["field"] == "filled"
    assert chance["value"] == pytest.approx(70 / 3, abs=TOL)


def test_value_reads_states_line_by_line_from_stdin_like_advise(shared_store: Path) -> None:
    lines = ["open=chance", json.dumps({"filled": ["twos"]}), "start"]
    result = memo_solver(
        shared_store, "value", "--rules", "yahtzee-lower", "-", stdin="\n".join(lines) + "\n"
    )

    assert result.returncode == 2  # one line was bad
    chance, bad, start = [json.loads(line) for line in result.stdout.splitlines()]
    assert chance["value"] == pytest.approx(70 / 3, abs=TOL)
    assert (bad["error"]["line"], bad["error"]["field"]) == (2, "filled")  # no twos here
    assert start["value"] == pytest.approx(PINS["yahtzee-lower"], abs=TOL)


def test_advise_from_stdin_exits_0_when_every_line_is_good(shared_store: Path) -> None:
    stdin = "open=yahtzee\nopen=yahtzee dice=33333 rerolls=2\n"
    result = memo_solver(shared_store, "advise", "-", stdin=stdin)

    assert result.returncode == 0, result.stderr
    before, rolled = (json.loads(line) for line in result.stdout.splitlines())
    assert before["value"] == pytest.approx(2.3014321263, abs=TOL)
    assert rolled["actions"][0]["kind"] == "score"
    assert rolled["value"] == 50


# --- value ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rules", "state", "expected"),
    [
        ("yahtzee-lower", None, PINS["yahtzee-lower"]),
        ("yahtzee-upper", None, PINS["yahtzee-upper"]),
        ("yahtzee-upper-no-bonus", "start", PINS["yahtzee-upper-no-bonus"]),
        ("yahtzee-upper", "open=sixes upper=63", 30 * (1 - (5 / 6) ** 3)),
        ("yahtzee", "open=chance", 70 / 3),
        ("yahtzee", "open=yahtzee", 50 * 2783176 / 60466176),
        ("yahtzee", "open=sixes upper=63", 12.6388888889),
    ],
)
def test_value_matches_the_pins(
    shared_store: Path, rules: str, state: str | None, expected: float
) -> None:
    args = ["value", "--rules", rules, *([state] if state else []), "--json"]
    payload = answer(memo_solver(shared_store, *args))

    assert payload["rules"] == rules
    assert payload["value"] == pytest.approx(expected, abs=TOL)
    assert payload["turn_start_value"] == payload["value"]


def test_value_in_words_prints_ten_decimals(shared_store: Path) -> None:
    result = memo_solver(shared_store, "value", "--rules", "yahtzee-lower")

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"{PINS['yahtzee-lower']:.10f}"


def test_a_turn_start_sent_with_every_field_is_the_start(shared_store: Path) -> None:
    """A form that always sends every field: no dice yet, all the turn's rerolls left."""
    sent = json.dumps({"filled": [], "dice": None, "rerolls_left": 2})
    payload = answer(memo_solver(shared_store, "value", "--rules", "yahtzee-lower", sent, "--json"))

    assert payload["value"] == pytest.approx(PINS["yahtzee-lower"], abs=TOL)


def test_yazy_takes_the_box_names_of_its_post(shared_store: Path) -> None:
    post_names = ["Count 1s", "Count 2s", "Count 3s", "Count 4s", "Count 5s", "Count 6s"]
    post_names += ["3 of a kind", "4 of a kind", "3 + 2", "Sequence of 5"]
    sent = json.dumps({"filled": post_names})
    by_alias = answer(memo_solver(shared_store, "value", "--rules", "yazy", sent, "--json"))
    by_name = answer(memo_solver(shared_store, "value", "--rules", "yazy", "open=yazy", "--json"))

    assert by_alias["value"] == by_name["value"] == pytest.approx(50 * 2783176 / 60466176)
