"""The command line is a table: each command registered once (name, options, handler), and
a game family's commands come with a module named for the family, found by that name
(``memo_solver/cli/games/<family>.py``), so that a new family edits no generic CLI file."""

from __future__ import annotations

import argparse
import ast
import sys
import types
from pathlib import Path

import pytest

from memo_solver.cli import main as memo_cli
from memo_solver.cli.command import Command, FamilyCommands
from memo_solver.cli.common import Output, UsageError
from memo_solver.games import registry
from memo_solver.games.entry import GameFamily, Parameter

USAGE = 2


def _lucky_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--times", type=int, default=1, help="how many sevens to add up")


def _lucky(args: argparse.Namespace, out: Output) -> int:
    if args.times < 1:
        raise UsageError(f"--times must be 1 or more, got {args.times}")
    out.emit({"number": 7 * args.times}, str(7 * args.times))
    return 0


TOY = GameFamily(
    "toy",
    Parameter("--toy-size", "the toy's size", 1, lambda size: f"toy-{size}", type=int),
    entries=list,
)
"""A family with no games, only a command of its own: what the command line sees of it."""


@pytest.fixture
def toy_family(monkeypatch: pytest.MonkeyPatch) -> None:
    """The toy family registered in this process: its registry line, and its command-line
    module where the command line looks for a family's (no file written, none edited)."""
    module = types.ModuleType("memo_solver.cli.games.toy")
    lucky = Command("lucky-number", "print the toy's lucky number", _lucky_options, _lucky)
    module.CLI = FamilyCommands(commands=(lucky,))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr(registry, "FAMILIES", (*registry.FAMILIES, TOY))


def test_a_familys_own_command_is_listed_and_runs(
    toy_family: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert memo_cli.main(["--help"]) == 0
    assert "lucky-number" in capsys.readouterr().out
    assert memo_cli.main(["lucky-number", "--help"]) == 0
    own_help = " ".join(capsys.readouterr().out.split())
    assert "print the toy's lucky number" in own_help
    assert "--times TIMES how many sevens to add up (default: 1)" in own_help

    assert memo_cli.main(["lucky-number"]) == 0
    assert capsys.readouterr().out == "7\n"
    assert memo_cli.main(["lucky-number", "--times", "3", "--json"]) == 0
    assert capsys.readouterr().out == '{"number": 21}\n'


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["lucky-number", "--times", "0"], "memo-solver: error: --times must be 1 or more, got 0"),
        (
            ["lucky-number", "--times", "x"],
            "memo-solver: error: argument --times: invalid int value: 'x' "
            "(see 'memo-solver lucky-number --help')",
        ),
    ],
)
def test_bad_input_to_a_familys_command_is_one_line_and_exit_2(
    toy_family: None, capsys: pytest.CaptureFixture[str], argv: list[str], line: str
) -> None:
    assert memo_cli.main(argv) == USAGE
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", f"{line}\n")


def test_a_familys_command_comes_only_with_its_registration(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert memo_cli.main(["--help"]) == 0
    assert "lucky-number" not in capsys.readouterr().out
    assert memo_cli.main(["lucky-number"]) == USAGE
    assert "invalid choice: 'lucky-number'" in capsys.readouterr().err


def test_a_familys_side_of_the_shared_commands_comes_with_its_registration(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Dice of Doom's options of ``advise`` are its module's, found by the family's name:
    without the family in the registry, ``advise`` offers neither the game nor its options."""
    assert memo_cli.main(["advise", "--help"]) == 0
    assert "--to-move" in capsys.readouterr().out

    monkeypatch.setattr(registry, "FAMILIES", registry.FAMILIES[:1])
    assert memo_cli.main(["advise", "--help"]) == 0
    words = capsys.readouterr().out
    assert "--to-move" not in words
    assert "dice-of-doom" not in words
    assert memo_cli.main(["advise", "--game", "dice-of-doom", "a-3 b-3 / a-2 b-2"]) == USAGE
    assert "invalid choice: 'dice-of-doom'" in capsys.readouterr().err


def _names_a_command(node: ast.expr) -> bool:
    """``args.command``, ``args.game`` or a ``command`` variable: what an if-chain of
    commands compares."""
    if isinstance(node, ast.Attribute):
        return node.attr in {"command", "game"}
    return isinstance(node, ast.Name) and node.id == "command"


def test_the_entry_chooses_no_command_by_its_name() -> None:
    """The entry runs the command the table names: no comparison of the command's or the
    game's name is left in ``main.py`` (each command's handler is its registration's)."""
    source = Path(memo_cli.__file__).read_text(encoding="utf-8")
    comparisons = [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Compare)
        and any(_names_a_command(o) for o in (node.left, *node.comparators))
    ]
    assert comparisons == []
