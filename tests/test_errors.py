"""Every error the user can fix is a :class:`UserError`, and each surface maps it in one place.

The table below is the documentation the rule is checked against: each kind of user error,
the HTTP status the service answers for it, the field it names and the line the CLI prints
after ``memo-solver: error:``. An exception class that is not a user error is named in
``NOT_USER_ERRORS`` with the reason, so a new class cannot slip past both lists.
"""

from __future__ import annotations

import ast
import importlib
import pickle
import pkgutil
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from support.api_support import build_app
from support.cli_support import TEMPFAIL, USAGE

import memo_solver
from memo_solver.cli import main as memo_cli
from memo_solver.cli.commands import rules as rules_command
from memo_solver.cli.common import UsageError
from memo_solver.cli.play import _StoppedError, _UndoError
from memo_solver.core.compiled import CompileCacheWarning
from memo_solver.core.engine_pool import PoolBusyError
from memo_solver.core.errors import UserError
from memo_solver.core.store import (
    NamespaceGoneError,
    RegistrationQuotaError,
    StoreBusyError,
    StoreFullError,
    StoreLocationError,
    StoreRefusedError,
    StoreUnavailableError,
)
from memo_solver.games.dice_of_doom.board import DoomError
from memo_solver.games.dice_of_doom.tree import DoomLimitError
from memo_solver.games.registry import UnknownGameError, names
from memo_solver.games.yahtzee.advice.beat import BeatTooLargeError
from memo_solver.games.yahtzee.advice.review import GameError
from memo_solver.games.yahtzee.analysis.distribution import MissingBlockError
from memo_solver.games.yahtzee.analysis.stats import StoppedError
from memo_solver.games.yahtzee.rules.catalog import UnknownRuleSetError
from memo_solver.games.yahtzee.rules.kinds import RuleFileError
from memo_solver.games.yahtzee.rules.rule_set import SavedRollsError
from memo_solver.games.yahtzee.rules.state import StateError
from memo_solver.games.yahtzee.solve.need import NeedBeyondCapError, NeedError
from memo_solver.games.yahtzee.solve.risk import RiskError
from memo_solver.jobs.queue import JobError
from memo_solver.jobs.settings import SettingsError
from memo_solver.service.errors import ApiError
from memo_solver.stores.memory import MemoryStore
from memo_solver.stores.transfer import TransferError

CLI_DIR = Path(memo_cli.__file__).parent


@dataclass(frozen=True)
class Documented:
    error: UserError
    status: int
    field: str
    line: str
    """What the CLI prints after ``memo-solver: error: ``."""


UPPER = "upper total 5 cannot be made with twos filled (possible: 0, 2, 4, 6, 8, 10)"
UNKNOWN_RULES = "unknown rule set 'kniffel' (built in: yahtzee, yatzy)"
UNKNOWN_GAME = f"unknown rule set 'kniffel' (rule sets and games: {', '.join(names())})"
LIMIT = "solving this position would hold over 1,000 positions (the limit)"
NOT_YET = (
    "advice against an opponent (--opponent): not available yet for a rule set with saved "
    "rolls (yatzy-saved)"
)
DUMP = "x.msgpack is not a memo-solver block file"
JOB = "unknown job kind 'x' (kinds: precompute, warm, stats, block)"
SETTINGS = "concurrency, lease, heartbeat and job TTL must be positive"
GAMES = "--games must be between 1 and 1,000,000, got 0"
LOCATION = "/tmp is a folder, not a store file"
NO_TOKEN = "send 'Authorization: Bearer <operator token>'"
NO_JOB = "no job 'abc'"
NO_QUEUE = "background jobs need the shared Redis store (serve with --redis URL)"
BUSY = "still computing this state; retry shortly (the work goes on)"
DICE_COUNT = "expected an integer 1..6, got 9 (in house.json)"
CAP = "the need cap must be between 1 and 2000 points, not 0"
BEYOND = (
    "need 500 is above the need table's cap of 400 points to come, and the open boxes could "
    "still reach it: ask for at most 400, or raise the cap to at least 500 (--need-cap; "
    "need_cap in the API)"
)
GONE = (
    "the blocks of 1:abc were deleted while they were being solved (the rule set was "
    "deleted): nothing more is written there"
)
RISK = (
    "the risk must be a number from -0.5 to 0.5 with at most 3 decimals (0 plays for the "
    "mean), not 0.6"
)
BEAT = "beating this opponent from this state needs 9 values solved, past the limit of 1"

