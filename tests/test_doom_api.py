"""Dice of Doom over HTTP in process: ``POST /v1/games/dice-of-doom/advice``, coverage, jobs.

The same contract as the Yahtzee routes (tests/test_api.py): the answer is the CLI's
``advise --game dice-of-doom --json`` (less the fields that are empty), read from the
shared memo once the board size is precomputed and solved on the position's DAG before,
and a bad board is a 422 naming the field in the CLI's words.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from support.api_support import api_client, child_env, error_of

from memo_solver.games.dice_of_doom.advice import solve
from memo_solver.games.dice_of_doom.board import DoomError
from memo_solver.jobs.queue import Job
from memo_solver.service.app import ApiSettings
from memo_solver.service.routes.games import dice_of_doom as doom_api
from memo_solver.service.settings import ADMIN_TOKEN_ENV

CLI = Path(sys.executable).with_name("memo-solver")
ADVICE = "/v1/games/dice-of-doom/advice"
QUICK = ApiSettings(deadline_s=30.0)
TOKEN = "s3cret-operator-token"

BIG = "a-2 a-2 b-2 / a-3 b-1 a-3 / a-3 a-3 b-3"
"""The published 3x3 board: a wins it, with a tree of 1,468,919,491 nodes."""
BOOK = "a-3 b-3 / a-2 b-2"
"""The book's first 2x2 game: a to move loses it."""
BOOK_AFTER_0_3 = "a-1 b-3 / a-2 a-2"
"""The book's board after a's 0 -> 3, which captured b's 2 dice."""
PUBLISHED = {
    "tree_size": 1_468_919_491,
    "depth": 40,
    "positions": 201_861,
    "calls": 472_109,
}


async def cli(store: Path, *args: str) -> tuple[int, str, str]:
    """``memo-solver --store STORE ARGS`` as a process: exit status, stdout, stderr."""
    done = await anyio.run_process(
        [str(CLI), "--store", str(store), *args], check=False, env=child_env()
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


async def cli_advice(store: Path, board: str, *args: str) -> dict[str, Any]:
    code, out, err = await cli(store, "advise", "--game", "dice-of-doom", board, *args, "--json")
    assert code == 0, err
    answer: dict[str, Any] = json.loads(out)
    return answer


async def cli_error(store: Path, board: str, *args: str) -> str:
    """The message ``memo-solver advise`` prints for a bad board (its one line, unprefixed)."""
    code, out, err = await cli(store, "advise", "--game", "dice-of-doom", board, *args)
    assert (code, out) == (2, ""), err
    (line,) = err.splitlines()
    return line.removeprefix("memo-solver: error: ")


def present(answer: dict[str, Any]) -> dict[str, Any]:
    """The answer without its empty fields (the API leaves them out) and the tree figures
    (the API counts the tree only when asked)."""
    return {k: v for k, v in answer.items() if v is not None and k != "stats"}


async def post(client: httpx.AsyncClient, board: str, **fields: Any) -> dict[str, Any]:
    response = await client.post(ADVICE, json={"board": board, **fields})
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# --- advice ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("board", "fields", "args"),
    [
        (BIG, {"to_move": "a"}, ["--to-move", "a"]),
        (BIG, {"to_move": "b"}, ["--to-move", "b"]),  # the game is over
        (BOOK, {}, []),
        (BOOK_AFTER_0_3, {"captured": 2}, ["--captured", "2"]),
    ],
    ids=["big-board", "big-board-b-to-move", "book-2x2", "book-mid-turn"],
)
async def test_advice_is_the_clis_answer(
    tmp_path: Path, board: str, fields: dict[str, Any], args: list[str]
) -> None:
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        served = await post(client, board, **fields)
    printed = await cli_advice(tmp_path / "cli.sqlite", board, *args)

    assert served == present(printed)


async def test_the_big_board_is_a_win_for_a_and_the_book_attacks_0_to_4(tmp_path: Path) -> None:
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        advice = await post(client, BIG)

    assert (advice["value"], advice["value_float"], advice["game_over"]) == ("1", 1.0, False)
    assert (advice["best"]["src"], advice["best"]["dst"]) == (0, 4)
    assert [move["text"] for move in advice["moves"]] == [
        "0 -> 4",
        "1 -> 4",
        "3 -> 4",
        "5 -> 2",
        "5 -> 4",
        "7 -> 4",
    ]
    assert advice["source"] == "solved"
    assert "stats" not in advice
    assert "winners" not in advice


