"""The HTTP service in process: every endpoint and every error path, through httpx.

Each test builds the app on a store of its own (an SQLite file in its temporary folder, or
a Redis), enters its lifespan and talks to it over ``httpx.ASGITransport``. The app is the
one ``memo-solver serve`` runs; what only a real socket shows is in test_api_e2e.py, the
property-based fuzz in test_api_fuzz.py.

Answers are checked against the CLI: ``memo-solver rules --json``, and, for 200 random
states, ``memo-solver advise --json -`` run once on the same store file. Errors must be 4xx
JSON ``{"error": {"field", "message"}}`` in the CLI's words.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import export_openapi
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.api_support import (
    LOWER_PIN,
    OPENAPI_PATH,
    SAME,
    TOL,
    UPPER_PIN,
    YAHTZEE_PIN,
    api_client,
    as_json,
    assert_same_advice,
    bearer,
    build_app,
    child_env,
    error_of,
    late_states,
)
from support.random_states import random_state
from support.redis_server import RedisServer
from support.store_faults import (
    FULL,
    READ_ONLY,
    on_every_connection,
    redis_at_maxmemory,
    store_file,
)

from memo_solver.cli import main as memo_cli
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.rules.state import StateError, parse_state
from memo_solver.jobs.queue import Job
from memo_solver.service.app import ApiSettings, openapi_document
from memo_solver.service.models import MAX_BATCH
from memo_solver.service.settings import ADMIN_TOKEN_ENV
from memo_solver.stores.memory import MemoryStore

CLI = Path(sys.executable).with_name("memo-solver")
TOKEN = "s3cret-operator-token"
YAHTZEE = RULE_SETS["yahtzee"]
LOWER = RULE_SETS["yahtzee-lower"]
QUICK = ApiSettings(deadline_s=30.0)
"""Long enough for any cold state a quick test asks for (a whole small game)."""

# The documented example: ones and yahtzee open, upper 62, dice 1 2 2 2 6, two rerolls.
EXAMPLE_JSON = {
    "filled": [c.name for c in YAHTZEE.categories if c.name not in ("ones", "yahtzee")],
    "upper": 62,
    "yahtzee_bonus": False,
    "rerolls_left": 2,
    "dice": [1, 2, 2, 2, 6],
}
EXAMPLE_FORMS = [
    EXAMPLE_JSON,
    json.dumps(EXAMPLE_JSON),
    "open=ones,yahtzee upper=62 dice=12226 rerolls=2",
    "- x x x x x x x x x x - x 62 False 2 1 2 2 2 6",
]

# Bad states, each in one of the forms a client may send: the error must be the CLI's.
BAD_STATES: list[Any] = [
    {"filled": ["chance"], "dice": [1, 2, 3]},
    {"filled": ["chance", "chance"]},
    {"filled": ["nope"]},
    {"filled": "chance"},
    {"upper": -1},
    {"upper": 7},
    {"upper": 1.5},
    {"yahtzee_bonus": True},
    {"yahtzee_bonus": "yes"},
    {"dice": [1, 2, 3, 4, 7], "rerolls_left": 1},
    {"dice": [1, 2, 3, 4, 5], "rerolls_left": 3},
    {"rerolls_left": 1},
    {"dice": [1, 2, 3, 4, True]},
    {"colour": "red"},
    {"filled": [c.name for c in YAHTZEE.categories], "dice": [1, 1, 1, 1, 1]},
    "",
    "bogus",
    "dice=1222x",
    "upper=abc",
    "filled=chance open=ones",
    "- x x 62 False",
    "{not json",
    '{"upper": 1, "upper": 2}',
]


def line_of(raw: Any) -> str:
    """The state as a line of ``advise -``: text as it is, anything else as JSON."""
    return raw if isinstance(raw, str) else json.dumps(raw)


def cli_error(raw: Any, rules_name: str = "yahtzee") -> dict[str, str]:
    """What ``memo-solver advise`` says of this state: the field and message it prints."""
    try:
        parse_state(line_of(raw), RULE_SETS[rules_name])
    except StateError as exc:
        return {"field": exc.field, "message": exc.message}
    raise AssertionError(f"{raw!r} is a valid state")


# --- the rule sets ---------------------------------------------------------------------------


async def test_rules_are_the_cli_rules(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert memo_cli.main(["rules", "--json"]) == 0
    from_cli = json.loads(capsys.readouterr().out)
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        response = await client.get("/v1/rules")
    assert response.status_code == 200
    # Everything the CLI says of a rule set, the API says alike (it may say more).
    assert len(response.json()) == len(from_cli)
    for served, printed in zip(response.json(), from_cli, strict=True):
        assert {key: served.get(key) for key in printed} == printed
    by_name = {r["name"]: r for r in response.json()}
    assert list(by_name) == list(RULE_SETS)
    for name, rules in RULE_SETS.items():
        assert by_name[name]["boxes"] == [c.name for c in rules.categories]
        assert by_name[name]["description"]
    assert abs(by_name["yahtzee"]["start_value"] - YAHTZEE_PIN) < TOL
    assert abs(by_name["yahtzee-lower"]["start_value"] - LOWER_PIN) < TOL


async def test_rules_say_the_points_each_box_can_hold(tmp_path: Path) -> None:
    """What the page checks a scorecard against: every score a game can put in each box."""
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        response = await client.get("/v1/rules")
    by_name = {r["name"]: r for r in response.json()}
    possible = by_name["yahtzee"]["possible_points"]
    assert list(possible) == by_name["yahtzee"]["boxes"]
    assert possible["sixes"] == [0, 6, 12, 18, 24, 30]
    assert possible["full_house"] == [0, 25]
    assert possible["large_straight"] == [0, 40]
    assert possible["yahtzee"] == [0, 50]
    assert possible["three_of_a_kind"] == [0, *range(5, 31)]
    assert possible["chance"] == list(range(5, 31))  # every roll scores its sum: never 0
    assert by_name["yatzy"]["possible_points"]["large_straight"] == [0, 20]
    for name, rules in RULE_SETS.items():
        served = by_name[name]["possible_points"]
        assert [served[c.name] for c in rules.categories] == list(map(list, rules.possible_points))


# --- advice and values -----------------------------------------------------------------------


async def test_advice_reads_every_state_form_alike(tmp_path: Path) -> None:
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        answers = []
        for form in EXAMPLE_FORMS:
            response = await client.post("/v1/advice", json={"rules": "yahtzee", "state": form})
            assert response.status_code == 200, response.text
            answers.append(response.json())
        default_rules = await client.post("/v1/advice", json={"state": EXAMPLE_JSON})
    for answer in [*answers[1:], default_rules.json()]:
        assert answer == answers[0]
    advice = answers[0]
    assert advice["game_over"] is False
    actions = advice["actions"]
    assert actions[0]["loss"] == 0.0
    assert advice["value"] == actions[0]["value"]
    assert all(a["loss"] >= 0 for a in actions)
    values = [a["value"] for a in actions]
    assert all(
        later <= earlier + TOL for earlier, later in itertools.pairwise(values)
    )  # best first
    scores = {a["category"]: a for a in actions if a["kind"] == "score"}
    assert set(scores) == {"ones", "yahtzee"}
    assert scores["ones"]["points"] == 1
    assert scores["ones"]["bonus"] == 35
    assert scores["ones"]["words"] == "score 1 in Ones (+35 bonus)"
    keeps = [a for a in actions if a["kind"] == "keep"]
    assert all(set(a) == {"kind", "keep", "value", "loss", "words"} for a in keeps)
    assert all(
        set(a) == {"kind", "category", "points", "bonus", "value", "loss", "words"}
        for a in scores.values()
    )


async def test_advice_before_the_roll_and_after_the_game(tmp_path: Path) -> None:
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        start = await client.post("/v1/advice", json={"rules": "yahtzee-lower", "state": "start"})
        over = await client.post(
            "/v1/advice",
            json={
                "rules": "yahtzee-lower",
                "state": {"filled": [c.name for c in LOWER.categories]},
            },
        )
    assert start.status_code == 200
    assert start.json()["game_over"] is False
    assert start.json()["actions"] == []
    assert abs(start.json()["value"] - LOWER_PIN) < TOL
    assert start.json()["turn_start_value"] == start.json()["value"]
    assert over.status_code == 200
    assert over.json() == {"game_over": True, "value": 0.0, "turn_start_value": 0.0, "actions": []}


async def test_a_turn_start_sent_with_every_field_is_the_start(tmp_path: Path) -> None:
    """``dice`` null and all the rerolls: what a form that sends every field sends."""
    sent = {"filled": [], "upper": 0, "yahtzee_bonus": False, "dice": None, "rerolls_left": 2}
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        response = await client.post("/v1/value", json={"rules": "yahtzee-lower", "state": sent})
        refused = await client.post(
            "/v1/value", json={"rules": "yahtzee-lower", "state": {**sent, "rerolls_left": 1}}
        )
    assert response.status_code == 200, response.text
    assert abs(response.json()["value"] - LOWER_PIN) < TOL
    assert "rerolls left can only be 2" in error_of(refused, 422, "rerolls_left")


async def test_yazy_takes_the_box_names_of_its_post(tmp_path: Path) -> None:
    post_names = ["Count 1s", "Count 2s", "Count 3s", "Count 4s", "Count 5s", "Count 6s"]
    post_names += ["3 of a kind", "4 of a kind", "3 + 2", "Sequence of 5"]
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        by_alias = await client.post(
            "/v1/value", json={"rules": "yazy", "state": {"filled": post_names}}
        )
        by_name = await client.post("/v1/value", json={"rules": "yazy", "state": "open=yazy"})
        unknown = await client.post(
            "/v1/value", json={"rules": "yazy", "state": {"filled": ["Chance"]}}
        )
    assert by_alias.status_code == 200, by_alias.text
    assert by_alias.json() == by_name.json()
    assert "or their aliases Count 1s," in error_of(unknown, 422, "filled")


@pytest.mark.parametrize(
    ("rules", "pin"), [("yahtzee-lower", LOWER_PIN), ("yahtzee-upper", UPPER_PIN)]
)
async def test_value_of_the_start_is_the_pin(tmp_path: Path, rules: str, pin: float) -> None:
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        response = await client.post("/v1/value", json={"rules": rules, "state": "start"})
        late = await client.post(
            "/v1/value", json={"rules": rules, "state": {"filled": [], "dice": [6, 6, 6, 6, 6]}}
        )
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"rules", "value", "turn_start_value"}
    assert body["rules"] == rules
    assert abs(body["value"] - pin) < TOL
    assert abs(body["turn_start_value"] - pin) < TOL
    assert late.status_code == 200
    assert abs(late.json()["turn_start_value"] - pin) < TOL
    assert late.json()["value"] > pin  # five sixes on the first roll beat the average start


async def test_advice_equals_the_cli_on_random_states(tmp_path: Path) -> None:
    """200 random late ``yahtzee`` states (1 to 4 boxes open): POST /v1/advice, then one
    ``memo-solver advise --json -`` on the same store file, fed the states as JSON lines
    (bad ones too, which must fail in the same words)."""
    store = tmp_path / "memo.sqlite"
    states = [as_json(s, YAHTZEE) for s in late_states(YAHTZEE, random.Random(2024), 200)]
    lines: list[Any] = [*states, *(raw for raw in BAD_STATES if raw != "")]  # blank: skipped
    async with api_client(store, QUICK) as client:
        from_api = []
        for raw in lines:
            response = await client.post("/v1/advice", json={"rules": "yahtzee", "state": raw})
            from_api.append(response)
    stdin = "".join(line_of(raw) + "\n" for raw in lines)
    done = await anyio.run_process(
        [str(CLI), "--store", str(store), "advise", "--rules", "yahtzee", "--json", "-"],
        input=stdin.encode(),
        check=False,
        env=child_env(),
    )
    assert done.returncode == 2, done.stderr.decode()  # the bad states
    from_cli = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert len(from_cli) == len(lines)
    for number, (response, want) in enumerate(zip(from_api, from_cli, strict=True), start=1):
        if "error" in want:
            assert want["error"].pop("line") == number
            assert response.status_code == 422, (lines[number - 1], response.text)
            assert response.json() == want, lines[number - 1]
        else:
            assert response.status_code == 200, (lines[number - 1], response.text)
            assert_same_advice(response.json(), want, SAME)


# --- the batch -------------------------------------------------------------------------------


async def test_batch_answers_in_order_with_an_error_entry_per_bad_state(tmp_path: Path) -> None:
    states = [as_json(s, YAHTZEE) for s in late_states(YAHTZEE, random.Random(7), 12)]
    mixed: list[Any] = []
    for i, state in enumerate(states):
        mixed += [state, BAD_STATES[i % len(BAD_STATES)]]
    mixed += EXAMPLE_FORMS
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        batch = await client.post("/v1/advice/batch", json={"rules": "yahtzee", "states": mixed})
        singles = [
            await client.post("/v1/advice", json={"rules": "yahtzee", "state": raw})
            for raw in mixed
        ]
        empty = await client.post("/v1/advice/batch", json={"states": []})
    assert batch.status_code == 200, batch.text
    results = batch.json()["results"]
    assert len(results) == len(mixed)
    for raw, result, single in zip(mixed, results, singles, strict=True):
        if single.status_code == 200:
            assert result == {"advice": single.json()}, raw
        else:
            assert single.status_code == 422
            assert result == single.json() == {"error": cli_error(raw)}, raw
    assert empty.status_code == 200
    assert empty.json() == {"results": []}


async def test_batch_takes_at_most_a_thousand_states(tmp_path: Path) -> None:
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        full = await client.post(
            "/v1/advice/batch", json={"rules": "yahtzee-upper", "states": ["start"] * MAX_BATCH}
        )
        over = await client.post(
            "/v1/advice/batch",
            json={"rules": "yahtzee-upper", "states": ["start"] * (MAX_BATCH + 1)},
        )
    assert full.status_code == 200
    results = full.json()["results"]
    assert len(results) == MAX_BATCH
    assert all(abs(r["advice"]["value"] - UPPER_PIN) < TOL for r in results)
    assert "1000" in error_of(over, 422, "states")


# --- coverage, health, readiness --------------------------------------------------------------


async def test_coverage_counts_the_blocks_solved(tmp_path: Path) -> None:
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        before = await client.get("/v1/rules/yahtzee-lower/coverage")
        await client.post("/v1/value", json={"rules": "yahtzee-lower", "state": "start"})
        after = await client.get("/v1/rules/yahtzee-lower/coverage")
        other = await client.get("/v1/rules/yatzy/coverage")
        unknown = await client.get("/v1/rules/nope/coverage")
    empty = {"blocks_done": 0, "claims_held": 0, "workers_alive": 0, "solving": False}
    assert before.json() == {"rules": "yahtzee-lower", "blocks_total": 128, **empty}
    assert after.json() == {
        "rules": "yahtzee-lower",
        "blocks_total": 128,
        "blocks_done": 128,
        "claims_held": 0,
        "workers_alive": 0,
        "solving": False,
    }
    assert other.json() == {"rules": "yatzy", "blocks_total": 32768, **empty}
    assert "unknown rule set 'nope'" in error_of(unknown, 422, "rules")


async def test_health_and_readiness(tmp_path: Path) -> None:
    store = tmp_path / "memo.sqlite"
    async with api_client(store, QUICK) as client:
        health = await client.get("/healthz")
        ready = await client.get("/readyz")
    assert health.status_code == 200
    assert health.json() == {"status": "ok", "pid": str(os.getpid())}  # which process answered
    assert ready.status_code == 200
    assert ready.json() == {"status": "ready", "store": str(store), "write": "accepted"}


# --- operator endpoints -----------------------------------------------------------------------


OPERATOR_CALLS: list[tuple[str, str, dict[str, Any] | None]] = [
    ("POST", "/v1/jobs/precompute", {"rules": "yahtzee-lower"}),
    ("GET", f"/v1/jobs/{Job.precompute('yahtzee-lower').id}", None),
]


@pytest.mark.parametrize(("method", "path", "body"), OPERATOR_CALLS)
async def test_operator_endpoints_are_off_without_a_token_set(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    method: str,
    path: str,
    body: dict[str, Any] | None,
) -> None:
    monkeypatch.delenv(ADMIN_TOKEN_ENV, raising=False)
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        for headers in ({}, bearer(""), bearer(TOKEN)):
            response = await client.request(method, path, json=body, headers=headers)
            message = error_of(response, 403, "authorization")
            assert f"${ADMIN_TOKEN_ENV}" in message


@pytest.mark.parametrize(("method", "path", "body"), OPERATOR_CALLS)
@pytest.mark.parametrize(
    ("authorization", "status", "words"),
    [
        (None, 401, "Authorization: Bearer"),
        ("Bearer", 401, "Authorization: Bearer"),
        ("Bearer ", 401, "Authorization: Bearer"),
        (f"Basic {TOKEN}", 401, "Authorization: Bearer"),
        ("Bearer wrong-token", 403, "wrong operator token"),
        (f"Bearer {TOKEN}x", 403, "wrong operator token"),
        (f"Bearer {TOKEN[:-1]}", 403, "wrong operator token"),
    ],
)
async def test_operator_endpoints_refuse_a_missing_or_wrong_token(
    redis_url: str,
    monkeypatch: pytest.MonkeyPatch,
    method: str,
    path: str,
    body: dict[str, Any] | None,
    authorization: str | None,
    status: int,
    words: str,
) -> None:
    monkeypatch.setenv(ADMIN_TOKEN_ENV, TOKEN)
    headers = {} if authorization is None else {"Authorization": authorization}
    async with api_client(redis_url, QUICK) as client:
        response = await client.request(method, path, json=body, headers=headers)
        assert words in error_of(response, status, "authorization")
        redis = await client.app.state.service.store.client()  # type: ignore[attr-defined]
        assert await redis.keys("*job*") == []  # nothing was queued


@pytest.mark.parametrize(
    "body",
    [
        b'{"rules": 5}',
        b'{"rules": "yahtzee-lower", "extra": 1}',
        b"[]",
        b"{bad",
        b"\xff\xfe",
        b'{"rules": %s}' % (b"[" * 30_000 + b"]" * 30_000),
    ],
    ids=["wrong-type", "extra-key", "not-an-object", "malformed", "not-utf-8", "deep"],
)
async def test_the_operator_token_is_checked_before_the_body(
    redis_url: str, monkeypatch: pytest.MonkeyPatch, body: bytes
) -> None:
    """A client without the token learns nothing of what the body should be: 401, whatever
    it sent; with the token, the same body is the body's error."""
    monkeypatch.setenv(ADMIN_TOKEN_ENV, TOKEN)
    async with api_client(redis_url, QUICK) as client:
        anonymous = await client.post("/v1/jobs/precompute", content=body, headers=JSON)
        operator = await client.post(
            "/v1/jobs/precompute", content=body, headers=JSON | bearer(TOKEN)
        )
    assert "Authorization: Bearer" in error_of(anonymous, 401, "authorization")
    assert operator.status_code in (400, 422), operator.text