DOCUMENTED = [
    Documented(StateError("upper", UPPER), 422, "upper", f"upper: {UPPER}"),
    Documented(DoomError("board", "the board is empty"), 422, "board", "the board is empty"),
    Documented(DoomLimitError("limit", LIMIT), 422, "limit", LIMIT),
    Documented(
        GameError("chance is already filled (turn 1)", 2, "box"),
        422,
        "game",
        "turn 2, box: chance is already filled (turn 1)",
    ),
    Documented(UnknownRuleSetError(UNKNOWN_RULES), 422, "rules", UNKNOWN_RULES),
    Documented(SavedRollsError(NOT_YET), 422, "rules", NOT_YET),
    Documented(NeedError(CAP, "need_cap"), 422, "need_cap", CAP),
    Documented(NeedBeyondCapError(500, 400), 422, "need", BEYOND),
    Documented(BeatTooLargeError(BEAT), 422, "opponent", BEAT),
    Documented(RiskError(RISK), 422, "risk", RISK),
    Documented(RuleFileError("dice", DICE_COUNT), 422, "dice", f"dice: {DICE_COUNT}"),
    Documented(UnknownGameError("kniffel"), 422, "rules", UNKNOWN_GAME),
    Documented(TransferError(DUMP), 422, "file", DUMP),
    Documented(JobError(JOB), 422, "job", JOB),
    Documented(SettingsError(SETTINGS), 422, "settings", SETTINGS),
    Documented(UsageError(GAMES), 422, "arguments", GAMES),
    Documented(StoreLocationError(LOCATION), 422, "store", LOCATION),
    Documented(ApiError(422, "rules", UNKNOWN_RULES), 422, "rules", UNKNOWN_RULES),
    Documented(ApiError(401, "authorization", NO_TOKEN), 401, "authorization", NO_TOKEN),
    Documented(
        ApiError(403, "authorization", "wrong operator token"),
        403,
        "authorization",
        "wrong operator token",
    ),
    Documented(ApiError(404, "job_id", NO_JOB), 404, "job_id", NO_JOB),
    Documented(ApiError(409, "store", NO_QUEUE), 409, "store", NO_QUEUE),
    Documented(ApiError(503, "state", BUSY), 503, "state", BUSY),
    Documented(NamespaceGoneError("1:abc"), 409, "rules", GONE),
]
IDS = [f"{type(d.error).__name__}-{d.status}" for d in DOCUMENTED]

NOT_USER_ERRORS: dict[type[BaseException], str] = {
    StoreUnavailableError: "the store failed, not the input: exit 75, HTTP 503",
    StoreRefusedError: "a store fault",
    StoreFullError: "a store fault (HTTP 507)",
    StoreBusyError: "a store fault",
    RegistrationQuotaError: "the store's refusal, which the rule book answers as a 429",
    PoolBusyError: "every pooled engine is in use: a store fault's 503, retry",
    MissingBlockError: "a bug in what was solved beforehand",
    StoppedError: "a caller gave up on a computation: control flow",
    _StoppedError: "the player stopped the game: control flow",
    _UndoError: "the player took a step back: control flow",
    CompileCacheWarning: "a warning, not an error: compiled code is not kept on disk",
}


def _package_exceptions() -> set[type[BaseException]]:
    """Every exception class defined in a module of the package."""
    found: set[type[BaseException]] = set()
    for module_info in pkgutil.walk_packages(memo_solver.__path__, "memo_solver."):
        if module_info.name.endswith("__main__"):  # runs the command when imported
            continue
        module = importlib.import_module(module_info.name)
        found.update(
            value
            for value in vars(module).values()
            if isinstance(value, type)
            and issubclass(value, BaseException)
            and value.__module__ == module.__name__
        )
    return found


