"""The ``memo-solver`` command end to end, as a real process on a store in a temporary folder.

Every test passes ``--store``, so the user's own cache is never touched. The values pinned
here come from ``shared/pins.md`` (exact backward DP, cross-checked against published figures).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.cli_support import TEMPFAIL, TINY_RULES, one_error_line
from support.redis_server import RedisServer, free_port
from support.store_faults import FULL, on_every_connection, redis_at_maxmemory, store_file

from memo_solver.cli import main as memo_cli
from memo_solver.cli.common import EXIT_UNAVAILABLE
from memo_solver.cli.parser import build_parser
from memo_solver.cli.worker_options import build_parser as worker_parser
from memo_solver.core.compiled import CACHE_ENV, cache_dir
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.rules.rule_file import read_rule_file

# ``python -m memo_solver.cli.main`` does nothing (cli.py has no ``__main__`` guard), so the
# tests run the console script installed beside the interpreter.
CLI = Path(sys.executable).with_name("memo-solver")
ENV = {
    **{k: v for k, v in os.environ.items() if k != "MEMO_SOLVER_STORE"},
    "OPENBLAS_NUM_THREADS": "1",
    # The compiled code the suite's own processes use, wherever a test puts the cache folder.
    CACHE_ENV: str(cache_dir()),
}
TIMEOUT_S = 120
TOL = 1e-9

HASKELL_EXAMPLE = "- x x x x x x x x x x - x 62 False 2 1 2 2 2 6"
PINS = {
    "yahtzee": 254.5877287345,
    "yazy": 165.7573187094,
    "yahtzee-upper": 71.9515297337,
    "yahtzee-upper-no-bonus": 59.1632004354,
    "yahtzee-lower": 139.9712924424,
}


def memo_solver(
    store: Path, *args: str, stdin: str | None = None, timeout: float = TIMEOUT_S
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLI), "--store", str(store), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=ENV,
        check=False,
    )


def start(store: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(CLI), "--store", str(store), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )


def answer(result: subprocess.CompletedProcess[str]) -> Any:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One store for the tests that only read: blocks solved by one test serve the next."""
    return tmp_path_factory.mktemp("cli") / "store.sqlite3"


def test_the_console_script_is_installed() -> None:
    assert CLI.is_file(), f"{CLI} is missing: is the package installed in this environment?"


# --- rules ------------------------------------------------------------------------------------


def test_rules_lists_every_rule_set_with_its_description(tmp_path: Path) -> None:
    result = memo_solver(tmp_path / "s.db", "rules")

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == len(RULE_SETS)
    for rules in RULE_SETS.values():
        (line,) = [line for line in lines if line.split()[0] == rules.name]
        assert rules.description in line
        assert f"{rules.start_value:.10f}" in line
    assert not (tmp_path / "s.db").exists(), "listing rule sets must not create a store"


def test_rules_json_has_the_start_value_of_every_rule_set(tmp_path: Path) -> None:
    rows = answer(memo_solver(tmp_path / "s.db", "rules", "--json"))

    assert [row["name"] for row in rows] == list(RULE_SETS)
    for row in rows:
        rules = RULE_SETS[row["name"]]
        assert row["description"] == rules.description
        assert row["start_value"] == rules.start_value
        assert row["boxes"] == [c.name for c in rules.categories]
    for name, pin in PINS.items():
        assert next(r for r in rows if r["name"] == name)["start_value"] == pytest.approx(pin)


def test_rules_show_prints_a_built_in_as_its_file(tmp_path: Path) -> None:
    shown = memo_solver(tmp_path / "s.db", "rules", "show", "yazy")
    assert shown.returncode == 0, shown.stderr
    house = tmp_path / "house.json"
    house.write_text(shown.stdout)
    assert read_rule_file(house).fingerprint == RULE_SETS["yazy"].fingerprint
    assert json.loads(shown.stdout)["boxes"][0] == {
        "name": "ones",
        "kind": "upper",
        "face": 1,
        "aliases": ["Count 1s"],
    }
    assert answer(memo_solver(tmp_path / "s.db", "rules", "show", "yazy", "--json")) == (
        json.loads(shown.stdout)
    )
    for argv, words in [
        (("rules", "show"), "name the built-in rule set"),
        (("rules", "show", "kniffel"), "unknown rule set 'kniffel'"),
        (("rules", "list", "yazy"), "did you mean 'rules show yazy'"),
    ]:
        refused = memo_solver(tmp_path / "s.db", *argv)
        assert refused.returncode == 2
        assert words in refused.stderr
        assert refused.stderr.count("\n") == 1