async def test_operator_endpoints_queue_and_report_jobs(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ADMIN_TOKEN_ENV, TOKEN)
    job_id = Job.precompute("yahtzee-lower").id
    async with api_client(redis_url, QUICK) as client:
        first = await client.post(
            "/v1/jobs/precompute", json={"rules": "yahtzee-lower"}, headers=bearer(TOKEN)
        )
        again = await client.post(
            "/v1/jobs/precompute", json={"rules": "yahtzee-lower"}, headers=bearer(TOKEN)
        )
        record = await client.get(f"/v1/jobs/{job_id}", headers=bearer(TOKEN))
        missing = await client.get("/v1/jobs/0123456789abcdef", headers=bearer(TOKEN))
        bad_rules = await client.post(
            "/v1/jobs/precompute", json={"rules": "nope"}, headers=bearer(TOKEN)
        )
        scheme_any_case = await client.get(
            f"/v1/jobs/{job_id}", headers={"Authorization": f"bearer {TOKEN}"}
        )
    assert first.status_code == 202, first.text
    assert first.json() | {"record": None} == {
        "job": job_id,
        "status": "queued",
        "queued": True,
        "record": None,
    }
    assert again.status_code == 202
    assert again.json()["queued"] is False
    assert again.json()["job"] == job_id
    assert record.status_code == 200
    assert record.json()["job"] == job_id
    assert record.json()["status"] == "queued"
    assert record.json()["record"]["kind"] == "precompute"
    assert record.json()["record"]["rules"] == "yahtzee-lower"
    assert "0123456789abcdef" in error_of(missing, 404, "job_id")
    assert "unknown rule set 'nope'" in error_of(bad_rules, 422, "rules")
    assert scheme_any_case.status_code == 200


