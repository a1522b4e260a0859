"""The README's shell examples, run for real: what it shows is what the commands print.

``scripts/tools/readme_examples.py`` runs every console block in a sandbox (a solved ``yahtzee``
store, a real redis-server, workers and ``serve`` where a block asks for them) and compares
line by line, ``...`` standing for text that changes from run to run. When this fails,
``.venv/bin/python scripts/tools/readme_examples.py --write`` rewrites the drifted output.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import readme_examples

ROOT = Path(__file__).resolve().parent.parent


def test_ellipsis_stands_for_text_inside_a_line_and_for_whole_lines() -> None:
    assert readme_examples.matches(["store: ... (4.0 MB)"], ["store: /tmp/x.db (4.0 MB)"])
    assert readme_examples.matches(["a", "...", "z"], ["a", "b", "c", "z"])
    assert readme_examples.matches(["a", "...", "z"], ["a", "z"])
    assert not readme_examples.matches(["a", "z"], ["a", "b", "z"])
    assert not readme_examples.matches(["value 1.0"], ["value 1.5"])


def test_console_blocks_parse_into_commands_with_their_output() -> None:
    text = [
        "<!-- readme: workers=2 server -->",
        "```console",
        "$ memo-solver value",
        "254.5877287345",
        "$ curl -s localhost:8000/readyz \\",
        "    -H 'x: y'",
        '{"status":"ready"}',
        "```",
    ]
    (block,) = readme_examples.parse(text)
    assert block.option("workers") == "2"
    assert block.option("server") == ""
    assert block.option("skip") is None
    assert [s.command for s in block.steps] == [
        "memo-solver value",
        "curl -s localhost:8000/readyz -H 'x: y'",
    ]
    assert [s.expected for s in block.steps] == [["254.5877287345"], ['{"status":"ready"}']]


@pytest.mark.slow
def test_every_readme_example_prints_what_the_readme_shows() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").split("\n")
    drifts = [
        f"line {d.step.first_line}: $ {d.step.command}\n  README: {d.step.expected}\n"
        f"  prints: {d.actual}"
        for d in readme_examples.run_readme(lines)
    ]
    assert not drifts, "\n".join(drifts)