def test_a_rules_file_goes_wherever_rules_goes(tmp_path: Path) -> None:
    tiny = tmp_path / "tiny.json"
    tiny.write_text(json.dumps(TINY_RULES))
    value = answer(memo_solver(tmp_path / "s.db", "value", "--rules-file", str(tiny), "--json"))
    assert value["rules"] == "tiny"
    # One die, one chance box, one reroll: keep a 4, 5 or 6, else roll again: 4.25.
    assert value["value"] == pytest.approx(4.25, abs=TOL)
    done = answer(memo_solver(tmp_path / "s.db", "precompute", "--rules-file", str(tiny), "--json"))
    assert done["blocks_total"] == 2
    status = answer(memo_solver(tmp_path / "s.db", "status", "--rules-file", str(tiny), "--json"))
    assert status["rule_sets"]["tiny"]["blocks_done"] == 2
    both = memo_solver(tmp_path / "s.db", "value", "--rules", "yazy", "--rules-file", str(tiny))
    assert "--rules-file: not allowed with argument --rules" in one_error_line(both)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(TINY_RULES | {"dice": 0}))
    refused = memo_solver(tmp_path / "s.db", "advise", "--rules-file", str(bad), "start")
    assert refused.returncode == 2
    assert (
        refused.stderr == f"memo-solver: error: dice: expected an integer 1..6, got 0 (in {bad})\n"
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "args", [["advise", "dice=4 rerolls=1"], ["simulate", "--show", "--games", "3"]]
)
def test_a_reader_that_leaves_early_ends_the_command_quietly(
    tmp_path: Path, args: list[str]
) -> None:
    """``| head -1`` closes the pipe while the command still writes: no error line, and
    141 (128 + SIGPIPE), what a shell reports for a tool that the signal ends. Here the
    reader has left before the command starts, so every run meets the closed pipe (with
    ``head`` the command only meets it when it writes after head has gone: one run in six)."""
    tiny = tmp_path / "tiny.json"
    tiny.write_text(json.dumps(TINY_RULES))
    store = tmp_path / "s.db"
    answer(memo_solver(store, "value", "--rules-file", str(tiny), "--json"))  # warm: no solve line
    command = subprocess.Popen(
        [str(CLI), "--store", str(store), *args, "--rules-file", str(tiny)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    assert command.stdout is not None
    command.stdout.close()
    _, errors = command.communicate(timeout=TIMEOUT_S)
    assert (command.returncode, errors) == (141, "")


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


# --- bad input ----------------------------------------------------------------------------------


def _a_file(tmp_path: Path) -> Path:
    path = tmp_path / "a-file"
    path.write_text("not a folder\n")
    return path / "store.sqlite3"


BAD_INPUT: list[tuple[str, list[str], str, Callable[[Path], Path] | None]] = [
    ("four-dice", ["advise", "open=ones,yahtzee upper=62 dice=1222"], "expected 5 dice", None),
    ("six-dice", ["advise", "- x x x x x x x x x x - x 62 False 2 1 2 2 2 6 6"], "dice", None),
    ("face-7", ["advise", "open=ones,yahtzee upper=62 dice=12227"], "face 7", None),
    ("face-0-json", ["advise", '{"dice": [0, 1, 2, 3, 4]}'], "face 0", None),
    ("unknown-box", ["advise", "filled=fooes"], "unknown box 'fooes'", None),
    ("box-twice", ["advise", "filled=twos,twos upper=4"], "listed twice", None),
    ("box-of-another-rule-set", ["advise", "filled=one_pair"], "one_pair", None),
    (
        "box-of-yazy-unknown",
        ["advise", "--rules", "yazy", "filled=chance"],
        "or their aliases Count 1s,",
        None,
    ),
    ("upper-3-with-twos", ["advise", "filled=twos upper=3"], "upper total 3", None),
    ("upper-40-with-ones", ["advise", "filled=ones upper=40"], "upper total 40", None),
    ("upper-negative", ["advise", "upper=-1"], "0 or more", None),
    ("rerolls-3", ["advise", "dice=12345 rerolls=3"], "rerolls_left", None),
    ("rerolls-1-without-dice", ["advise", "rerolls=1"], "rerolls left can only be 2", None),
    ("bonus-with-yahtzee-open", ["advise", "bonus=yes"], "yahtzee_bonus", None),
    ("malformed-json", ["advise", '{"filled": ['], "malformed JSON", None),
    ("json-unknown-key", ["advise", '{"filed": []}'], "unknown key", None),
    ("wrong-mark-count", ["advise", "- x - 0 False"], "marks", None),
    ("empty-state", ["advise", "  "], "empty", None),
    ("value-bad-state", ["value", "upper=7"], "upper total 7", None),
    ("unknown-rule-set", ["advise", "--rules", "yahtzee-deluxe", "start"], "unknown rule", None),
    ("unknown-command", ["frobnicate"], "invalid choice", None),
    ("unknown-option", ["advise", "--frobnicate", "start"], "unrecognized arguments", None),
    ("missing-state", ["advise"], "required", None),
    (
        "store-under-proc",
        ["value", "--rules", "yahtzee-upper"],
        "cannot open the store",
        lambda tmp: Path("/proc/memo-solver-test/store.sqlite3"),
    ),
    (
        "store-under-a-file",
        ["value", "--rules", "yahtzee-upper"],
        "cannot open the store",
        _a_file,
    ),
    ("store-is-a-folder", ["status"], "cannot open the store", lambda tmp: tmp),
]


@pytest.mark.parametrize(
    ("args", "expected", "store_at"),
    [case[1:] for case in BAD_INPUT],
    ids=[case[0] for case in BAD_INPUT],
)
def test_bad_input_is_one_line_on_stderr_and_exit_status_2(
    tmp_path: Path,
    args: list[str],
    expected: str,
    store_at: Callable[[Path], Path] | None,
) -> None:
    store = store_at(tmp_path) if store_at else tmp_path / "store.sqlite3"
    result = memo_solver(store, *args)

    assert expected in one_error_line(result)
    assert result.stdout == ""


# --- precompute and status --------------------------------------------------------------------


def test_precompute_solves_everything_once_and_status_shows_it(tmp_path: Path) -> None:
    store = tmp_path / "store.sqlite3"

    first = answer(memo_solver(store, "precompute", "--rules", "yahtzee-lower", "--json"))
    assert first["value"] == pytest.approx(PINS["yahtzee-lower"], abs=TOL)
    assert (first["blocks_total"], first["blocks_computed"]) == (128, 128)
    assert first["blocks_already_stored"] == 0
    assert first["store"] == str(store)

    again = answer(memo_solver(store, "precompute", "--rules", "yahtzee-lower", "--json"))
    assert again["value"] == first["value"]
    assert (again["blocks_computed"], again["blocks_already_stored"]) == (0, 128)

    status = answer(memo_solver(store, "status", "--json"))
    assert status["store"] == str(store)
    assert status["size_bytes"] > 0
    assert status["rule_sets"]["yahtzee-lower"] == {
        "blocks_total": 128,
        "blocks_done": 128,
        "claims_held": 0,
        "bytes": status["rule_sets"]["yahtzee-lower"]["bytes"],
    }
    assert status["rule_sets"]["yahtzee"]["blocks_done"] == 0
    assert set(status["rule_sets"]) == {*RULE_SETS, "dice-of-doom-2x2", "dice-of-doom-3x3"}

    words = memo_solver(store, "status")
    assert words.returncode == 0, words.stderr
    assert "128 of    128 blocks" in words.stdout


@pytest.mark.full  # hardening 4's end to end: run with -m full (the suite's growth budget)
def test_the_readme_gives_the_size_of_a_solved_yahtzee_store_alike_everywhere(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store.sqlite3"
    answer(memo_solver(store, "precompute", "--rules", "yahtzee", "--json"))
    size_mb = answer(memo_solver(store, "status", "--json"))["size_bytes"] / 1e6
    readme = " ".join((Path(__file__).parents[1] / "README.md").read_text().split())
    told = re.findall(r"Solved `yahtzee` takes ([\d.]+) MB", readme)
    told += re.findall(
        r"peak memory of that precompute / store on disk \|[^|]* / ([\d.]+) MB", readme
    )
    assert len(told) == 2, told
    # 0.1 MB: the figures are rounded to it; SQLite's pages fill a little differently with
    # the commits' batches.
    assert all(abs(float(figure) - size_mb) <= 0.1 for figure in told), (told, size_mb)


def test_precompute_on_two_threads_solves_the_same_game(tmp_path: Path) -> None:
    both = answer(
        memo_solver(
            tmp_path / "s.db", "precompute", "--rules", "yahtzee-lower", "--threads", "2", "--json"
        )
    )
    assert both["value"] == pytest.approx(PINS["yahtzee-lower"], abs=TOL)
    assert both["blocks_computed"] == 128
    refused = memo_solver(
        tmp_path / "s.db", "precompute", "--rules", "yahtzee-lower", "--threads", "0"
    )
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        "memo-solver: error: --threads must be 1 or more, got 0"
    ]


def test_precompute_in_words(tmp_path: Path) -> None:
    result = memo_solver(tmp_path / "s.db", "precompute", "--rules", "yahtzee-upper")

    assert result.returncode == 0, result.stderr
    assert f"start value {PINS['yahtzee-upper']:.10f}" in result.stdout
    assert "computed 64 of 64 blocks" in result.stdout


@pytest.mark.slow
def test_two_processes_share_the_work_of_one_solve(tmp_path: Path) -> None:
    store = tmp_path / "store.sqlite3"
    # Create the file first, so that neither process races the other through the schema.
    answer(memo_solver(store, "status", "--json"))

    processes = [start(store, "precompute", "--rules", "yazy", "--json") for _ in range(2)]
    results = [p.communicate(timeout=TIMEOUT_S) for p in processes]

    payloads = []
    for process, (out, err) in zip(processes, results, strict=True):
        assert process.returncode == 0, err
        payloads.append(json.loads(out))
    for payload in payloads:
        assert payload["value"] == pytest.approx(PINS["yazy"], abs=TOL)
        assert payload["blocks_total"] == 2048
    computed = [p["blocks_computed"] for p in payloads]
    print(f"blocks computed by each process: {computed}")
    assert sum(computed) == 2048, "a block was computed twice, or not at all"

    status = answer(memo_solver(store, "status", "--json"))["rule_sets"]["yazy"]
    assert (status["blocks_done"], status["claims_held"]) == (2048, 0)


@pytest.mark.slow
def test_a_killed_precompute_is_resumed_by_the_next_one(tmp_path: Path) -> None:
    store = tmp_path / "store.sqlite3"
    answer(memo_solver(store, "status", "--json"))  # the file first: no race on the schema
    victim = start(store, "precompute", "--rules", "yahtzee", "--json")
    deadline = time.monotonic() + 60
    while victim.poll() is None and time.monotonic() < deadline:  # until some blocks are in
        if answer(memo_solver(store, "status", "--json"))["rule_sets"]["yahtzee"]["blocks_done"]:
            break
        time.sleep(0.2)
    assert victim.poll() is None, "the solve finished before it could be killed"
    victim.send_signal(signal.SIGKILL)
    victim.communicate(timeout=TIMEOUT_S)
    assert victim.returncode == -signal.SIGKILL

    left = answer(memo_solver(store, "status", "--json"))["rule_sets"]["yahtzee"]
    print(f"the killed process left {left['blocks_done']} blocks and {left['claims_held']} claims")

    began = time.monotonic()
    payload = answer(memo_solver(store, "precompute", "--rules", "yahtzee", "--json"))
    took = time.monotonic() - began
    print(f"resuming took {took:.2f} s ({payload['seconds']} s solving)")

    assert payload["value"] == pytest.approx(PINS["yahtzee"], abs=TOL)
    assert payload["blocks_already_stored"] > 0
    assert payload["blocks_already_stored"] == left["blocks_done"]
    assert payload["blocks_already_stored"] + payload["blocks_computed"] == 8192
    # The killed holder's claims are free at once (its pid is gone: test_store.py checks
    # that); how long the rest takes is compute, measured by scripts/bench/bench_precompute.py.

    status = answer(memo_solver(store, "status", "--json"))["rule_sets"]["yahtzee"]
    assert (status["blocks_done"], status["claims_held"]) == (8192, 0)


def status_store(env: dict[str, str], *args: str, after: tuple[str, ...] = ()) -> str:
    """Which store ``status`` reads, given the environment and the options (before the
    command, and ``after`` it)."""
    result = subprocess.run(
        [str(CLI), *args, "status", *after, "--json"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=env,
        check=False,
    )
    return str(answer(result)["store"])


def test_the_store_is_in_the_cache_folder_unless_told_otherwise(tmp_path: Path) -> None:
    env = {**ENV, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    assert status_store(env) == str(tmp_path / "cache" / "memo-solver" / "store.sqlite3")
    env["MEMO_SOLVER_STORE"] = str(tmp_path / "from-env.sqlite3")
    assert status_store(env) == str(tmp_path / "from-env.sqlite3")
    option = str(tmp_path / "from-option.sqlite3")
    assert status_store(env, "--store", option) == option


def on_a_terminal(*argv: str, columns: int = 120) -> str:
    """Run a command with a pseudo-terminal as its stdout and stderr, as a person would see it."""
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    process = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower, env=ENV
    )
    os.close(follower)
    seen = bytearray()
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the process closed its end
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    assert process.wait(timeout=TIMEOUT_S) == 0, seen.decode(errors="replace")
    return seen.decode(errors="replace")


def test_precompute_on_a_terminal_shows_blocks_done_rate_and_time_left(tmp_path: Path) -> None:
    screen = on_a_terminal(
        str(CLI), "--store", str(tmp_path / "s.sqlite3"), "precompute", "--rules", "yahtzee-lower"
    )
    redraws = [part for part in screen.split("\r") if "block/s" in part]
    assert redraws[0].startswith("yahtzee-lower:   0%")
    # blocks done of total, [time spent<time left, rate]
    assert re.fullmatch(
        r"yahtzee-lower: 100%\|█+\| 128/128 \[\d\d:\d\d<\d\d:\d\d, [\d.]+block/s\]", redraws[-1]
    )
    assert "solved, start value 139.9712924424" in screen


# --- options: on either side of the command, one resolution -----------------------------------

# Each command with the arguments it requires, for parsing alone.
COMMANDS: dict[str, list[str]] = {
    "rules": [],
    "advise": ["start"],
    "value": [],
    "precompute": [],
    "play": [],
    "status": [],
    "prune": [],
    "compile": [],
    "export": ["--to", "x.msgpack"],
    "import": ["--from", "x.msgpack"],
    "stats": [],
    "simulate": [],
    "review": ["game.json"],
    "export-table": ["--out", "t.npz"],
    "serve": [],
    "worker": [],
}


def parsed(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def command_parsers() -> dict[str, argparse.ArgumentParser]:
    (commands,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(commands.choices)


def test_every_command_is_checked_below() -> None:
    assert set(command_parsers()) == set(COMMANDS)


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize(
    ("option", "before", "after", "dest"),
    [
        ("--store", "a.db", "b.db", "store"),
        ("--redis", "redis://before/1", "redis://after/2", "redis"),
    ],
)
def test_store_options_go_on_either_side_and_the_commands_own_wins(
    command: str, option: str, before: str, after: str, dest: str
) -> None:
    def value(*argv: str) -> object:
        found = getattr(parsed(*argv), dest)
        return str(found) if found is not None else None

    required = COMMANDS[command]
    assert value(option, before, command, *required) == before
    assert value(command, *required, option, after) == after
    assert value(option, before, command, *required, option, after) == after
    assert value(command, *required) is None


@pytest.mark.parametrize("command", list(COMMANDS))
def test_verbose_goes_on_either_side(command: str) -> None:
    required = COMMANDS[command]
    assert parsed("-v", command, *required).verbose
    assert parsed(command, *required, "-v").verbose
    assert parsed(command, *required, "--verbose").verbose
    assert not parsed(command, *required).verbose


@pytest.mark.parametrize(
    "command",
    [c for c, parser in command_parsers().items() if "--rules" in parser._option_string_actions],
)
def test_every_command_refuses_rules_and_a_rules_file_together(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """One rule set per command: the file never silently wins over the name."""
    with pytest.raises(SystemExit) as refused:
        parsed(command, *COMMANDS[command], "--rules", "yatzy", "--rules-file", "house.json")
    assert refused.value.code == 2
    assert "--rules-file: not allowed with argument --rules" in capsys.readouterr().err


def test_advise_refuses_the_default_rules_named_beside_a_rules_file(tmp_path: Path) -> None:
    """``--rules yahtzee`` is typed, not the default: refused like any other name."""
    tiny = tmp_path / "tiny.json"
    tiny.write_text(json.dumps(TINY_RULES))
    both = memo_solver(
        tmp_path / "s.db", "advise", "--rules", "yahtzee", "--rules-file", str(tiny), "start"
    )
    assert "--rules-file: not allowed with argument --rules" in one_error_line(both)


@pytest.mark.parametrize("command", [["value"], ["precompute"], ["status"], ["advise", "start"]])
def test_a_rules_file_under_a_built_ins_name_with_other_rules_is_refused(
    tmp_path: Path, command: list[str]
) -> None:
    """As the service refuses to register it (409): its answers would print as yahtzee's."""
    impostor = tmp_path / "house.json"
    impostor.write_text(json.dumps(TINY_RULES | {"name": "yahtzee"}))
    line = one_error_line(memo_solver(tmp_path / "s.db", *command, "--rules-file", str(impostor)))
    assert line == (
        f"memo-solver: error: --rules-file: {impostor} names its rule set yahtzee, a built-in "
        "rule set with other rules; give it a name of its own"
    )


def test_a_rules_file_that_is_a_built_in_copied_is_that_rule_set(tmp_path: Path) -> None:
    copy = tmp_path / "yahtzee-lower.json"
    copy.write_text(memo_solver(tmp_path / "s.db", "rules", "show", "yahtzee-lower").stdout)
    value = answer(memo_solver(tmp_path / "s.db", "value", "--rules-file", str(copy), "--json"))
    assert value["value"] == pytest.approx(PINS["yahtzee-lower"], abs=TOL)


@pytest.mark.parametrize("command", [c for c in COMMANDS if c != "worker"])
def test_json_goes_on_either_side(command: str) -> None:
    required = COMMANDS[command]
    assert parsed("--store", "s.db", "--json", command, *required).json
    assert parsed(command, *required, "--json").json
    assert not parsed(command, *required).json


def test_a_worker_refuses_json_before_it_as_after_it(capsys: pytest.CaptureFixture[str]) -> None:
    """A worker prints no answer to put in JSON: ``worker --json`` is an unknown option."""
    assert memo_cli.main(["--redis", "redis://127.0.0.1:1/0", "--json", "worker"]) == 2
    assert capsys.readouterr().err == (
        "memo-solver: error: --json: a worker prints no answer, only its log\n"
    )


def test_the_store_named_after_the_command_is_the_one_used(tmp_path: Path) -> None:
    """``--store`` after the command, where people type it; the cache folder stays empty."""
    env = {**ENV, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    store = tmp_path / "after.sqlite3"
    argv = ["value", "--rules", "yazy", "open=yazy", "--store", str(store), "--json"]
    value = subprocess.run(
        [str(CLI), *argv], capture_output=True, text=True, timeout=TIMEOUT_S, env=env, check=False
    )
    assert answer(value)["value"] == pytest.approx(50 * 2783176 / 60466176)
    assert store.is_file()
    assert not (tmp_path / "cache").exists()
    other = str(tmp_path / "before.sqlite3")
    assert status_store(env, "--store", other) == other
    assert status_store(env, "--store", other, after=("--store", str(store))) == str(store)


def test_verbose_after_the_command_logs(tmp_path: Path) -> None:
    result = memo_solver(tmp_path / "s.db", "status", "-v")

    assert result.returncode == 0, result.stderr
    assert " DEBUG " in result.stderr


# --- options of one game only -----------------------------------------------------------------

OTHER_GAMES_OPTIONS = [
    # (command and its arguments, the option of the other game)
    (["precompute", "--game", "dice-of-doom"], ["--rules", "yahtzee-lower"]),
    (["export", "--game", "dice-of-doom", "--to", "x.msgpack"], ["--rules", "yazy"]),
    (["import", "--game", "dice-of-doom", "--from", "x.msgpack"], ["--rules", "yazy"]),
    (["precompute"], ["--size", "2"]),
    (["export", "--to", "x.msgpack"], ["--size", "2"]),
    (["advise", "--game", "dice-of-doom", "a-3 b-3 / a-2 b-2"], ["--rules", "yazy"]),
    (["advise", "start"], ["--to-move", "b"]),
    (["advise", "start"], ["--captured", "1"]),
    (["advise", "start"], ["--limit", "10"]),
    (["stats", "--game", "dice-of-doom", "a-3 b-3 / a-2 b-2"], ["--threshold", "1"]),
    (["stats", "--game", "dice-of-doom", "a-3 b-3 / a-2 b-2"], ["--plot", "p.png"]),
    (["stats"], ["--limit", "10"]),
    (["play", "--game", "dice-of-doom"], ["--rules", "yazy"]),
    (["play"], ["--size", "3"]),
    (["play"], ["--board", "a-3 b-3 / a-2 b-2"]),
    (["play"], ["--human", "b"]),
    (["play"], ["--seed", "1"]),
    (["play"], ["--limit", "10"]),
]


@pytest.mark.parametrize(
    ("argv", "option"), OTHER_GAMES_OPTIONS, ids=[" ".join(a + o) for a, o in OTHER_GAMES_OPTIONS]
)
def test_an_option_of_the_other_game_is_refused(
    argv: list[str], option: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        parsed(*argv, *option)
    assert stopped.value.code == 2
    game = "yahtzee" if "dice-of-doom" in argv else "dice-of-doom"
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"memo-solver: error: {option[0]} is for --game {game}, not ")


def test_a_precompute_of_dice_of_doom_with_rules_is_refused_at_once(tmp_path: Path) -> None:
    result = memo_solver(
        tmp_path / "s.db", "precompute", "--game", "dice-of-doom", "--rules", "yahtzee-lower"
    )
    line = one_error_line(result)
    assert "--rules is for --game yahtzee, not dice-of-doom (which takes --size)" in line
    assert not (tmp_path / "s.db").exists()


def test_options_of_the_chosen_game_keep_their_defaults() -> None:
    doom = parsed("precompute", "--game", "dice-of-doom")
    assert (doom.size, doom.rules) == (3, "yahtzee")
    assert parsed("precompute", "--game", "dice-of-doom", "--size", "2").size == 2
    assert parsed("precompute", "--rules", "yazy").rules == "yazy"
    played = parsed("play")
    assert (played.size, played.board, played.human, played.seed) == (2, None, "a", None)
    stats = parsed("stats", "--threshold", "5", "--threshold", "9")
    assert (stats.threshold, stats.plot, stats.to_move, stats.limit) == (
        [5, 9],
        None,
        "a",
        2_000_000,
    )
    assert parsed("stats").threshold == []
    advised = parsed("advise", "--game", "dice-of-doom", "x", "--to-move", "b", "--captured", "2")
    assert (advised.to_move, advised.captured, advised.rules) == ("b", 2, "yahtzee")


# --- help and version -------------------------------------------------------------------------


def options_with_a_value(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The options a user may leave out that take a value: each has a default to show."""
    return [
        action
        for action in parser._actions
        if action.option_strings
        and action.nargs != 0
        and not action.required
        and action.help != argparse.SUPPRESS
    ]


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_option_shows_its_default_in_the_help(command: str) -> None:
    parser = command_parsers()[command]
    text = " ".join(parser.format_help().split())
    for action in options_with_a_value(parser):
        shown = " ".join(parser._get_formatter()._expand_help(action).split())
        assert "default: " in shown, action.option_strings
        assert shown in text


def test_every_worker_option_shows_its_default_in_its_own_help() -> None:
    parser = worker_parser()
    for action in options_with_a_value(parser):
        assert "default: " in str(action.help), action.option_strings


def test_the_helps_show_the_defaults_people_asked_about() -> None:
    def help_of(command: str) -> str:
        return " ".join(command_parsers()[command].format_help().split())

    assert "from the --out file's extension" in help_of("export-table")
    assert "strategy to play (default: optimal)" in help_of("simulate")
    serve = help_of("serve")
    for shown in ("(default: 127.0.0.1)", "(default: 10.0)", "(default: 256)"):
        assert shown in serve


def test_version_prints_the_package_version() -> None:
    result = subprocess.run(
        [str(CLI), "--version"], capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"memo-solver {version('memo-solver')}\n"
    assert result.stdout == "memo-solver 0.1.0\n"


_SHELL = ("&", "|", "&&", ">")
"""What ends a command on a shell line: the shell's words, not the command's."""


def example_command_lines() -> list[list[str]]:
    """The arguments of every ``memo-solver`` and ``python -m worker`` command shown in the
    help's examples and in the README's console sessions, the program name first."""
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    epilog = build_parser().epilog or ""
    shown = [line for line in epilog.splitlines() if "memo-solver " in line]
    shown += [line[2:] for line in readme.splitlines() if line.startswith("$ ")]
    shown = [line for line in shown if "memo-solver " in line or "-m worker" in line]
    commands = []
    for line in shown:
        words = shlex.split(line, comments=True)
        for i, word in enumerate(words):
            program = word in ("memo-solver", ".venv/bin/memo-solver")
            if program or words[i - 1 : i + 1] == ["-m", "worker"]:
                rest = list(itertools.takewhile(lambda w: w not in _SHELL, words[i:]))
                commands.append(["worker" if word == "worker" else "memo-solver", *rest[1:]])
    return commands


EXAMPLES = example_command_lines()


@pytest.mark.parametrize("argv", EXAMPLES, ids=[" ".join(a) for a in EXAMPLES])
def test_every_example_shown_still_parses(argv: list[str]) -> None:
    parser = build_parser() if argv[0] == "memo-solver" else worker_parser()
    parser.parse_args(argv[1:])


def test_the_examples_cover_the_help_and_the_readme() -> None:
    assert len([a for a in EXAMPLES if a[0] == "worker"]) >= 3
    assert ["memo-solver", "value", "--rules", "yatzy"] in EXAMPLES
    assert len(EXAMPLES) > 40


# --- store trouble: exit status 75 (retry later), never 2 (fix the command) -------------------


def on_redis(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``memo-solver --redis URL ARGS`` (no ``--store``: it would win over ``--redis``)."""
    return subprocess.run(
        [str(CLI), "--redis", url, *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=ENV,
        check=False,
    )


def test_help_documents_the_exit_statuses(tmp_path: Path) -> None:
    words = " ".join(memo_solver(tmp_path / "s.sqlite3", "--help").stdout.split())
    assert "2 bad input (fix the command)" in words
    assert "75 the store failed: unreachable, refused the write, full, or locked" in words


@pytest.mark.parametrize(
    "args", [["value", "--rules", "yahtzee-lower"], ["status"], ["precompute", "--rules", "yazy"]]
)
def test_a_redis_with_nothing_listening_exits_75_in_one_line(args: list[str]) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    line = one_error_line(on_redis(url, *args), TEMPFAIL)
    assert line.startswith(f"memo-solver: error: cannot reach Redis at {url}")


def test_bad_input_is_still_2_while_the_store_is_down() -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    assert "upper total 7" in one_error_line(on_redis(url, "value", "upper=7"))


def test_a_full_sqlite_store_exits_75_in_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """In process: SQLite's page limit is a setting of each connection the command opens.
    Before the error, the one line that says what the command set out to solve."""
    path = anyio.run(store_file, tmp_path / "memo.sqlite")
    on_every_connection(monkeypatch, FULL)
    status = memo_cli.main(["--store", str(path), "value", "--rules", "yahtzee-lower"])
    lines = capsys.readouterr().err.splitlines()
    assert status == TEMPFAIL
    assert lines == [lines[0], lines[-1]], lines
    assert lines[0].startswith("solving yahtzee-lower: 128 blocks to compute")
    assert lines[-1].startswith(f"memo-solver: error: the store {path} is full")


@pytest.mark.parametrize("mode", ["auto", "no"])
@pytest.mark.parametrize("args", [["status"], ["value", "--rules", "yahtzee-lower"]])
def test_a_redis_database_the_server_does_not_have_is_bad_input(
    redis_url: str, mode: str, args: list[str]
) -> None:
    """A server has 16 databases unless configured otherwise: /99999 is a typo to fix
    (2), not an outage to wait out (75)."""
    url = redis_url.removesuffix("/0") + "/99999"
    line = one_error_line(on_redis(url, "--redis-cluster", mode, *args))
    assert "names database 99999, which the server refuses (DB index is out of range)" in line


@pytest.mark.parametrize(
    "args", [["value", "--rules", "yahtzee-lower"], ["precompute", "--rules", "yahtzee-lower"]]
)
def test_a_redis_at_maxmemory_exits_75_saying_it_refused_the_write(
    fresh_redis: RedisServer, args: list[str]
) -> None:
    """``value`` claims blocks through the store; ``precompute`` queues a job on Redis
    directly: both say what Redis answered, not that it cannot be reached."""
    with fresh_redis.client() as client, redis_at_maxmemory(client):
        line = one_error_line(on_redis(fresh_redis.url, *args), TEMPFAIL)
    assert line.startswith(f"memo-solver: error: Redis at {fresh_redis.url} refused the write: OOM")
    assert "cannot reach" not in line


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--workers", "0", "must be 1 or more, got 0"),
        ("--header-timeout", "0", "must be more than 0, got 0"),
        ("--deadline", "nan", "must be more than 0, got nan"),
        ("--cold-budget", "-1", "must be 1 or more, got -1"),
        ("--need-budget", "0", "must be 1 or more, got 0"),
        ("--rule-engines", "0", "must be 1 or more, got 0"),
        ("--cache-mb", "lots", "expected a whole number, got 'lots'"),
        ("--port", "99999", "must be 1 to 65535, got 99999"),
    ],
)
def test_serve_refuses_a_bad_value_naming_its_option_alone(
    tmp_path: Path, option: str, value: str, says: str
) -> None:
    line = one_error_line(memo_solver(tmp_path / "s.sqlite3", "serve", option, value))
    assert line.startswith(f"memo-solver: error: argument {option}: {says} (see ")
    assert line.count("--") == 2, line  # the option and the help's


@pytest.mark.full  # hardening 4's end to end: run with -m full (the suite's growth budget)
def test_serve_on_a_port_in_use_says_so_before_serving(tmp_path: Path) -> None:
    """Status 69 (EX_UNAVAILABLE): the command is right, the port is another's."""
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        for workers in ("1", "2"):
            result = memo_solver(
                tmp_path / "s.sqlite3", "serve", "--port", str(port), "--workers", workers
            )
            line = one_error_line(result, EXIT_UNAVAILABLE)
            assert line == (
                f"memo-solver: error: cannot listen on 127.0.0.1:{port}: Address already in use "
                "(choose another --port)"
            )
            assert result.stdout == ""


def test_serve_on_a_host_of_another_machine_is_bad_input(tmp_path: Path) -> None:
    """192.0.2.1 is TEST-NET-1 (RFC 5737): documentation's, never a machine's own."""
    result = memo_solver(tmp_path / "s.sqlite3", "serve", "--host", "192.0.2.1")
    assert one_error_line(result).startswith(
        "memo-solver: error: --host 192.0.2.1: not an address of this machine"
    )
    assert result.stdout == ""


@pytest.mark.parametrize("url", ["redis://:s3cret@[bad", "redis://:s3cret@host:port/0"])
def test_an_unreadable_redis_url_is_one_line_and_keeps_its_password(
    tmp_path: Path, url: str
) -> None:
    result = subprocess.run(
        [str(CLI), "--redis", url, "status"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env={**os.environ, "HOME": str(tmp_path)},
        check=False,
    )
    line = one_error_line(result)
    assert "bad Redis URL" in line
    assert "s3cret" not in result.stderr