async def test_operator_endpoints_need_the_redis_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ADMIN_TOKEN_ENV, TOKEN)
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        for method, path, body in OPERATOR_CALLS:
            response = await client.request(method, path, json=body, headers=bearer(TOKEN))
            assert "--redis" in error_of(response, 409, "store")


# --- bad requests -----------------------------------------------------------------------------


@pytest.mark.parametrize("raw", BAD_STATES)
@pytest.mark.parametrize("route", ["/v1/advice", "/v1/value"])
async def test_a_bad_state_is_a_422_in_the_cli_words(tmp_path: Path, route: str, raw: Any) -> None:
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        response = await client.post(route, json={"rules": "yahtzee", "state": raw})
    want = cli_error(raw)
    assert error_of(response, 422, want["field"]) == want["message"]


JSON = {"content-type": "application/json"}
BAD_REQUESTS: list[tuple[str, str, bytes | None, int, str, str]] = [
    # method, path, body, status, field, words in the message
    ("POST", "/v1/advice", b"{bad", 400, "body", "malformed JSON"),
    ("POST", "/v1/advice", b'{"state": "start",}', 400, "body", "malformed JSON"),
    ("POST", "/v1/value", b'{"state": "start"', 400, "body", "malformed JSON"),
    ("POST", "/v1/advice/batch", b"[", 400, "body", "malformed JSON"),
    ("POST", "/v1/advice", b"", 422, "body", "required"),
    ("POST", "/v1/advice", b"[]", 422, "body", "dictionary"),
    ("POST", "/v1/advice", b"null", 422, "body", "dictionary"),
    ("POST", "/v1/advice", b"{}", 422, "state", "required"),
    ("POST", "/v1/advice", b'{"state": "start", "extra": 1}', 422, "extra", "not permitted"),
    ("POST", "/v1/advice", b'{"state": "start", "rules": 5}', 422, "rules", "string"),
    ("POST", "/v1/value", b'{"state": "start", "rules": "nope"}', 422, "rules", "unknown"),
    ("POST", "/v1/advice", b'{"state": "start", "rules": "yahtzee2"}', 422, "rules", "unknown"),
    ("POST", "/v1/advice/batch", b'{"states": "start"}', 422, "states", "list"),
    ("POST", "/v1/advice/batch", b'{"states": ["start"], "rules": "x"}', 422, "rules", "unknown"),
    ("POST", "/v1/advice/batch", b"{}", 422, "states", "required"),
    ("POST", "/v1/advice", b'{"state": "\xff\xfe"}', 400, "request", "body"),
    ("GET", "/v1/nope", None, 404, "path", "Not Found"),
    ("GET", "/v1/advice", None, 405, "path", "Method Not Allowed"),
    ("DELETE", "/v1/rules", None, 405, "path", "Method Not Allowed"),
    ("PUT", "/v1/jobs/precompute", b"{}", 405, "path", "Method Not Allowed"),
]


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "field", "words"),
    BAD_REQUESTS,
    ids=[f"{m} {p} {b!r:.30}" for m, p, b, *_ in BAD_REQUESTS],
)
async def test_a_bad_request_is_a_4xx_naming_the_field(
    tmp_path: Path, method: str, path: str, body: bytes | None, status: int, field: str, words: str
) -> None:
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        response = await client.request(method, path, content=body, headers=JSON)
    assert words in error_of(response, status, field)


