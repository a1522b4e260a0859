"""Rule sets over HTTP: sent inline, registered once and named by name or fingerprint, listed
a page at a time, deleted by an operator; engines for them capped; cold questions past the
budget refused or handed to the workers."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from support.api_support import api_client, bearer, error_of

from memo_solver.core.engine import namespace_of
from memo_solver.games.yahtzee.need_entries import need_entry
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.rules.rule_file import (
    parse_rule_set,
    read_rule_file,
    rule_set_document,
)
from memo_solver.jobs.queue import Job, beat
from memo_solver.service.app import ApiSettings
from memo_solver.service.settings import ADMIN_TOKEN_ENV
from memo_solver.stores.sqlite import SQLiteStore

EXAMPLES = Path(__file__).parent.parent / "examples" / "rules"
FORCED = json.loads((EXAMPLES / "yatzy-forced.json").read_text())
FORCED_PIN = 122.5585273964
TOL = 1e-9

# Three boxes and two dice: cold in milliseconds, and a player checks its moves by hand.
TINY: dict[str, Any] = {
    "name": "tiny",
    "dice": 2,
    "boxes": [
        {"name": "sixes", "kind": "upper", "face": 6, "aliases": ["Boxcars"]},
        {"name": "doubles", "kind": "all_alike", "points": 20},
        {"name": "chance", "kind": "chance"},
    ],
}
LATE = {"filled": ["chance"], "dice": [6, 6], "rerolls_left": 0}


async def _value(client: httpx.AsyncClient, rules: object, state: object = "start") -> float:
    response = await client.post("/v1/value", json={"rules": rules, "state": state})
    assert response.status_code == 200, response.text
    return float(response.json()["value"])


async def test_a_rule_set_sent_inline_is_solved_and_its_definition_kept(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    async with api_client(path) as client:
        assert await _value(client, FORCED) == pytest.approx(FORCED_PIN, abs=TOL)
        advice = await client.post("/v1/advice", json={"rules": TINY, "state": LATE})
        assert advice.status_code == 200, advice.text
        best = advice.json()["actions"][0]
        # 20 now, then the sixes box: each of two dice ends a six in three rolls with
        # chance 1 - (5/6)**3, worth 6 apiece; scoring 12 in sixes leaves less in doubles.
        assert best["category"] == "doubles"
        assert best["value"] == pytest.approx(20 + 12 * (1 - (5 / 6) ** 3), abs=TOL)
        by_alias = {"filled": ["doubles", "Boxcars"], "dice": [1, 2], "rerolls_left": 0}
        assert await _value(client, TINY, by_alias) == pytest.approx(3.0)
    fingerprint = read_rule_file(EXAMPLES / "yatzy-forced.json").fingerprint
    async with SQLiteStore(path) as store:
        stored = await store.definition(namespace_of(fingerprint))
    assert stored is not None
    assert json.loads(stored)["name"] == "yatzy-forced"


async def test_register_once_then_name_it_or_its_fingerprint(tmp_path: Path) -> None:
    async with api_client(tmp_path / "s.sqlite") as client:
        first = await client.post("/v1/rules", json=FORCED)
        assert first.status_code == 201, first.text
        fingerprint = first.json()["fingerprint"]
        assert first.json() == {"name": "yatzy-forced", "fingerprint": fingerprint, "created": True}
        again = await client.post("/v1/rules", json=FORCED)
        assert (again.status_code, again.json()["created"]) == (200, False)
        assert await _value(client, "yatzy-forced") == pytest.approx(FORCED_PIN, abs=TOL)
        assert await _value(client, fingerprint) == pytest.approx(FORCED_PIN, abs=TOL)
        listed = (await client.get("/v1/rules")).json()
        mine = [r for r in listed if r["name"] == "yatzy-forced"]
        assert mine
        assert mine[0]["built_in"] is False
        assert mine[0]["order"] == "forced"
        coverage = (await client.get("/v1/rules/yatzy-forced/coverage")).json()
        assert coverage["blocks_done"] == coverage["blocks_total"] == 16


async def test_a_name_holding_other_rules_or_a_built_in_name_is_a_409(tmp_path: Path) -> None:
    other = copy.deepcopy(FORCED)
    other["upper_bonus"] = 35
    fake = rule_set_document(RULE_SETS["yatzy"]) | {"name": "yahtzee"}
    async with api_client(tmp_path / "s.sqlite") as client:
        assert (await client.post("/v1/rules", json=FORCED)).status_code == 201
        error_of(await client.post("/v1/rules", json=other), 409, "name")
        error_of(await client.post("/v1/rules", json=fake), 409, "name")
        same = rule_set_document(RULE_SETS["yahtzee"])
        assert (await client.post("/v1/rules", json=same)).status_code == 200


@pytest.mark.parametrize("on", ["sqlite", "redis"])
async def test_of_concurrent_registrations_of_one_rule_set_one_creates_it(
    tmp_path: Path, request: pytest.FixtureRequest, on: str
) -> None:
    """Fifty clients send the same rule set at once: one 201 created, forty-nine 200, as
    if they had come one after another."""
    store = tmp_path / "s.sqlite" if on == "sqlite" else request.getfixturevalue("redis_url")
    async with api_client(store) as client:
        answers: list[httpx.Response] = []

        async def register() -> None:
            answers.append(await client.post("/v1/rules", json=TINY))

        async with anyio.create_task_group() as tg:
            for _ in range(50):
                tg.start_soon(register)
    created = sorted((r.status_code, r.json()["created"]) for r in answers)
    assert created == [(200, False)] * 49 + [(201, True)], [r.text for r in answers]


SURROGATE_ROUTES = [
    ("/v1/advice", b'{"rules": "\\ud800", "state": "start"}'),
    ("/v1/value", b'{"rules": "\\ud800", "state": "start"}'),
    ("/v1/advice/batch", b'{"rules": "\\ud800", "states": ["start"]}'),
    ("/v1/stats", b'{"rules": "\\ud800"}'),
    ("/v1/review", b'{"rules": "\\ud800", "game": {"turns": []}}'),
    ("/v1/jobs/precompute", b'{"rules": "\\ud800"}'),
]


@pytest.mark.parametrize("on", ["sqlite", "redis"])
async def test_a_lone_surrogate_as_rules_is_a_422_naming_rules(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, on: str
) -> None:
    """JSON may spell half a UTF-16 pair (``"\\ud800"``), which is no text a store can
    hold: no rule set is named so, whatever the store (one holding registrations too)."""
    monkeypatch.setenv(ADMIN_TOKEN_ENV, "s3cret")
    store = tmp_path / "s.sqlite" if on == "sqlite" else request.getfixturevalue("redis_url")
    async with api_client(store) as client:
        assert (await client.post("/v1/rules", json=TINY)).status_code == 201
        for path, body in SURROGATE_ROUTES:
            headers = {"content-type": "application/json", **bearer("s3cret")}
            response = await client.post(path, content=body, headers=headers)
            assert "unknown rule set" in error_of(response, 422, "rules"), path


@pytest.mark.parametrize("on", ["sqlite", "redis"])
async def test_a_rule_set_nested_past_the_json_parser_is_a_422(
    tmp_path: Path, request: pytest.FixtureRequest, on: str
) -> None:
    """60 KB of nested arrays: deeper than Python's JSON parser goes (RecursionError)."""
    store = tmp_path / "s.sqlite" if on == "sqlite" else request.getfixturevalue("redis_url")
    deep = b"[" * 30_000 + b"]" * 30_000
    async with api_client(store) as client:
        for body in (deep, b'{"name": "deep", "boxes": %s}' % deep):
            message = error_of(await client.post("/v1/rules", content=body), 422, "rules")
            assert "nested deeper than a rule set is" in message


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b"{not json", "rules"),
        (json.dumps(TINY | {"dice": 7}).encode(), "dice"),
        (json.dumps(TINY | {"boxes": []}).encode(), "boxes"),
        (json.dumps(TINY | {"house": 1}).encode(), "house"),
        (
            json.dumps(TINY | {"boxes": [{**TINY["boxes"][1], "points": 10**30}]}).encode(),
            "boxes[0].points",
        ),
    ],
)
async def test_a_bad_rule_set_is_a_422_naming_its_field(
    tmp_path: Path, body: bytes, field: str
) -> None:
    async with api_client(tmp_path / "s.sqlite") as client:
        error_of(await client.post("/v1/rules", content=body), 422, field)
        inline = json.loads(body) if field != "rules" else "not json at all"
        response = await client.post("/v1/value", json={"rules": inline, "state": "start"})
        error_of(response, 422, field if field != "rules" else "rules")
        listed = [r["name"] for r in (await client.get("/v1/rules")).json()]
        assert listed == list(RULE_SETS)  # nothing reached the store


