"""The help and the version: every default shown, every example shown still parses."""

from __future__ import annotations

import argparse
import itertools
import shlex
import subprocess
from importlib.metadata import version
from pathlib import Path

import pytest
from support.cli_support import (
    CLI,
    COMMANDS,
    TIMEOUT_S,
    command_parsers,
)

from memo_solver.cli.parser import build_parser
from memo_solver.cli.worker_options import build_parser as worker_parser


def test_the_console_script_is_installed() -> None:
    assert CLI.is_file(), f"{CLI} is missing: is the package installed in this environment?"


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
