"""The suite's markers do what the README says: ``-m 'not slow'`` leaves out the slow tests,
``-m slow`` runs them without the ``full`` ones (over a CPU minute and a half each), ``-m
full`` those; ``-m quick`` is the quick loop: the pure solver and parsing tests.

Checked on tests/test_stats.py, which has tests of all three kinds and none of the quick
files, and on tests/test_engine.py, a quick file with slow tests and tests on every store, by
collecting them in pytests of their own (``--collect-only``: nothing runs; one start-up per
expression, all started at once, about 15 CPU s). And every test has an id of its own:
pytest-xdist hands tests to its workers by id (checked on tests/test_api_fuzz.py too, whose
tests come from schemathesis, one per operation of the API).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
MIXED = "test_stats.py"
QUICK = "test_engine.py"
FUZZ = "test_api_fuzz.py"
EXPRESSIONS = ["", "not slow", "slow", "full", "slow or full", "quick"]
"""The ``-m`` expressions collected ("": none, as a bare ``pytest`` runs)."""
pytestmark = pytest.mark.slow


def start_collecting(expression: str) -> subprocess.Popen[str]:
    """A pytest collecting (nothing runs) the mixed and the quick file with ``-m expression``;
    with none, the fuzz too (its collection alone takes two CPU seconds)."""
    names = [MIXED, QUICK] if expression else [MIXED, QUICK, FUZZ]
    marks = ["-m", expression] if expression else []
    return subprocess.Popen(
        [
            sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
            *marks, *(f"tests/{name}" for name in names),
        ],
        cwd=TESTS.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def collected_ids(process: subprocess.Popen[str]) -> list[str]:
    """The test ids it would run, in order."""
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode in (0, 5), stdout + stderr  # 5: nothing selected
    return [line for line in stdout.splitlines() if "::" in line]


@pytest.fixture(scope="module")
def ids() -> dict[str, list[str]]:
    """The ids each of :data:`EXPRESSIONS` selects, by expression ("all" for none)."""
    started = {expression: start_collecting(expression) for expression in EXPRESSIONS}
    try:
        return {expression or "all": collected_ids(p) for expression, p in started.items()}
    finally:
        for process in started.values():
            if process.poll() is None:
                process.kill()
                process.communicate()


def of_file(ids: list[str], name: str) -> set[str]:
    return {test for test in ids if test.startswith(f"tests/{name}::")}


@pytest.fixture(scope="module")
def kinds(ids: dict[str, list[str]]) -> dict[str, set[str]]:
    return {expression: of_file(found, MIXED) for expression, found in ids.items()}


@pytest.fixture(scope="module")
def engine_kinds(ids: dict[str, list[str]]) -> dict[str, set[str]]:
    return {
        expression: of_file(ids[expression], QUICK) for expression in ("not slow", "slow", "quick")
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


def test_every_test_has_an_id_of_its_own(ids: dict[str, list[str]]) -> None:
    everything = ids["all"]
    assert len(set(everything)) == len(everything), sorted(
        test for test in set(everything) if everything.count(test) > 1
    )
    fuzzed = [test for test in everything if test.startswith(f"tests/{FUZZ}::test_no_500")]
    assert len(fuzzed) > 1, f"{FUZZ} fuzzes every operation of the API: {fuzzed}"
