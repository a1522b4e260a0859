"""Compiled code: kept per user in a folder the environment can choose, filled ahead of time
by ``memo-solver compile`` for every compiled function, safe for processes that start
together on an empty folder, and never a failure when the folder cannot be used.

Each scenario runs real processes on a cache folder of its own (the user's is never
touched); a cold compile costs seconds of CPU, so each runs once per module and its tests
read what it left.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from platformdirs import user_cache_path
from support.cli_support import TINY_RULES

from memo_solver.core.compiled import CACHE_ENV, cache_dir

CLI = Path(sys.executable).with_name("memo-solver")
COMPILE_EVERYTHING = Path(__file__).parent / "support" / "compile_everything.py"
TIMEOUT_S = 300
TOGETHER = 2
"""Processes started at once on an empty cache folder: two race for every entry (a third
would only stretch the run on two cores)."""


def env(cache: Path) -> dict[str, str]:
    """This environment with ``cache`` as the compile cache folder and nothing else choosing
    one."""
    kept = {
        k: v
        for k, v in os.environ.items()
        if k not in {CACHE_ENV, "NUMBA_CACHE_DIR", "MEMO_SOLVER_STORE"}
    }
    return {**kept, "OPENBLAS_NUM_THREADS": "1", CACHE_ENV: str(cache)}


def memo_solver(cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLI), *args],
        env=env(cache),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def answer(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    assert "warning" not in done.stderr, done.stderr
    return json.loads(done.stdout)


def files(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder``: its modification time and size."""
    return {
        str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.stat().st_size)
        for p in folder.rglob("*")
        if p.is_file()
    }


# --- where the cache folder is ------------------------------------------------------------


def test_the_cache_folder_is_the_environments_choice_else_the_users_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(CACHE_ENV, raising=False)
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    assert cache_dir() == user_cache_path("memo-solver") / "compiled"
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    assert cache_dir() == tmp_path / "numba"
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "ours"))
    assert cache_dir() == tmp_path / "ours"