async def test_the_stats_flag_adds_the_published_tree_figures(tmp_path: Path) -> None:
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        advice = await post(client, BIG, stats=True)
        over = await post(client, BIG, to_move="b", stats=True)

    assert {key: advice["stats"][key] for key in PUBLISHED} == PUBLISHED
    assert advice["stats"]["leaf_winners"]["tie"] == 0
    assert advice["source"] == "solved"
    # "with b to move the tree is the single root"
    assert over["stats"] == {
        "tree_size": 1,
        "depth": 1,
        "positions": 1,
        "calls": 1,
        "leaf_winners": {"a": 1, "b": 0, "tie": 0},
    }
    assert over["winners"] == ["a"]


async def precompute_2x2(client: httpx.AsyncClient) -> None:
    """Solve every 2x2 turn start into the store through the app's own engine."""
    engine = client.app.state.service.engines["dice-of-doom-2x2"]  # type: ignore[attr-defined]
    await engine.block(engine.game.root())


async def test_advice_comes_from_the_memo_once_the_2x2_game_is_precomputed(
    tmp_path: Path,
) -> None:
    store = tmp_path / "memo.sqlite"
    async with api_client(store, QUICK) as client:
        before = await post(client, BOOK)
        mid_turn_before = await post(client, BOOK_AFTER_0_3, captured=2)
    code, _, err = await cli(store, "precompute", "--game", "dice-of-doom", "--size", "2")
    assert code == 0, err
    async with api_client(store, QUICK) as client:
        after = await post(client, BOOK)
        mid_turn_after = await post(client, BOOK_AFTER_0_3, captured=2)
        with_stats = await post(client, BOOK, stats=True)

    assert (before["source"], mid_turn_before["source"]) == ("solved", "solved")
    assert (after["source"], mid_turn_after["source"]) == ("memo", "memo")
    assert after | {"source": "solved"} == before
    assert mid_turn_after | {"source": "solved"} == mid_turn_before
    # Only a solve counts the tree: asking for the figures skips the memo.
    assert with_stats["source"] == "solved"
    assert with_stats["stats"]["tree_size"] == 47
    assert {k: v for k, v in with_stats.items() if k != "stats"} == before


async def test_a_position_asked_before_the_precompute_is_read_from_the_memo_after_it(
    tmp_path: Path,
) -> None:
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        before = await post(client, BOOK)
        await precompute_2x2(client)
        after = await post(client, BOOK)

    assert (before["source"], after["source"]) == ("solved", "memo")


async def test_boards_larger_than_the_memo_holds_are_solved(tmp_path: Path) -> None:
    board = "a-2 b-1 a-1 a-1 / a-1 a-1 a-1 a-1 / a-1 a-1 a-1 a-1 / b-1 a-1 a-1 a-1"
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        advice = await post(client, board)

    assert advice["position"]["size"] == 4
    assert advice["source"] == "solved"
    assert advice["best"]["text"] == "0 -> 1"


async def test_a_cold_solve_past_the_deadline_is_a_503_and_the_retry_finds_it(
    tmp_path: Path,
) -> None:
    body = {"board": BIG, "stats": True}
    async with api_client(tmp_path / "memo.sqlite", ApiSettings(deadline_s=0.001)) as client:
        first = await client.post(ADVICE, json=body)
        assert "still computing" in error_of(first, 503, "state")
        assert first.headers["retry-after"] == "2"
        with anyio.fail_after(30):
            while True:
                retry = await client.post(ADVICE, json=body)
                if retry.status_code != 503:
                    break
                await anyio.sleep(0.2)
    assert retry.status_code == 200, retry.text
    assert retry.json()["stats"]["tree_size"] == PUBLISHED["tree_size"]


# --- bad requests ---------------------------------------------------------------------------

BAD_BOARDS = [
    pytest.param("a-1 a-1 a-1", id="three-hexes"),
    pytest.param("a-1 a-1 a-1 a-1 a-1", id="five-hexes"),
    pytest.param(" ".join(["a-1"] * 36), id="six-by-six"),
    pytest.param("a-1 a-4 / a-1 a-1", id="dice-4"),
    pytest.param("a-1 a-1 / a-0 a-1", id="dice-0"),
    pytest.param("a-1 a-1 / a-1 a-10", id="dice-10"),
    pytest.param("a-1 c-1 / a-1 a-1", id="owner-c"),
    pytest.param("a-1 a-1 / a1 a-1", id="no-dash"),
    pytest.param("a-1 a-1 / a-1 a-1 / a-1 a-1", id="not-square"),
    pytest.param("a-1 a-1 a-1 / a-1 a-1 / a-1 a-1 a-1", id="ragged-rows"),
    pytest.param("a-1 a-1 / / a-1 a-1", id="empty-row"),
    pytest.param("", id="empty"),
]


