"""The registry: every game by name, each family registering its own; the surfaces read it.

A new game is one package and one registration: registered, a toy game here is offered by
``--game``, takes its own parameter, and is precomputed and listed by the operator
commands with no line of the command line written for it. Parsing a job stays light: the
statistics load only when a statistics job runs.
"""

from __future__ import annotations

import argparse
import json
import pkgutil
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest
from support.api_support import child_env

from memo_solver.cli import main as memo_cli
from memo_solver.cli.parser import build_parser
from memo_solver.core.game import Block, Packed
from memo_solver.games import registry
from memo_solver.games.dice_of_doom.family import FAMILY as DICE_OF_DOOM
from memo_solver.games.entry import GameEntry, GameFamily, Parameter
from memo_solver.games.yahtzee.family import FAMILY as YAHTZEE
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS


class Staircase:
    """A toy game: block ``k`` holds k + 1, one more than the block below it."""

    def __init__(self, steps: int) -> None:
        self.steps = steps

    @property
    def name(self) -> str:
        return f"staircase-{self.steps}"

    @property
    def fingerprint(self) -> str:
        return f"staircase-v1-{self.steps}"

    @property
    def block_count(self) -> int:
        return self.steps + 1

    def root(self) -> str:
        return str(self.steps)

    def is_key(self, key: str) -> bool:
        return key.isdigit() and int(key) <= self.steps

    def block_shape(self, key: str) -> tuple[int, ...]:
        return (1,)

    def values_below(self, key: str) -> int:
        return int(key) + 1

    def successors(self, key: str) -> Sequence[str]:
        return [str(int(key) - 1)] if int(key) else []

    def layers(self, key: str) -> Sequence[Sequence[str]]:
        return [[str(step)] for step in range(int(key) + 1)]

    def block_cost(self, key: str) -> float:
        return 1.0

    def pack(self, key: str, block: Block) -> Packed:
        return block

    def unpack(self, key: str, packed: Block) -> Block:
        return packed

    def solve(self, key: str, successors: Mapping[str, Block]) -> Block:
        below = sum(float(successors[s][0]) for s in self.successors(key))
        return np.array([below + 1.0])

    def solve_many(self, keys: Sequence[str], successors: Mapping[str, Block]) -> Sequence[Block]:
        return [self.solve(key, successors) for key in keys]


def staircase(steps: int) -> GameEntry:
    async def warm(engine: object, text: str) -> None:
        raise NotImplementedError

    return GameEntry(
        game=Staircase(steps),
        description=f"a staircase of {steps} steps",
        summarize_root=lambda root: (f"top {float(root[0])}", {"value": float(root[0])}),
        canonical_state=lambda text: text,
        warm=warm,
    )


STAIRCASE = GameFamily(
    name="staircase",
    parameter=Parameter(
        "--steps",
        "steps",
        default=2,
        game_name=lambda n: f"staircase-{n}",
        type=int,
        choices=(2, 3),
    ),
    entries=lambda: [staircase(2), staircase(3)],
)