DEEP = "[" * 100_000 + "]" * 100_000
NASTY: list[Any] = [
    pytest.param("/v1/advice", b'{"state": "\\ud800"}', id="surrogate-text-state"),
    pytest.param("/v1/advice", b'{"state": "filled=\\ud800"}', id="surrogate-box"),
    pytest.param("/v1/advice", b'{"rules": "\\ud800", "state": "start"}', id="surrogate-rules"),
    pytest.param("/v1/advice", b'{"state": {"\\ud800": 1}}', id="surrogate-key"),
    pytest.param(
        "/v1/advice/batch",
        b'{"states": [{"\\ud800": 1}]}',
        id="surrogate-key-in-batch",
    ),
    pytest.param(
        "/v1/value",
        b'{"state": "{\\"\\\\ud800\\": 1, \\"\\\\ud800\\": 2}"}',
        id="surrogate-key-twice",
    ),
    pytest.param("/v1/advice", b'{"state": "\\u0000"}', id="nul"),
    pytest.param("/v1/advice", b'{"state": %s}' % DEEP.encode(), id="deep-body"),
    pytest.param("/v1/advice", b'{"state": "%s"}' % DEEP.encode(), id="deep-text-state"),
    pytest.param(
        "/v1/advice",
        b'{"state": "{\\"a\\": %s}"}' % DEEP.encode(),
        id="deep-json-state",
    ),
    pytest.param("/v1/advice", b'{"state": {"upper": %s}}' % (b"9" * 5000), id="huge-int"),
    pytest.param(
        "/v1/advice", b'{"state": "{\\"upper\\": %s}"}' % (b"9" * 5000), id="huge-int-text"
    ),
    pytest.param("/v1/advice", b'{"state": "upper=%s"}' % (b"9" * 5000), id="huge-int-short"),
    pytest.param("/v1/advice", b'{"state": {"upper": 1e999}}', id="infinity"),
    pytest.param("/v1/advice", b'{"state": {"upper": NaN}}', id="nan"),
    pytest.param("/v1/advice", b'{"state": {"dice": [1, 2, 3, 4, -1e308]}}', id="float-die"),
    pytest.param("/v1/advice/batch", b'{"states": [%s]}' % b",".join([b"{}"] * 1001), id="1001"),
]