@pytest.mark.parametrize("board", BAD_BOARDS)
async def test_a_bad_board_is_a_422_in_the_cli_words(tmp_path: Path, board: str) -> None:
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        response = await client.post(ADVICE, json={"board": board})

    assert error_of(response, 422, "board") == await cli_error(tmp_path / "cli.sqlite", board)


async def test_impossible_captured_dice_are_a_422_in_the_cli_words(tmp_path: Path) -> None:
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        response = await client.post(ADVICE, json={"board": BOOK, "captured": 3})

    message = error_of(response, 422, "captured")
    assert message == await cli_error(tmp_path / "cli.sqlite", BOOK, "--captured", "3")
    assert "with 10 dice on the board it is 0 to 2" in message


async def test_tree_figures_past_the_limit_are_a_422_naming_the_limit(tmp_path: Path) -> None:
    async with api_client(tmp_path / "memo.sqlite", ApiSettings(doom_limit=1000)) as client:
        response = await client.post(ADVICE, json={"board": BIG, "stats": True})
        small = await client.post(ADVICE, json={"board": BOOK, "stats": True})

    assert "more than 1,000 distinct positions" in error_of(response, 422, "limit")
    assert small.status_code == 200


async def test_a_solve_past_the_limit_is_remembered_so_the_retry_gets_the_422_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The 503 says retry; once the solve behind it has failed at the limit, the retry must
    learn that at once, not start the same doomed solve again (and get 503 again)."""
    solves = 0

    async def counted(*args: Any) -> Any:
        nonlocal solves
        solves += 1
        return await solve(*args)

    monkeypatch.setattr(doom_api, "solve", counted)
    body = {"board": BIG, "stats": True}  # 201,861 positions: fails at 100,000
    settings = ApiSettings(deadline_s=0.001, doom_limit=100_000)
    async with api_client(tmp_path / "memo.sqlite", settings) as client:
        first = await client.post(ADVICE, json=body)
        assert "still computing" in error_of(first, 503, "state")
        with anyio.fail_after(30):  # until the solve has failed: retries share it till then
            while True:
                retry = await client.post(ADVICE, json=body)
                if retry.status_code != 503:
                    break
                await anyio.sleep(0.05)
        assert "more than 100,000 distinct positions" in error_of(retry, 422, "limit")

        again = await client.post(ADVICE, json=body)
        assert error_of(again, 422, "limit") == error_of(retry, 422, "limit")

    assert solves == 1  # the first request's: every retry was answered without another


async def test_a_position_past_the_limit_is_computed_on_the_shared_memo(tmp_path: Path) -> None:
    """Without tree figures, the engine takes over where the solver's limit stops it."""
    async with api_client(tmp_path / "memo.sqlite", ApiSettings(doom_limit=5)) as client:
        answer = await post(client, "a-3 a-3 / b-2 b-3")
        again = await post(client, "a-3 a-3 / b-2 b-3")

    assert (answer["source"], again["source"]) == ("computed", "memo")
    assert {k: v for k, v in answer.items() if k != "source"} == {
        k: v for k, v in again.items() if k != "source"
    }
    assert answer["best"]["text"] == "0 -> 2"


JSON = {"content-type": "application/json"}
BAD_REQUESTS: list[tuple[bytes, str, str]] = [
    # body, field, words in the message
    (b'{"board": "a-3 b-3 / a-2 b-2", "player": "a"}', "player", "not permitted"),
    (b'{"board": "a-3 b-3 / a-2 b-2", "rules": "yahtzee"}', "rules", "not permitted"),
    (b'{"board": "%s"}' % (b"a-1 " * 101), "board", "at most 400 characters"),
    (b'{"board": 5}', "board", "string"),
    (b"{}", "board", "required"),
    (b'{"board": "a-3 b-3 / a-2 b-2", "to_move": "c"}', "to_move", "the players are a and b"),
    (b'{"board": "a-3 b-3 / a-2 b-2", "to_move": null}', "to_move", "string"),
    (b'{"board": "a-3 b-3 / a-2 b-2", "captured": -1}', "captured", "greater than or equal"),
    (b'{"board": "a-3 b-3 / a-2 b-2", "captured": 1.5}', "captured", "integer"),
    (b'{"board": "a-3 b-3 / a-2 b-2", "captured": false}', "captured", "integer"),  # not 0
    (b'{"board": "a-3 b-3 / a-2 b-2", "stats": "maybe"}', "stats", "boolean"),
    (b"[]", "body", "dictionary"),
]