@pytest.fixture
def with_staircase(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The staircase registered after the two families, the registry built afresh."""
    monkeypatch.setattr(registry, "FAMILIES", (*registry.FAMILIES, STAIRCASE))
    registry.registry.cache_clear()
    yield
    registry.registry.cache_clear()


def test_the_registry_lists_every_rule_set_then_every_board_size() -> None:
    assert registry.FAMILIES == (YAHTZEE, DICE_OF_DOOM)
    assert registry.names() == [*RULE_SETS, "dice-of-doom-2x2", "dice-of-doom-3x3"]


def test_a_family_parameter_names_one_of_its_games() -> None:
    assert registry.get_game(YAHTZEE.parameter.game_name("yazy")).name == "yazy"
    assert registry.get_game(DICE_OF_DOOM.parameter.game_name(2)).name == "dice-of-doom-2x2"
    assert DICE_OF_DOOM.parameter.dest == "size"


@pytest.mark.usefixtures("with_staircase")
def test_a_registered_game_is_offered_by_the_operator_commands() -> None:
    args = build_parser().parse_args(["precompute", "--game", "staircase", "--steps", "3"])
    assert (args.game, args.steps) == ("staircase", 3)
    (commands,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    help_text = " ".join(commands.choices["export"].format_help().split())
    assert "--game {yahtzee,dice-of-doom,staircase}" in help_text
    assert "yahtzee takes --rules, dice-of-doom --size, staircase --steps" in help_text
    assert "--steps {2,3} staircase: steps (default: 2)" in help_text


@pytest.mark.usefixtures("with_staircase")
def test_a_parameter_of_a_registered_game_is_refused_with_another(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["precompute", "--steps", "3"])
    assert "--steps is for --game staircase, not yahtzee" in capsys.readouterr().err


@pytest.mark.usefixtures("with_staircase")
def test_a_registered_game_is_precomputed_and_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "memo.sqlite")
    argv = ["--store", store, "precompute", "--game", "staircase", "--steps", "3", "--json"]
    assert memo_cli.main(argv) == 0
    solved = json.loads(capsys.readouterr().out)
    assert (solved["rules"], solved["value"], solved["blocks_computed"]) == ("staircase-3", 4, 4)
    assert memo_cli.main(["--store", store, "status", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["rule_sets"]
    assert listed["staircase-3"]["blocks_done"] == 4
    assert listed["staircase-2"]["blocks_done"] == 0


def test_parsing_a_job_loads_no_statistics() -> None:
    """A worker parses every job it takes: that needs the game's state parser, not the
    score distribution's stack (loaded when a statistics job runs)."""
    code = (
        "import sys\n"
        "from memo_solver.jobs.queue import Job\n"
        "Job.parse({'kind': 'warm', 'rules': 'yahtzee', 'state': 'start'})\n"
        "Job.parse({'kind': 'stats', 'rules': 'yahtzee', 'state': 'start'})\n"
        "print(sorted(m for m in sys.modules if m.startswith('memo_solver.games.yahtzee.')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=60,
        check=True,
    )
    loaded = result.stdout
    assert "memo_solver.games.yahtzee.rules.state" in loaded
    for heavy in ("stats", "distribution", "advice"):
        assert f"memo_solver.games.yahtzee.{heavy}'" not in loaded, loaded


def test_the_face_keeps_a_name_spelled_like_the_module_a_load_brings_in() -> None:
    """Loading ``mean_cone`` loads the ``need_entry`` module, which Python also binds on the
    package under that name: the face's ``need_entry`` (the function) must stay what the
    surfaces get, in whichever order they ask."""
    code = (
        "import types\n"
        "from memo_solver.games.yahtzee import mean_cone, need_entry, need_entry_of\n"
        "from memo_solver.games.yahtzee import need_entry as again\n"
        "print(all(not isinstance(f, types.ModuleType) for f in (need_entry, again)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=60,
        check=True,
    )
    assert result.stdout.strip() == "True"


def test_a_familys_own_endpoints_come_with_its_registration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The app takes the endpoints of every registered family that has a routes module
    (``service/routes/games/``), and only those: no list of games in the app."""
    from memo_solver.service.app import create_app
    from memo_solver.service.routes import games as family_routes
    from memo_solver.stores.memory import MemoryStore

    def paths() -> set[str]:
        app = create_app(lambda: (MemoryStore(), None))
        return {getattr(route, "path", "") for route in app.router.routes}

    assert "/v1/games/dice-of-doom/advice" in paths()
    monkeypatch.setattr(family_routes, "FAMILIES", (YAHTZEE,))
    assert "/v1/games/dice-of-doom/advice" not in paths()
    assert "/v1/advice" in paths()


def test_a_family_reads_every_fingerprint_it_owns_into_its_game() -> None:
    """The generic layers name a value table only through its family: a built-in's need
    table is known with no definition stored, a file's from the one stored beside it, and a
    fingerprint no family owns, or a definition of other rules, is refused."""
    from memo_solver.core.errors import UserError
    from memo_solver.games.yahtzee.rules.rule_file import format_rule_document, rule_set_document

    yahtzee = RULE_SETS["yahtzee"]
    need = f"{yahtzee.fingerprint}-need40"
    owned = registry.value_table(need)
    assert owned is not None
    assert (owned[0].name, owned[1].game) == ("yahtzee", yahtzee.fingerprint)
    assert registry.game_by_fingerprint(need, None).game.fingerprint == need

    yatzy = RULE_SETS["yatzy"]
    document = format_rule_document(rule_set_document(yatzy)).encode()
    assert registry.game_by_fingerprint(yatzy.fingerprint, document).name == "yatzy"
    with pytest.raises(UserError, match="of another game"):
        registry.game_by_fingerprint("0123456789abcdef-need40", document)
    with pytest.raises(UserError, match="no definition"):
        registry.game_by_fingerprint("0123456789abcdef", None)
    assert registry.value_table("0123456789abcdef-needle") is None
    with pytest.raises(registry.UnknownGameError):
        registry.game_by_fingerprint("dice-of-doom-3x3", None)


def test_no_name_of_the_yahtzee_face_is_spelled_like_a_module_of_the_family() -> None:
    """Importing a submodule binds its name on the package: a face name spelled like one of
    the package's own modules (a function ``need_entry`` beside a module ``need_entry``) would
    be hidden by the module as soon as anything imported it."""
    import memo_solver.games.yahtzee as face

    modules = {info.name for info in pkgutil.iter_modules(face.__path__)}
    assert {"need_entries", "warm_loops", "rules"} <= modules
    names = set(face._face())
    assert {"need_entry", "advise"} <= names
    assert modules.isdisjoint(names), modules & names