@pytest.mark.parametrize(("path", "body"), NASTY)
async def test_nothing_a_client_sends_is_a_500(tmp_path: Path, path: str, body: bytes) -> None:
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        response = await client.post(path, content=body, headers=JSON)
    assert response.status_code < 500, (response.status_code, response.text[:300])
    if response.status_code == 200:  # a batch: each bad state gets its own error entry
        assert path == "/v1/advice/batch"
        assert all(set(r) == {"error"} for r in response.json()["results"]), response.text
    else:
        error_of(response, response.status_code)


WRONG_TYPES = [[1, 2], 5, None, True]


def wrong_type_error(raw: Any) -> dict[str, str]:
    """What the CLI says of a JSON state that is not an object."""
    return {"field": "state", "message": f"expected a JSON object, got {json.dumps(raw)}"}


@pytest.mark.parametrize("raw", WRONG_TYPES)
async def test_a_state_of_the_wrong_type_is_reported_at_state(tmp_path: Path, raw: Any) -> None:
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        response = await client.post("/v1/advice", json={"state": raw})
    assert response.status_code == 422
    assert response.json() == {"error": wrong_type_error(raw)}


@pytest.mark.parametrize("raw", WRONG_TYPES)
async def test_a_batch_state_of_the_wrong_type_gets_its_own_error(tmp_path: Path, raw: Any) -> None:
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        response = await client.post(
            "/v1/advice/batch", json={"rules": "yahtzee-upper", "states": ["start", raw]}
        )
    assert response.status_code == 200, response.text
    assert response.json()["results"][1] == {"error": wrong_type_error(raw)}