@pytest.mark.parametrize(
    ("body", "field", "words"), BAD_REQUESTS, ids=[f"{b!r:.40}" for b, *_ in BAD_REQUESTS]
)
async def test_a_bad_request_is_a_422_naming_the_field(
    tmp_path: Path, body: bytes, field: str, words: str
) -> None:
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        response = await client.post(ADVICE, content=body, headers=JSON)

    assert words in error_of(response, 422, field)


def test_a_doom_limit_past_what_memory_holds_is_refused_when_the_service_starts() -> None:
    """Not a 422 to every client that asks: ``serve`` stops at once, in one line."""
    with pytest.raises(DoomError, match="more than this machine's memory holds") as error:
        ApiSettings(doom_limit=99_999_999_999_999)

    assert error.value.field == "doom_limit"


async def test_a_malformed_body_is_a_400(tmp_path: Path) -> None:
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        response = await client.post(ADVICE, content=b'{"board": ', headers=JSON)

    assert "malformed JSON" in error_of(response, 400, "body")


# --- coverage and the precompute job --------------------------------------------------------


async def test_coverage_counts_the_dice_of_doom_blocks(tmp_path: Path) -> None:
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        before = await client.get("/v1/rules/dice-of-doom-2x2/coverage")
        await precompute_2x2(client)
        after = await client.get("/v1/rules/dice-of-doom-2x2/coverage")
        big = await client.get("/v1/rules/dice-of-doom-3x3/coverage")
        unknown = await client.get("/v1/rules/dice-of-doom-4x4/coverage")

    empty = {"claims_held": 0, "workers_alive": 0, "solving": False}
    assert before.json() == {
        "rules": "dice-of-doom-2x2",
        "blocks_total": 307,
        "blocks_done": 0,
        **empty,
    }
    assert after.json() == before.json() | {"blocks_done": 307}
    assert big.json() == {
        "rules": "dice-of-doom-3x3",
        "blocks_total": 19_495,
        "blocks_done": 0,
        **empty,
    }
    assert "unknown rule set 'dice-of-doom-4x4'" in error_of(unknown, 422, "rules")


async def test_the_precompute_job_of_the_2x2_game_is_queued_once(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ADMIN_TOKEN_ENV, TOKEN)
    job_id = Job.precompute("dice-of-doom-2x2").id
    async with api_client(redis_url, QUICK) as client:
        first = await client.post(
            "/v1/jobs/precompute", json={"rules": "dice-of-doom-2x2"}, headers=bearer(TOKEN)
        )
        again = await client.post(
            "/v1/jobs/precompute", json={"rules": "dice-of-doom-2x2"}, headers=bearer(TOKEN)
        )
        record = await client.get(f"/v1/jobs/{job_id}", headers=bearer(TOKEN))
        no_token = await client.post("/v1/jobs/precompute", json={"rules": "dice-of-doom-2x2"})
        bad_size = await client.post(
            "/v1/jobs/precompute", json={"rules": "dice-of-doom-4x4"}, headers=bearer(TOKEN)
        )
        coverage = await client.get("/v1/rules/dice-of-doom-2x2/coverage")

    assert first.status_code == 202, first.text
    assert (first.json()["job"], first.json()["status"], first.json()["queued"]) == (
        job_id,
        "queued",
        True,
    )
    assert (again.status_code, again.json()["job"], again.json()["queued"]) == (202, job_id, False)
    assert record.status_code == 200
    assert record.json()["record"]["kind"] == "precompute"
    assert record.json()["record"]["rules"] == "dice-of-doom-2x2"
    assert record.json()["status"] == "queued"  # no worker runs here
    error_of(no_token, 401, "authorization")
    assert "unknown rule set 'dice-of-doom-4x4'" in error_of(bad_size, 422, "rules")
    assert coverage.json()["blocks_done"] == 0
