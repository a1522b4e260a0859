"""The suite's markers do what the README says: ``-m 'not slow'`` is the quick loop, ``-m
slow`` the slow tests without the ``full`` ones (over a CPU minute and a half each), ``-m
full`` those.

Checked on tests/test_stats.py, which has tests of all three kinds, by collecting it in a
pytest of its own (``--collect-only``: nothing runs; five start-ups, about 10 s in all).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
MIXED = "test_stats.py"
pytestmark = pytest.mark.slow


def collected(*args: str) -> set[str]:
    """The test ids a pytest run of tests/test_stats.py would run with ``args``."""
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
        "quick": collected(path, "-m", "not slow"),
        "slow": collected(path, "-m", "slow"),
        "full": collected(path, "-m", "full"),
        "slow or full": collected(path, "-m", "slow or full"),
    }


def test_full_tests_run_only_when_the_expression_names_them(kinds: dict[str, set[str]]) -> None:
    full, slow = kinds["full"], kinds["slow"]
    assert full, "tests/test_stats.py has full tests: the check below would prove nothing"
    assert slow, "and slow ones that are not full"
    assert not full & slow
    assert not full & kinds["all"]
    assert not full & kinds["quick"]
    assert kinds["slow or full"] == slow | full


def test_the_quick_loop_leaves_out_every_slow_test(kinds: dict[str, set[str]]) -> None:
    assert kinds["quick"]
    assert kinds["quick"] | kinds["slow"] == kinds["all"]
    assert not kinds["quick"] & kinds["slow"]