async def test_a_body_over_the_limit_is_a_413(tmp_path: Path) -> None:
    settings = ApiSettings(deadline_s=30.0, max_body_bytes=1000)
    states = ["start"] * 200  # about 1.8 kB
    async with api_client(tmp_path / "memo.sqlite", settings) as client:
        announced = await client.post(
            "/v1/advice/batch", json={"rules": "yahtzee-upper", "states": states}
        )
        under = await client.post(
            "/v1/advice/batch", json={"rules": "yahtzee-upper", "states": states[:50]}
        )
    assert "over 1000 bytes" in error_of(announced, 413, "body")
    assert under.status_code == 200


async def test_a_streamed_body_over_the_limit_is_a_413(tmp_path: Path) -> None:
    settings = ApiSettings(deadline_s=30.0, max_body_bytes=1000)

    async def chunks() -> Any:
        yield b'{"rules": "yahtzee-upper", "state": "'
        for _ in range(200):
            yield b"          "
        yield b'start"}'

    async with api_client(tmp_path / "memo.sqlite", settings) as client:
        response = await client.post("/v1/value", content=chunks(), headers=JSON)
    assert "transfer-encoding" in response.request.headers  # no Content-Length sent
    assert "over 1000 bytes" in error_of(response, 413, "body")


# --- deadlines: 503 while the work goes on ----------------------------------------------------


async def poll_until_ok(
    client: httpx.AsyncClient, path: str, body: dict[str, Any], within_s: float
) -> tuple[httpx.Response, int]:
    """Ask every 0.5 s until 200 (each 503 checked on the way); the answer and the 503s."""
    unavailable = 0
    with anyio.fail_after(within_s):
        while True:
            response = await client.post(path, json=body)
            if response.status_code == 200:
                return response, unavailable
            assert "still computing" in error_of(response, 503, "state")
            assert response.headers["retry-after"] == "2"
            unavailable += 1
            await anyio.sleep(0.5)


async def test_a_cold_state_past_its_deadline_is_a_503_and_the_retry_is_warm(
    tmp_path: Path,
) -> None:
    """A small game, a tiny deadline: the 503 comes back at once, the work lands anyway."""
    body = {"rules": "yahtzee-lower", "state": "start"}
    async with api_client(tmp_path / "memo.sqlite", ApiSettings(deadline_s=0.001)) as client:
        first = await client.post("/v1/value", json=body)
        assert "retry shortly" in error_of(first, 503, "state")
        assert first.headers["retry-after"] == "2"
        answer, _ = await poll_until_ok(client, "/v1/value", body, within_s=20)
        coverage = await client.get("/v1/rules/yahtzee-lower/coverage")
    assert abs(answer.json()["value"] - LOWER_PIN) < TOL
    assert coverage.json()["blocks_done"] == 128


@pytest.mark.slow
async def test_a_cold_whole_game_past_its_deadline_goes_on_until_answered(
    tmp_path: Path,
) -> None:
    """The whole ``yahtzee`` game, cold, with a 0.05 s deadline (about 9 s of work)."""
    body = {"rules": "yahtzee", "state": "start"}
    async with api_client(tmp_path / "memo.sqlite", ApiSettings(deadline_s=0.05)) as client:
        started = time.monotonic()
        first = await client.post("/v1/value", json=body)
        assert time.monotonic() - started < 2  # the deadline, not the work
        assert "still computing" in error_of(first, 503, "state")
        assert first.headers["retry-after"] == "2"
        answer, unavailable = await poll_until_ok(client, "/v1/value", body, within_s=60)
        assert unavailable >= 1  # it did take longer than a retry
        coverage = await client.get("/v1/rules/yahtzee/coverage")
    assert abs(answer.json()["value"] - YAHTZEE_PIN) < TOL
    assert coverage.json()["blocks_done"] == coverage.json()["blocks_total"] == 8192


@pytest.mark.slow
async def test_advice_equals_the_cli_on_random_whole_game_states(tmp_path: Path) -> None:
    """Like the late-state check, on states from anywhere in the game: the store is
    precomputed first (by the CLI), so both sides are warm."""
    store = tmp_path / "memo.sqlite"
    solve = await anyio.run_process(
        [str(CLI), "--store", str(store), "precompute", "--rules", "yahtzee"],
        check=False,
        env=child_env(),
    )
    assert solve.returncode == 0, solve.stderr.decode()
    rng = random.Random(99)
    states = [
        as_json(random_state(YAHTZEE, rng, rng.randrange(YAHTZEE.all_filled)), YAHTZEE)
        for _ in range(200)
    ]
    async with api_client(store, QUICK) as client:
        batch = await client.post("/v1/advice/batch", json={"states": states})
        singles = [await client.post("/v1/advice", json={"state": s}) for s in states]
        computed = (await client.get("/metrics")).text
    done = await anyio.run_process(
        [str(CLI), "--store", str(store), "advise", "--rules", "yahtzee", "--json", "-"],
        input="".join(json.dumps(s) + "\n" for s in states).encode(),
        check=False,
        env=child_env(),
    )
    assert done.returncode == 0, done.stderr.decode()
    from_cli = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert len(from_cli) == len(states)
    for single, result, want in zip(singles, batch.json()["results"], from_cli, strict=True):
        assert single.status_code == 200
        assert_same_advice(single.json(), want, SAME)
        assert result == {"advice": single.json()}
    assert 'memo_solver_blocks_computed_total{rules="yahtzee"} 0.0' in computed  # all warm