def test_compile_help_names_the_folder_and_its_variable() -> None:
    shown = subprocess.run(
        [str(CLI), "compile", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert f"${CACHE_ENV}" in shown
    assert "~/.cache/memo-solver/compiled" in shown
    assert "memo-solver compile --json" in shown


# --- several processes at once on an empty folder, then a later one ------------------------


@dataclass(frozen=True)
class SharedCache:
    folder: Path
    together: list[Any]
    """The JSON answers of the processes started together."""


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> SharedCache:
    """``memo-solver compile --json`` started :data:`TOGETHER` times at once on one empty
    cache folder, each waited for."""
    folder = tmp_path_factory.mktemp("compile-together") / "cache"
    started = [
        subprocess.Popen(
            [str(CLI), "compile", "--json"],
            env=env(folder),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(TOGETHER)
    ]
    together = []
    for process in started:
        stdout, stderr = process.communicate(timeout=TIMEOUT_S)
        together.append(answer(subprocess.CompletedProcess([], process.returncode, stdout, stderr)))
    return SharedCache(folder, together)


def test_processes_started_together_on_an_empty_cache_all_succeed_alike(
    shared_cache: SharedCache,
) -> None:
    for payload in shared_cache.together:
        assert payload["cache_dir"] == str(shared_cache.folder)
        assert payload["caching"] is True
        assert payload["functions"] == shared_cache.together[0]["functions"] > 0
        # Each compiled what it did not find, and together they found or made every one.
        assert payload["compiled"] + payload["loaded"] > 0
    assert any(payload["compiled"] for payload in shared_cache.together)


def test_compiled_code_lands_in_the_folder_the_environment_names(
    shared_cache: SharedCache,
) -> None:
    kept = files(shared_cache.folder)
    assert any(name.endswith(".nbi") for name in kept), kept  # numba's index per function
    assert any(name.endswith(".nbc") for name in kept), kept  # and its machine code
    assert not any(".tmp." in name for name in kept), kept  # no write left half done


def test_a_later_command_finds_the_cache_warm_and_compiles_nothing(
    shared_cache: SharedCache, tmp_path: Path
) -> None:
    before = files(shared_cache.folder)
    rules = tmp_path / "tiny.json"
    rules.write_text(json.dumps(TINY_RULES))
    value = answer(
        memo_solver(
            shared_cache.folder,
            "value", "--rules-file", str(rules), "--store", str(tmp_path / "s.db"), "--json",
        )
    )  # fmt: skip
    assert value["value"] == pytest.approx(4.25, abs=1e-12)
    # The warm-up compiled what a real command runs: the command added nothing to the cache.
    assert files(shared_cache.folder) == before
    again = answer(memo_solver(shared_cache.folder, "compile", "--json"))
    assert again["compiled"] == 0
    assert again["loaded"] > 0
    assert files(shared_cache.folder) == before
    words = memo_solver(shared_cache.folder, "compile")
    assert words.returncode == 0, words.stderr
    assert ": 0 compiled now" in words.stdout
    assert f"cache: {shared_cache.folder} " in words.stdout


# --- a folder that cannot be used ----------------------------------------------------------


@dataclass(frozen=True)
class InMemory:
    folder: Path
    done: subprocess.CompletedProcess[str]
    payload: Any
    """``memo-solver compile --json``'s answer."""
    signatures: dict[str, int]
    """Every compiled function of the package: its machine codes after the command."""


@pytest.fixture(scope="module")
def in_memory(tmp_path_factory: pytest.TempPathFactory) -> InMemory:
    """``compile --json`` with a cache folder that cannot exist (under a regular file: even
    root cannot write there), then every compiled function of the package listed."""
    blocker = tmp_path_factory.mktemp("compile-in-memory") / "file"
    blocker.write_text("a file, not a folder")
    folder = blocker / "compiled"
    done = subprocess.run(
        [sys.executable, str(COMPILE_EVERYTHING)],
        env=env(folder),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    payload_line, listing_line = done.stdout.splitlines()
    listing = json.loads(listing_line)
    assert listing["status"] == 0
    return InMemory(folder, done, json.loads(payload_line), listing["signatures"])


def test_an_unusable_cache_folder_gives_one_warning_line_and_compiles_in_memory(
    in_memory: InMemory,
) -> None:
    (line,) = in_memory.done.stderr.splitlines()
    assert line.startswith(
        f"memo-solver: warning: compiled code cannot be cached in {in_memory.folder} "
        "(Not a directory): compiling in memory"
    ), line
    assert CACHE_ENV in line
    payload = in_memory.payload
    assert payload["cache_dir"] == str(in_memory.folder)
    assert payload["caching"] is False
    assert payload["compiled"] == payload["functions"] > 0
    assert payload["loaded"] == 0


def test_compile_runs_every_compiled_function_of_the_package(in_memory: InMemory) -> None:
    signatures = in_memory.signatures
    assert signatures, "no compiled function found in the package"
    left_out = sorted(name for name, count in signatures.items() if count == 0)
    assert not left_out, (
        f"memo-solver compile never runs {left_out}: add a workload that reaches them to "
        "memo_solver/games/yahtzee/warm_loops.py"
    )
    assert in_memory.payload["functions"] == len(signatures)


# --- what a cold command's start pays for ---------------------------------------------------

LOADED_MODULES = """
import json, sys
from memo_solver.cli.main import main
status = main(sys.argv[2:])
with open(sys.argv[1], "w") as listing:
    json.dump(sorted(sys.modules), listing)
sys.exit(status)
"""
"""Runs the command line in this process, then lists every module the process loaded."""
NOT_FOR_ADVICE = ("fastapi", "pydantic", "starlette", "uvicorn", "redis", "tqdm")
"""What a command's start leaves out when it advises, its standard error no terminal (the bar
is drawn only on one)."""
COMPILER_REGISTRIES = (
    "numba.np.npyimpl", "numba.typed.typeddict", "numba.np.random.legacy", "numba.np.arraymath",
)  # fmt: skip
"""Modules numba imports for its typing and lowering registries, which it reads to compile,
not to load machine code from the folder (``numba.np.arraymath`` also when loaded code calls
one of its functions, such as an array's ``max()``: its module rebuilds their environment)."""


@pytest.mark.parametrize(
    "question",
    [
        ["--rules", "maxi-yatzy-saved", "open=chance,maxi_yatzy,one_pair upper=84 dice=113456"],
        ["--rules", "yahtzee", "--risk", "0.05", "open=chance,yahtzee,sixes dice=66653"],
    ],
    ids=["saved-rolls", "risk"],
)
def test_a_cold_advice_loads_only_what_it_answers_with(
    shared_cache: SharedCache, tmp_path: Path, question: list[str]
) -> None:
    """Cold advice as a whole process is mostly its start (issues #31 and #32: within a
    second): it loads no HTTP service, job queue or Redis client, no other command's
    settings, no progress bar where none is drawn, and reads its compiled code from the warm
    folder without numba's compiler."""
    listing = tmp_path / "modules.json"
    store = str(tmp_path / "s.db")
    argv = [str(listing), "--store", store, "advise", *question, "--json"]
    done = subprocess.run(
        [sys.executable, "-c", LOADED_MODULES, *argv],
        env=env(shared_cache.folder),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert answer(done)["actions"]
    loaded = set(json.loads(listing.read_text()))
    tops = {name.split(".")[0] for name in loaded}
    assert not tops & set(NOT_FOR_ADVICE), sorted(tops & set(NOT_FOR_ADVICE))
    ours = {name for name in loaded if name.startswith("memo_solver.")}
    assert not {n for n in ours if n.startswith("memo_solver.service")}, sorted(ours)
    assert "memo_solver.jobs.queue" not in ours
    assert "memo_solver.games.dice_of_doom.tree" not in ours
    assert not loaded & set(COMPILER_REGISTRIES), sorted(loaded & set(COMPILER_REGISTRIES))