def test_every_exception_class_is_a_documented_user_error_or_named_as_none() -> None:
    documented = {type(d.error) for d in DOCUMENTED}
    for cls in _package_exceptions():
        if issubclass(cls, UserError):
            assert cls in documented or cls is UserError, f"{cls.__qualname__} is undocumented"
        else:
            assert cls in NOT_USER_ERRORS, f"{cls.__qualname__}: a user error, or why not?"


@pytest.mark.parametrize("documented", DOCUMENTED, ids=IDS)
def test_a_user_error_carries_its_status_field_and_message(documented: Documented) -> None:
    error = documented.error
    assert isinstance(error, UserError)
    assert isinstance(error, ValueError)  # what code that checks values catches
    assert (error.status, error.field, str(error)) == (
        documented.status,
        documented.field,
        documented.line,
    )
    assert error.message in documented.line


def test_the_status_is_422_unless_the_api_answers_another_today() -> None:
    assert UserError("bad").status == 422
    assert {d.status for d in DOCUMENTED} - {422} <= {400, 401, 403, 404, 409, 413, 503}


@pytest.mark.parametrize("documented", DOCUMENTED, ids=IDS)
def test_a_user_error_survives_pickling_whole(documented: Documented) -> None:
    error = documented.error
    copy = pickle.loads(pickle.dumps(error))

    assert type(copy) is type(error)
    assert copy.__dict__ == error.__dict__
    assert str(copy) == str(error)


# --- the CLI: one line, exit status 2, in one place ------------------------------------------


@pytest.mark.parametrize("documented", DOCUMENTED, ids=IDS)
def test_the_cli_prints_any_user_error_as_one_line_and_exits_2(
    documented: Documented, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def refuse(*args: object) -> int:
        raise documented.error

    monkeypatch.setitem(rules_command.ACTIONS, "list", refuse)

    assert memo_cli.main(["rules"]) == USAGE
    assert capsys.readouterr().err == f"memo-solver: error: {documented.line}\n"


def test_a_store_fault_stays_its_own_family_with_exit_75(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def fail(*args: object) -> int:
        raise StoreBusyError("the store at x is locked by another process")

    monkeypatch.setitem(rules_command.ACTIONS, "list", fail)

    assert memo_cli.main(["rules"]) == TEMPFAIL
    assert capsys.readouterr().err == (
        "memo-solver: error: the store at x is locked by another process\n"
    )


def _caught_names(handler: ast.ExceptHandler) -> set[str]:
    caught = handler.type
    nodes = caught.elts if isinstance(caught, ast.Tuple) else [caught]
    return {node.id for node in nodes if isinstance(node, ast.Name)}


def test_the_cli_maps_user_errors_in_one_place() -> None:
    """One ``except UserError`` in the whole CLI, and no list of its kinds anywhere."""
    user_errors = {type(d.error).__name__ for d in DOCUMENTED} | {"UserError"}
    mapping = []
    for path in sorted(CLI_DIR.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ExceptHandler) and node.type is not None:
                named = _caught_names(node) & user_errors
                assert len(named) <= 1, f"{path.name}:{node.lineno} lists {sorted(named)}"
                if named == {"UserError"}:
                    mapping.append(f"{path.name}:{node.lineno}")
    assert len(mapping) == 1, mapping


# --- the API: the error JSON, in one handler ------------------------------------------------


def _app_raising(error: UserError) -> FastAPI:
    app = build_app(MemoryStore)

    async def refuse() -> None:
        raise error

    app.add_api_route("/refuse", refuse)
    return app


@pytest.mark.parametrize("documented", DOCUMENTED, ids=IDS)
async def test_the_api_answers_any_user_error_with_its_status_and_json(
    documented: Documented,
) -> None:
    error = documented.error
    transport = httpx.ASGITransport(app=_app_raising(error), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        response = await client.get("/refuse")

    assert response.status_code == documented.status
    assert response.json() == {"error": {"field": documented.field, "message": error.message}}
    assert ("retry-after" in response.headers) == (documented.status == 503)


def test_the_api_maps_user_errors_in_one_handler() -> None:
    handled = build_app(MemoryStore).exception_handlers
    assert [cls for cls in handled if isinstance(cls, type) and issubclass(cls, UserError)] == [
        UserError
    ]
