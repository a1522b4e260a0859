"""The installed package carries the data files the code reads: what the Docker image and
any `pip install .` get, where an editable checkout would hide a missing file."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DATA = ["memo_solver/service/web", "memo_solver/games/yahtzee/rules/rule_sets"]
_NOT_SOURCES = (".git", ".venv", "build", "*.egg-info", "__pycache__", ".*_cache", "node_modules")


@pytest.mark.slow
def test_the_wheel_holds_the_web_page_and_the_built_in_rule_sets(tmp_path: Path) -> None:
    # From a copy of the sources: a build folder left in the checkout would hide a file
    # the package configuration leaves out.
    source = tmp_path / "source"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(*_NOT_SOURCES))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
         "-w", str(tmp_path), str(source)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    (wheel,) = tmp_path.glob("memo_solver-*.whl")
    packed = set(zipfile.ZipFile(wheel).namelist())
    for folder in DATA:
        files = sorted(p.relative_to(REPO).as_posix() for p in (REPO / folder).iterdir())
        assert files, folder
        missing = [f for f in files if f.endswith((".json", ".js", ".html", ".css"))]
        assert [f for f in missing if f not in packed] == [], folder
