"""Rule sets on the command line, as a real process: the built-ins listed and shown, a
rule-set file wherever ``--rules`` goes, and the two never together.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli_support import (
    COMMANDS,
    PINS,
    TINY_RULES,
    TOL,
    answer,
    command_parsers,
    memo_solver,
    one_error_line,
    parsed,
)

from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.rules.rule_file import read_rule_file

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