async def test_a_rule_set_over_the_size_limit_is_a_413(tmp_path: Path) -> None:
    async with api_client(tmp_path / "s.sqlite") as client:
        huge = json.dumps(TINY | {"description": "x" * 70_000}).encode()
        error_of(await client.post("/v1/rules", content=huge), 413, "rules")


async def test_the_list_comes_a_page_at_a_time(tmp_path: Path) -> None:
    async with api_client(tmp_path / "s.sqlite") as client:
        for i in range(5):
            assert (await client.post("/v1/rules", json=TINY | {"name": f"tiny-{i}"})).status_code
        names: list[str] = []
        url: str | None = "/v1/rules?limit=4"
        pages = 0
        while url is not None:
            response = await client.get(url)
            names += [r["name"] for r in response.json()]
            link = response.headers.get("link")
            url = None if link is None else link.split(";")[0].strip("<>")
            pages += 1
        assert names == [*RULE_SETS, *(f"tiny-{i}" for i in range(5))]
        assert pages == 4  # 10 built-ins and 5 registered, four at a time


async def test_an_operator_deletes_a_registration_and_its_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ADMIN_TOKEN_ENV, "s3cret")
    async with api_client(tmp_path / "s.sqlite") as client:
        await client.post("/v1/rules", json=TINY)
        await client.post("/v1/rules", json=TINY | {"name": "tiny-copy"})
        assert await _value(client, "tiny") > 0
        error_of(await client.delete("/v1/rules/tiny"), 401, "authorization")
        gone = await client.delete("/v1/rules/tiny", headers=bearer("s3cret"))
        assert gone.json()["blocks_deleted"] is False  # tiny-copy shares them
        error_of(
            await client.post("/v1/value", json={"rules": "tiny", "state": "start"}), 422, "rules"
        )
        last = await client.delete("/v1/rules/tiny-copy", headers=bearer("s3cret"))
        assert last.json()["blocks_deleted"] is True
        coverage = await client.get(f"/v1/rules/{gone.json()['fingerprint']}/coverage")
        error_of(coverage, 422, "rules")  # no definition, no blocks: unknown
        error_of(await client.delete("/v1/rules/tiny", headers=bearer("s3cret")), 404, "name")
        error_of(await client.delete("/v1/rules/yahtzee", headers=bearer("s3cret")), 409, "name")


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
async def test_deleting_a_rule_set_deletes_its_need_tables_and_fails_their_jobs(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A need table keeps a definition of its own, which would leave it known to ``prune``
    for good: it goes with the rule set's mean values, and its queued jobs fail (Redis)."""
    monkeypatch.setenv(ADMIN_TOKEN_ENV, "s3cret")
    where = tmp_path / "s.sqlite" if kind == "sqlite" else request.getfixturevalue("redis_url")
    rules = parse_rule_set(TINY)
    need = need_entry(rules, 400).game.fingerprint
    async with api_client(where) as client:
        service = client.app.state.service  # type: ignore[attr-defined]
        await client.post("/v1/rules", json=TINY)
        assert await _value(client, "tiny") > 0
        asked = {"rules": "tiny", "state": "start", "need": 20}
        assert (await client.post("/v1/value", json=asked)).status_code == 200
        assert await service.store.namespaces() == sorted(
            [namespace_of(rules.fingerprint), namespace_of(need)]
        )
        job = Job.precompute(need)
        if service.queue is not None:
            await service.queue.enqueue(job)

        gone = await client.delete("/v1/rules/tiny", headers=bearer("s3cret"))
        assert gone.json()["blocks_deleted"] is True
        assert await service.store.namespaces() == []
        if service.queue is not None:
            record = await service.queue.record(job.id)
            assert record["status"] == "failed"
            assert "the rule set 'tiny' was deleted" in record["error"]


async def test_engines_for_rule_sets_are_capped(tmp_path: Path) -> None:
    settings = ApiSettings(rule_engines=2)
    async with api_client(tmp_path / "s.sqlite", settings) as client:
        for points in range(20, 25):
            rules = TINY | {"name": f"tiny-{points}"}
            rules["boxes"] = [*TINY["boxes"][:1], {**TINY["boxes"][1], "points": points}]
            assert await _value(client, rules) > 0
        pool = client.app.state.service.pool  # type: ignore[attr-defined]
        assert len(pool) <= 2


async def test_a_cold_question_past_the_budget_is_refused_naming_it(tmp_path: Path) -> None:
    settings = ApiSettings(cold_budget=5_000)
    async with api_client(tmp_path / "s.sqlite", settings) as client:
        response = await client.post("/v1/value", json={"rules": "maxi-yatzy", "state": "start"})
        message = error_of(response, 422, "state")
        assert "89,128,960 turn starts" in message
        assert "budget of 5,000" in message
        assert "POST /v1/solve" in message  # offered: the client is on loopback
        # Five open boxes of yahtzee-upper: 32 blocks of 64 turn starts, within the budget.
        assert await _value(client, "yahtzee-upper", {"filled": ["ones"]}) > 0


async def test_a_cold_question_past_the_budget_goes_to_live_workers(redis_url: str) -> None:
    """With a worker alive, the question is queued for it (one warm job, named by the rule
    set's fingerprint for a rule set sent inline) and the client told to retry."""
    settings = ApiSettings(cold_budget=5_000)
    maxi = rule_set_document(RULE_SETS["maxi-yatzy"]) | {"name": "my-maxi", "upper_bonus": 50}
    async with api_client(redis_url, settings) as client:
        service = client.app.state.service  # type: ignore[attr-defined]
        await beat(await service.store.client(), "w1", {"worker": "w1"}, ttl_s=60)
        response = await client.post("/v1/value", json={"rules": maxi, "state": "start"})
        message = error_of(response, 503, "state")
        assert "went to the workers" in message
        assert response.headers["retry-after"]
        rules = parse_rule_set(maxi)
        _, records = await service.queue.recent_jobs()
        (job,) = [record for record in records if record.get("kind") == "warm"]
        assert job["rules"] == rules.fingerprint
        stored = await service.store.definition(namespace_of(rules.fingerprint))
        assert stored is not None
        assert json.loads(stored)["name"] == "my-maxi"


async def test_deleting_a_rule_set_fails_its_queued_and_running_jobs_and_only_those(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its precompute, running, and the block jobs it fanned out, queued, fail saying the
    rule set was deleted: a worker finishing one afterwards keeps that end (never "done" on
    blocks that are gone), and a worker taking one still queued drops it. Another rule
    set's job, and a done one, keep theirs."""
    monkeypatch.setenv(ADMIN_TOKEN_ENV, "s3cret")
    async with api_client(redis_url) as client:
        queue = client.app.state.service.queue  # type: ignore[attr-defined]
        fingerprint = (await client.post("/v1/rules", json=TINY)).json()["fingerprint"]
        precompute, block = Job.precompute(fingerprint), Job.block(fingerprint, "0")
        done, other = Job.block(fingerprint, "1"), Job.precompute("yahtzee-lower")
        for job in (precompute, block, done, other):
            await queue.enqueue(job)
        assert await queue.start(precompute.id, status="running", worker="w1")
        assert await queue.start(done.id, status="running", worker="w1")
        await queue.finish(done.id, 60, status="done")

        gone = await client.delete("/v1/rules/tiny", headers=bearer("s3cret"))
        assert gone.json()["blocks_deleted"] is True

        records = {job: await queue.record(job.id) for job in (precompute, block, done, other)}
        for job in (precompute, block):
            assert records[job]["status"] == "failed"
            assert "the rule set 'tiny' was deleted" in records[job]["error"]
        assert (records[done]["status"], records[other]["status"]) == ("done", "queued")
        await queue.finish(precompute.id, 60, status="done")  # its worker ends it
        assert (await queue.record(precompute.id))["status"] == "failed"
        assert not await queue.start(block.id, status="running", worker="w2")
        assert (await queue.record(block.id))["status"] == "failed"