# --- Redis going away -------------------------------------------------------------------------


async def test_readiness_follows_redis_and_comes_back_by_itself(
    fresh_redis: RedisServer,
) -> None:
    lower = {"rules": "yahtzee-lower", "state": "start"}
    async with api_client(fresh_redis.url, QUICK) as client:
        assert (await client.get("/readyz")).status_code == 200
        warm = await client.post("/v1/value", json=lower)
        assert abs(warm.json()["value"] - LOWER_PIN) < TOL
        fresh_redis.kill()
        with anyio.fail_after(15):
            down = await client.get("/readyz")
            assert "cannot reach Redis" in error_of(down, 503, "store")
            assert down.headers["retry-after"] == "2"
            coverage = await client.get("/v1/rules/yahtzee-lower/coverage")
            error_of(coverage, 503, "store")
            # What this process holds in memory is still served.
            still = await client.post("/v1/value", json=lower)
            assert still.status_code == 200
            assert still.json() == warm.json()
        fresh_redis.start()
        with anyio.fail_after(15):
            up = await client.get("/readyz")
            assert up.status_code == 200, up.text
            assert up.json() == {"status": "ready", "store": fresh_redis.url, "write": "accepted"}


async def poll_while_unavailable(
    client: httpx.AsyncClient, path: str, body: dict[str, Any], within_s: float
) -> httpx.Response:
    """Ask every 0.2 s until the answer is not a 503 (each 503 checked); that answer."""
    with anyio.fail_after(within_s):
        while True:
            response = await client.post(path, json=body)
            if response.status_code != 503:
                return response
            error_of(response, 503)
            assert response.headers["retry-after"] == "2"
            await anyio.sleep(0.2)


async def test_a_cold_state_without_redis_is_a_503_and_the_service_recovers(
    fresh_redis: RedisServer,
) -> None:
    lower = {"rules": "yahtzee-lower", "state": "start"}
    async with api_client(fresh_redis.url, QUICK) as client:
        fresh_redis.kill()
        with anyio.fail_after(15):
            down = await client.post("/v1/advice", json=lower)
            assert "cannot reach Redis" in error_of(down, 503, "store")
            assert down.headers["retry-after"] == "2"
            assert (await client.get("/readyz")).status_code == 503
        fresh_redis.start()
        up = await poll_while_unavailable(client, "/v1/advice", lower, within_s=30)
        assert up.status_code == 200, up.text
        assert abs(up.json()["value"] - LOWER_PIN) < TOL


async def test_a_cold_state_after_a_redis_restart_is_answered(fresh_redis: RedisServer) -> None:
    """No request needs Redis while it is down; the first cold one after it is back must
    still be answered (the store's pooled connections went stale meanwhile)."""
    upper = {"rules": "yahtzee-upper", "state": "start"}
    async with api_client(fresh_redis.url, QUICK) as client:
        warm = await client.post("/v1/value", json={"rules": "yahtzee-lower", "state": "start"})
        assert warm.status_code == 200
        fresh_redis.kill()
        with anyio.fail_after(15):
            assert (await client.get("/readyz")).status_code == 503
        fresh_redis.start()
        with anyio.fail_after(15):
            while True:
                if (await client.get("/readyz")).status_code == 200:
                    break
                await anyio.sleep(0.2)
        up = await poll_while_unavailable(client, "/v1/value", upper, within_s=30)
        assert up.status_code == 200, up.text
        assert abs(up.json()["value"] - UPPER_PIN) < TOL


# --- store faults: JSON with Retry-After, 507 when full, and readiness that writes -----------


def store_fault_of(response: httpx.Response, status: int) -> str:
    """Assert ``response`` is the store's error JSON with Retry-After; its message."""
    message = error_of(response, status, "store")
    assert response.headers["retry-after"] == "2"
    return message


