"""The layers hold: no import cycle at all, and the import-linter contracts pass.

Surfaces (worker, CLI, service, jobs) -> games -> stores -> core, never upwards; the game
families know nothing of each other; inside the Yahtzee family, rules < solve < analysis <
advice < its registration (the contracts in pyproject.toml). Beyond them, no two
modules import each other, even through others and even inside a function: a cycle is how
a layer starts to know the shapes of the one above it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("memo_solver", "worker")


def build_graph(*, external: bool) -> grimp.ImportGraph:
    """The imports of the packages, whatever their place (top, function,
    ``TYPE_CHECKING``); with ``external``, their imports of other packages too."""
    if str(REPO) not in sys.path:  # ``worker`` is a folder of the checkout, not installed
        sys.path.insert(0, str(REPO))
    return grimp.build_graph(*PACKAGES, include_external_packages=external)


def import_graph() -> dict[str, set[str]]:
    """Every module of the packages and the modules of the packages it imports."""
    graph = build_graph(external=False)
    return {
        module: set(graph.find_modules_directly_imported_by(module)) for module in graph.modules
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module, and the modules that
    import themselves (Tarjan's algorithm, iterative: no recursion limit to meet)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[module] = min(low[module], index[successor])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[module])
                if low[module] == index[module]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == module:
                            break
                    if len(component) > 1 or module in graph[module]:
                        found.append(sorted(component))
    return found


def describe(component: list[str], graph: dict[str, set[str]]) -> str:
    """A cycle's modules and the imports that close it, for the failure message."""
    inside = set(component)
    edges = [f"  {a} -> {b}" for a in component for b in sorted(graph[a] & inside)]
    return "\n".join([f"{len(component)} modules: {', '.join(component)}", *edges])


def test_the_cycle_finder_finds_cycles_and_only_them() -> None:
    graph = {
        "a": {"b"},
        "b": {"c"},
        "c": {"a", "d"},
        "d": {"e"},
        "e": set(),
        "f": {"f"},
        "g": {"d"},
    }
    assert sorted(cycles(graph)) == [["a", "b", "c"], ["f"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_takes_part_in_an_import_cycle() -> None:
    graph = import_graph()
    assert "memo_solver.cli.main" in graph
    assert "worker.__main__" in graph
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n\n".join(describe(c, graph) for c in found)


def test_below_the_command_line_no_module_knows_argparse() -> None:
    """The command line turns its parsed namespace into typed values: the layers below it
    (games, jobs, the service) never take one, nor build a parser."""
    users = build_graph(external=True).find_modules_that_directly_import("argparse")
    assert {m for m in users if not m.startswith(("memo_solver.cli.", "worker"))} == set()


def test_the_import_contracts_are_kept() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run(
        [str(lint)], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.slow  # one lint-imports run over a copy of the packages: a few CPU s
def test_an_upward_import_between_the_yahtzee_rooms_breaks_the_contract(tmp_path: Path) -> None:
    """The family's rooms contract has teeth: a copy of the packages in which the rules room
    imports the advice above it fails ``lint-imports``, naming that contract and that import
    (the checkout itself is never touched)."""
    for package in PACKAGES:
        shutil.copytree(REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("*.pyc"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    ties = tmp_path / "memo_solver" / "games" / "yahtzee" / "rules" / "ties.py"
    ties.write_text(
        ties.read_text() + "\nfrom memo_solver.games.yahtzee.advice import mean_advice  # planted\n"
    )
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run(
        [str(lint)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 broken" in result.stdout
    broken = " ".join(result.stdout.split("Broken contracts")[-1].split())
    assert "The Yahtzee family's rooms" in broken
    assert (
        "memo_solver.games.yahtzee.rules.ties -> memo_solver.games.yahtzee.advice.mean_advice"
        in broken
    )


def test_the_architecture_guide_names_every_module() -> None:
    """ARCHITECTURE.md is the map a new engineer opens first: every module of the packages
    is on it by its file name, so a module added without a place on the map fails here."""
    guide = (REPO / "ARCHITECTURE.md").read_text()
    modules = [
        path.relative_to(REPO)
        for package in PACKAGES
        for path in (REPO / package).rglob("*.py")
        if path.name != "__init__.py"
    ]
    assert len(modules) > 100
    named = set(re.findall(r"[`/]([a-z_0-9]+\.py)`", guide))
    assert [str(m) for m in modules if m.name not in named] == []
