"""The suite's markers do what the README says: ``-m 'not slow'`` leaves out the slow tests,
``-m slow`` runs them without the ``full`` ones (over a CPU minute and a half each), ``-m
full`` those; ``-m quick`` is the quick loop: the pure solver and parsing tests.

Checked on tests/test_stats.py, which has tests of all three kinds and none of the quick
files, and on tests/test_engine.py, a quick file with slow tests and tests on every store, by
collecting them in a pytest of their own (``--collect-only``: nothing runs; eight start-ups,
about 20 s in all).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
MIXED = "test_stats.py"
QUICK = "test_engine.py"
pytestmark = pytest.mark.slow


def collected(*args: str) -> set[str]:
    """The test ids a pytest run would run with ``args``."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
        cwd=TESTS.parent,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode in (0, 5), done.stdout + done.stderr  # 5: nothing selected
    return {line for line in done.stdout.splitlines() if "::" in line}


@pytest.fixture(scope="module")
def kinds() -> dict[str, set[str]]:
    path = f"tests/{MIXED}"
    return {
        "all": collected(path),
        "not slow": collected(path, "-m", "not slow"),
        "slow": collected(path, "-m", "slow"),
        "full": collected(path, "-m", "full"),
        "slow or full": collected(path, "-m", "slow or full"),
        "quick": collected(path, "-m", "quick"),
    }


@pytest.fixture(scope="module")
def engine_kinds() -> dict[str, set[str]]:
    path = f"tests/{QUICK}"
    return {
        "not slow": collected(path, "-m", "not slow"),
        "slow": collected(path, "-m", "slow"),
        "quick": collected(path, "-m", "quick"),
    }


def test_full_tests_run_only_when_the_expression_names_them(kinds: dict[str, set[str]]) -> None:
    full, slow = kinds["full"], kinds["slow"]
    assert full, "tests/test_stats.py has full tests: the check below would prove nothing"
    assert slow, "and slow ones that are not full"
    assert not full & slow
    assert not full & kinds["all"]
    assert not full & kinds["not slow"]
    assert kinds["slow or full"] == slow | full


def test_not_slow_leaves_out_every_slow_test(kinds: dict[str, set[str]]) -> None:
    assert kinds["not slow"]
    assert kinds["not slow"] | kinds["slow"] == kinds["all"]
    assert not kinds["not slow"] & kinds["slow"]


def test_the_quick_loop_is_the_quick_files_in_process_on_the_memory_store(
    kinds: dict[str, set[str]], engine_kinds: dict[str, set[str]]
) -> None:
    assert not kinds["quick"], f"{MIXED} is not a quick file"
    quick = engine_kinds["quick"]
    assert quick
    assert engine_kinds["slow"], f"{QUICK} has slow tests: the check below would prove nothing"
    assert quick < engine_kinds["not slow"]
    on_stores = {test for test in engine_kinds["not slow"] if "[memory" in test}
    assert on_stores, f"{QUICK} has tests on every store: the check below would prove nothing"
    assert on_stores <= quick
    assert not {test for test in quick if "[sqlite" in test or "[redis" in test}