async def test_a_full_sqlite_store_answers_507_and_is_not_ready(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = await store_file(tmp_path / "memo.sqlite")
    on_every_connection(monkeypatch, FULL)
    async with api_client(path, QUICK) as client:
        cold = await client.post("/v1/value", json={"rules": "yahtzee-lower", "state": "start"})
        ready = await client.get("/readyz")
        health = await client.get("/healthz")
    assert f"the store {path} is full" in store_fault_of(cold, 507)
    assert "is full" in store_fault_of(ready, 503)  # not ready, whatever the fault
    assert health.status_code == 200  # the process itself is fine


async def test_a_read_only_sqlite_store_serves_what_it_holds_and_is_not_ready(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "memo.sqlite"
    lower = {"rules": "yahtzee-lower", "state": "start"}
    async with api_client(path, QUICK) as client:
        assert (await client.post("/v1/value", json=lower)).status_code == 200
    on_every_connection(monkeypatch, READ_ONLY)
    async with api_client(path, QUICK) as client:
        warm = await client.post("/v1/value", json=lower)
        cold = await client.post("/v1/value", json={"rules": "yahtzee-upper", "state": "start"})
        ready = await client.get("/readyz")
    assert abs(warm.json()["value"] - LOWER_PIN) < TOL
    assert f"the store {path} refused the write" in store_fault_of(cold, 503)
    assert "writable" in store_fault_of(ready, 503)


async def test_an_sqlite_store_locked_by_another_writer_is_ready_and_busy(tmp_path: Path) -> None:
    """A precompute in another process holds the write lock while it commits: the service
    is sound, and says so at once (the probe waits 50 ms for the lock, not 30 s)."""
    path = await store_file(tmp_path / "memo.sqlite")
    precompute = sqlite3.connect(path, isolation_level=None)
    try:
        async with api_client(path, QUICK) as client:
            precompute.execute("BEGIN IMMEDIATE")
            with anyio.fail_after(5):
                busy = await client.get("/readyz")
            precompute.execute("ROLLBACK")
            free = await client.get("/readyz")
    finally:
        precompute.close()
    assert busy.status_code == 200, busy.text
    assert busy.json() == {"status": "ready", "store": str(path), "write": "busy"}
    assert free.json()["write"] == "accepted"


async def test_a_redis_at_maxmemory_is_a_refused_write_and_not_ready(
    fresh_redis: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ADMIN_TOKEN_ENV, TOKEN)
    async with api_client(fresh_redis.url, QUICK) as client:
        with fresh_redis.client() as redis_client, redis_at_maxmemory(redis_client):
            ready = await client.get("/readyz")
            cold = await client.post("/v1/value", json={"rules": "yahtzee-lower", "state": "start"})
            job = await client.post(
                "/v1/jobs/precompute", json={"rules": "yahtzee-lower"}, headers=bearer(TOKEN)
            )
        again = await client.get("/readyz")
    refused = f"Redis at {fresh_redis.url} refused the write: OOM"
    for answer, status in ((ready, 503), (cold, 507), (job, 507)):
        message = store_fault_of(answer, status)
        assert message.startswith(refused), message
        assert "cannot reach" not in message
    assert again.status_code == 200, again.text


# --- metrics ----------------------------------------------------------------------------------


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a Prometheus exposition, by name and sorted labels."""
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


async def test_metrics_count_requests_latency_and_engine_work(tmp_path: Path) -> None:
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        before = samples((await client.get("/metrics")).text)
        for _ in range(3):
            await client.post("/v1/advice", json={"rules": "yahtzee-lower", "state": "start"})
        await client.post("/v1/advice", json={"rules": "nope", "state": "start"})
        await client.get("/v1/nope")
        response = await client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    after = samples(response.text)
    families = {f.name for f in text_string_to_metric_families(response.text)}
    assert {
        "memo_solver_requests",
        "memo_solver_request_seconds",
        "memo_solver_blocks_computed",
        "memo_solver_cache_hit_ratio",
    } <= families

    def grew(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after[key] - before.get(key, 0.0)

    assert grew("memo_solver_requests_total", route="/v1/advice", status="200") == 3
    assert grew("memo_solver_requests_total", route="/v1/advice", status="422") == 1
    assert grew("memo_solver_requests_total", route="unmatched", status="404") == 1
    assert grew("memo_solver_request_seconds_count", route="/v1/advice") == 4
    assert grew("memo_solver_request_seconds_bucket", route="/v1/advice", le="+Inf") == 4
    assert after[("memo_solver_request_seconds_sum", (("route", "/v1/advice"),))] > 0
    assert after[("memo_solver_blocks_computed_total", (("rules", "yahtzee-lower"),))] == 128
    ratio = after[("memo_solver_cache_hit_ratio", (("rules", "yahtzee-lower"),))]
    assert 0 < ratio < 1  # the two warm calls hit the in-process cache


async def test_metrics_count_a_request_past_its_deadline(tmp_path: Path) -> None:
    body = {"rules": "yahtzee-lower", "state": "start"}
    deadline = ("memo_solver_deadline_exceeded_total", ())
    async with api_client(tmp_path / "memo.sqlite", ApiSettings(deadline_s=0.001)) as client:
        before = samples((await client.get("/metrics")).text)
        cold = await client.post("/v1/value", json=body)
        after = samples((await client.get("/metrics")).text)
    assert "still computing" in error_of(cold, 503, "state")
    assert after[deadline] - before.get(deadline, 0.0) == 1


# --- the OpenAPI document ---------------------------------------------------------------------


def test_committed_openapi_json_is_the_apps_document() -> None:
    committed = OPENAPI_PATH.read_text(encoding="utf-8")
    assert committed == openapi_document(build_app(MemoryStore)), (
        "openapi.json is out of date: run .venv/bin/python scripts/tools/export_openapi.py"
    )


async def test_served_openapi_document_is_the_committed_one(tmp_path: Path) -> None:
    async with api_client(tmp_path / "memo.sqlite", QUICK) as client:
        served = await client.get("/openapi.json")
        docs = await client.get("/docs")
    assert served.status_code == 200
    assert served.json() == json.loads(OPENAPI_PATH.read_text(encoding="utf-8"))
    assert docs.status_code == 200


def test_export_script_checks_and_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "openapi.json"
    run: Callable[..., int] = export_openapi.main
    assert run(["--check", "--output", str(target)]) == 1
    assert capsys.readouterr().err.count("\n") == 1
    assert run(["--output", str(target)]) == 0
    assert target.read_text(encoding="utf-8") == OPENAPI_PATH.read_text(encoding="utf-8")
    capsys.readouterr()
    assert run(["--check", "--output", str(target)]) == 0
    target.write_text(target.read_text(encoding="utf-8").replace("memo-solver", "memo"))
    assert run(["--check", "--output", str(target)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "differs" in err
    assert run(["--check"]) == 0  # the committed file
