"""Workers end to end: real ``python -m worker`` processes and CLIs on a real redis-server.

What the shared memo promises, checked from the outside:

- exactly once: three workers, a queued job and two CLI queries of the start value (each
  computing what it needs in its own process), all on one rule set at once, compute its
  8,192 blocks once between them (the counters add up);
- a worker killed while it holds claims costs the others about one lease;
- a Redis crash loses no block it had written to its AOF, the worker reconnects by itself,
  the job finishes, and nothing that survived is computed again;
- bad data (a junk block, a malformed job) is detected, never served, never fatal;
- SIGTERM stops a worker cleanly: no claim left, no heartbeat, the job left to others;
- ``--check`` is a health check, and a worker started before its Redis waits for it;
- ``status --json`` gives numbers as numbers; a heartbeat expires unless renewed, and its
  counters move; a warm job leaves exactly its state's blocks;
- both entry points (``python -m worker``, ``memo-solver worker``) pin BLAS to one thread.

Each test has its own Redis: the session server emptied (FLUSHALL), or a server of its own
where it crashes it. Every process a test starts is killed at teardown; their logs are
files in the test's temporary folder (printed when a test fails).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis
from support.redis_server import RedisServer, free_port
from support.worker_support import (
    ENV,
    HEARTBEAT_S,
    HOST,
    TAKE_OVER_WITHIN_S,
    Child,
    Children,
    Stalls,
    block_hash,
    check,
    claim_holders,
    cli_json,
    counters_after_a_beat,
    heartbeat,
    held_by,
    job_record,
    json_of,
    last_touch,
    pending,
    refused_jobs,
    start_workers,
    stored_blocks,
    stored_keys,
    taken_over_by,
    wait_for,
    with_store,
)

from memo_solver.cli.worker import Backoff
from memo_solver.core.codec import decode_block
from memo_solver.core.engine import namespace, open_engine
from memo_solver.core.game import Block
from memo_solver.core.store import Claim
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.rules.rule_file import read_rule_file
from memo_solver.games.yahtzee.solve.game import YahtzeeGame, block_key
from memo_solver.jobs.queue import Job, JobQueue, text
from memo_solver.stores import redis_keys
from memo_solver.stores.memory import MemoryStore

TOL = 1e-9
YAHTZEE = YahtzeeGame(RULE_SETS["yahtzee"])
YAHTZEE_NS = namespace(YAHTZEE)
MAXI_NS = namespace(YahtzeeGame(RULE_SETS["maxi-yatzy"]))
YAHTZEE_PIN = 254.5877287345
BLOCKS = YAHTZEE.block_count
LOWER = YahtzeeGame(RULE_SETS["yahtzee-lower"])
LOWER_NS = namespace(LOWER)
UPPER = YahtzeeGame(RULE_SETS["yahtzee-upper"])
UPPER_NS = namespace(UPPER)
UPPER_PIN = 71.9515297337
LOWER_PIN = 139.9712924424
PRECOMPUTE_ID = Job.precompute("yahtzee").id


def blocks_done(r: redis.Redis, ns: str = YAHTZEE_NS) -> int:
    return stored_blocks(r, ns)


# --- exactly once --------------------------------------------------------------------------


@pytest.mark.slow
def test_workers_clis_and_a_job_compute_every_block_exactly_once(
    redis_url: str, r: redis.Redis, children: Children
) -> None:
    names = ["w1", "w2", "w3"]
    start_workers(children, r, redis_url, names)
    job = children.cli("job", redis_url, "precompute", "--rules", "yahtzee", "--wait", "--json")
    queries = [
        children.cli(f"query{i}", redis_url, "value", "--rules", "yahtzee", "--json")
        for i in (1, 2)
    ]
    results = [json_of(child, 300) for child in [job, *queries]]

    for result in results:
        assert result["value"] == pytest.approx(YAHTZEE_PIN, abs=TOL)
    assert results[0]["status"] == "done"
    assert blocks_done(r) == BLOCKS
    assert claim_holders(r) == []
    workers = counters_after_a_beat(redis_url, names)
    by_workers = sum(w["blocks_computed"] for w in workers.values())
    by_clis = sum(int(result["blocks_computed"]) for result in results[1:])
    print(
        "computed:",
        {n: w["blocks_computed"] for n, w in workers.items()},
        "workers;",
        [res["blocks_computed"] for res in results[1:]],
        "CLIs",
    )
    assert by_workers + by_clis == BLOCKS, (workers, results)
    # Everyone took part (a sanity check on the set-up, not a promise of the design).
    assert by_workers > 0


# --- a worker killed while it holds claims -------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("victim_runs", ["a block job", "the precompute job"])
def test_a_killed_worker_costs_the_other_about_one_lease(
    redis_url: str, r: redis.Redis, children: Children, victim_runs: str
) -> None:
    """The survivor never stands idle (no block committed) for longer than about one lease,
    while the dead worker's claims lapse; or, when the dead worker ran the precompute job
    itself, than stale_job_s, after which the survivor takes the job over."""
    lease = 3.0
    stale_job_s = max(5 * HEARTBEAT_S, 3 * lease)  # memo_solver.jobs.settings
    workers = start_workers(children, r, redis_url, ["w1", "w2"], "--lease", str(lease))
    cli_json(redis_url, "precompute", "--rules", "yahtzee")

    def a_victim() -> Child | None:
        if blocks_done(r) < BLOCKS // 16:
            return None  # let the work spread out first
        for worker in workers:
            beat = heartbeat(r, worker.name) or {}
            running = beat.get("running", "")
            wanted = (
                PRECOMPUTE_ID in running
                if victim_runs != "a block job"
                else running and PRECOMPUTE_ID not in running
            )
            if wanted and held_by(r, worker, YAHTZEE_NS) > 0:
                return worker
        return None

    victim = wait_for(f"a worker running {victim_runs} and holding claims", a_victim, 60, 0.02)
    blocks_at_kill = blocks_done(r)
    victim.process.kill()
    killed_at = time.monotonic()
    victim.finish(10)
    assert blocks_at_kill < BLOCKS, "the job was over before the kill: nothing was tested"
    survivor = next(w for w in workers if w is not victim)

    def done() -> dict[str, str] | None:
        record = job_record(r, PRECOMPUTE_ID)
        return record if record.get("status") == "done" else None

    stalls = Stalls(partial(blocks_done, r), killed_at)
    if victim_runs == "a block job":
        # The margin: a waiter notices a lapsed claim at its next recheck (every second),
        # then computes a batch (about a quarter second: sized by the time the last one
        # took, on a loaded machine too) before committing.
        stall, record = stalls.until(done, timeout=300)
        idle_allowed = lease + 3
    else:
        # Idle until the survivor takes the precompute job over: timers alone. The computing
        # that follows (slower on a loaded machine) is not idle time.
        stall, _ = stalls.until(partial(taken_over_by, r, PRECOMPUTE_ID, survivor), timeout=300)
        idle_allowed = stale_job_s + TAKE_OVER_WITHIN_S
        record = wait_for("the precompute job done", done, 300)
    print(f"killed {victim.name} at {blocks_at_kill} blocks; the longest stall: {stall:.1f} s")
    assert float(record["value"]) == pytest.approx(YAHTZEE_PIN, abs=TOL)
    assert record["worker"] == survivor.name
    assert stall < idle_allowed, f"{survivor.name} stood idle {stall:.1f} s"
    assert blocks_done(r) == BLOCKS
    assert [t for t in claim_holders(r) if t.startswith(f"{HOST}/{victim.pid}/")] == []


# --- Redis crashes -------------------------------------------------------------------------


@pytest.mark.slow
def test_a_redis_crash_loses_at_most_the_last_second_and_the_job_resumes(
    fresh_redis: RedisServer, children: Children
) -> None:
    server, url = fresh_redis, fresh_redis.url
    with server.client() as r:
        start_workers(children, r, url, ["w1"])
        cli_json(url, "precompute", "--rules", "yahtzee")
        wait_for("a fifth of the blocks", lambda: blocks_done(r) >= BLOCKS // 5, 60, 0.01)
        written = blocks_done(r)
        server.wait_written()  # what Redis held a moment ago is in its AOF
        at_kill = blocks_done(r)
        server.kill()
    assert BLOCKS // 5 <= at_kill <= BLOCKS * 4 // 5, f"{at_kill} blocks at the kill"
    # Redis stays down until the worker has given up its session: a restart before that
    # would let the old session's in-flight batches land uncounted by the new counters.
    worker = children.started[0]
    wait_for("the worker to lose Redis", lambda: "retrying in" in worker.text(), 30)

    server.restart()
    with server.client() as r:
        survived = stored_keys(r, YAHTZEE_NS)
        assert written <= len(survived) <= at_kill
        assert worker.process.poll() is None, worker.text()

        # The worker comes back by itself; asking again merges into the same job.
        result = json_of(
            children.cli("again", url, "precompute", "--rules", "yahtzee", "--wait", "--json"),
            timeout=180,
        )
        assert result["job"] == PRECOMPUTE_ID
        assert result["value"] == pytest.approx(YAHTZEE_PIN, abs=TOL)
        assert blocks_done(r) == BLOCKS
        # Nothing that survived the crash was computed again: the worker's counters start
        # at its reconnection, and it computed exactly what was missing.
        (row,) = counters_after_a_beat(url, ["w1"]).values()
        print(
            f"{written} blocks written to the AOF, {at_kill} at the kill, {len(survived)} "
            f"after the restart; the worker computed {row['blocks_computed']} more"
        )
        assert row["blocks_computed"] == BLOCKS - len(survived)
    retries = [line for line in worker.text().splitlines() if "retrying in" in line]
    assert retries, worker.text()
    assert all(url in line for line in retries), retries


def test_a_store_error_in_a_jobs_own_task_leaves_it_unacknowledged(
    redis_url: str, r: redis.Redis, children: Children
) -> None:
    """A store error is the store's fault, not the job's: the job must stay pending (the
    worker reconnects and the job is retried), never be marked failed and acknowledged.

    The error is made with an ACL: for a moment the worker's user may not run HLEN, which
    only the precompute job's progress report sends (claims, commits, lookups and
    heartbeats go on), so the error surfaces in the job's own task group. The job is
    `maxi-yatzy`'s (minutes of solving), so that it is still running when its next report
    comes: a report waits up to 49 times its own time, which a loaded host stretches to
    seconds, and `yahtzee`'s whole solve could end first, with no report left to fail.
    """
    maxi = Job.precompute("maxi-yatzy").id
    (worker,) = start_workers(children, r, redis_url, ["w1"])
    r.acl_setuser(
        "tester", enabled=True, nopass=True, commands=["+@all"], keys=["*"], channels=["*"]
    )
    with redis.Redis.from_url(redis_url, username="tester") as admin:
        try:
            cli_json(redis_url, "precompute", "--rules", "maxi-yatzy")
            wait_for(
                "the worker running the job with claims held",
                lambda: held_by(admin, worker, MAXI_NS) > 0,
                30,
                0.02,
            )
            admin.execute_command("ACL", "SETUSER", "default", "-hlen")
            refused = "can't run this command"  # HLEN, in the coverage script
            wait_for("the worker to see the error", lambda: refused in worker.text(), 60)
            wait_for(
                "the worker to give up its session, or (wrongly) to fail the job",
                lambda: (
                    "retrying in" in worker.text()
                    or job_record(admin, maxi).get("status") == "failed"
                ),
                10,
            )
        finally:
            admin.execute_command("ACL", "SETUSER", "default", "+hlen")
    record = job_record(r, maxi)
    r.acl_deluser("tester")
    assert record["status"] != "failed", record
    assert pending(r) >= 1, "the job was acknowledged"


# --- bad data ------------------------------------------------------------------------------


def test_a_junk_block_in_redis_is_recomputed_never_served(redis_url: str, r: redis.Redis) -> None:
    ns = namespace(LOWER)
    solved = cli_json(redis_url, "precompute", "--rules", "yahtzee-lower", "--here")
    assert solved["value"] == pytest.approx(LOWER_PIN, abs=TOL)
    only_chance = block_key(LOWER.rules.all_filled & ~(1 << LOWER.rules.category_index("chance")))
    assert r.hset(block_hash(r, ns, only_chance), only_chance, b"junk") == 0  # overwrote a block

    value = cli_json(redis_url, "value", "--rules", "yahtzee-lower", "open=chance")
    assert value["value"] == pytest.approx(70 / 3, abs=TOL)  # pins.md: only Chance open

    data = r.hget(block_hash(r, ns, only_chance), only_chance)
    assert isinstance(data, bytes)
    assert data != b"junk"
    block = decode_block(
        data, fingerprint=LOWER.fingerprint, key=only_chance, shape=LOWER.block_shape(only_chance)
    )
    assert block is not None
    assert block[0, 0] == pytest.approx(70 / 3, abs=TOL)


def test_malformed_jobs_are_acknowledged_logged_and_survived(
    redis_url: str, r: redis.Redis, children: Children
) -> None:
    (worker,) = start_workers(children, r, redis_url, ["w1"])
    malformed: list[dict[str, str]] = [
        {"kind": "bogus", "rules": "yahtzee"},
        {"nothing": "expected"},
        {"kind": "precompute", "rules": "no-such-rules"},
        {"kind": "warm", "rules": "yahtzee", "state": "not a state"},
        {"kind": "block", "rules": "yahtzee", "state": "zz"},
    ]
    refused_jobs(r, worker, malformed)
    assert worker.process.poll() is None

    # And the worker still serves good jobs.
    result = cli_json(redis_url, "precompute", "--rules", "yahtzee-upper", "--wait", timeout=60)
    assert result["value"] == pytest.approx(UPPER_PIN, abs=TOL)
    assert pending(r) == 0


def test_a_rule_set_file_is_solved_by_workers_from_its_stored_definition(
    redis_url: str, r: redis.Redis, children: Children, tmp_path: Path
) -> None:
    """The workers know nothing of the file: the job names the fingerprint, and the worker
    reads the definition the command stored beside the blocks."""
    start_workers(children, r, redis_url, ["w1"])
    forced = Path(__file__).parent.parent / "examples" / "rules" / "yatzy-forced.json"
    result = cli_json(redis_url, "precompute", "--rules-file", str(forced), "--wait", timeout=60)
    assert result["value"] == pytest.approx(122.5585273964, abs=TOL)
    fingerprint = read_rule_file(forced).fingerprint
    record = job_record(r, result["job"])
    assert (record["status"], record["rules"]) == ("done", fingerprint)
    # A fingerprint with no definition stored fails the job, and the worker goes on.
    job = Job.precompute("0123456789abcdef")
    with_store(redis_url, lambda store: JobQueue(store).enqueue(job))
    failed = wait_for("the job failed", lambda: _failed(r, job.id), 30)
    assert "keeps no definition" in failed["error"]


def _failed(r: redis.Redis, job_id: str) -> dict[str, str] | None:
    record = job_record(r, job_id)
    return record if record.get("status") == "failed" else None


# --- stopping ------------------------------------------------------------------------------


def _stop_during_a_precompute(r: redis.Redis, url: str, children: Children) -> Child:
    """A worker stopped by SIGTERM while it runs the precompute job."""
    (worker,) = start_workers(children, r, url, ["w1"], "--lease", "3")
    cli_json(url, "precompute", "--rules", "yahtzee")
    wait_for(
        "the worker running the job with claims held",
        lambda: (
            PRECOMPUTE_ID in (heartbeat(r, "w1") or {}).get("running", "")
            and held_by(r, worker, YAHTZEE_NS) > 0
        ),
        30,
        0.02,
    )
    worker.process.send_signal(signal.SIGTERM)
    assert worker.finish(timeout=30) == 0, worker.text()
    # Promptly, whatever the machine's load: before the job's end, which a worker that
    # finished its work in progress would have reached (the timeout above only keeps a hung
    # stop from hanging the test).
    assert blocks_done(r) < BLOCKS
    return worker


def test_sigterm_stops_a_worker_cleanly_and_leaves_the_job_to_others(
    redis_url: str, r: redis.Redis, children: Children
) -> None:
    worker = _stop_during_a_precompute(r, redis_url, children)
    assert claim_holders(r) == [], "claims left behind"
    assert r.exists(redis_keys.worker("w1")) == 0, "heartbeat left behind"
    entries = r.xpending_range(redis_keys.JOB_STREAM, redis_keys.JOB_GROUP, "-", "+", 100)
    assert entries, "the job was acknowledged"
    record = job_record(r, PRECOMPUTE_ID)
    assert record["status"] == "queued"
    assert "SIGTERM" in worker.text()


@pytest.mark.slow
def test_a_stopped_workers_job_is_taken_over_after_the_stale_time(
    redis_url: str, r: redis.Redis, children: Children
) -> None:
    stopped = _stop_during_a_precompute(r, redis_url, children)
    stopped_at = time.monotonic()
    touched_at = last_touch(r, stopped)  # it touches its entry no more: it has exited
    (taker,) = start_workers(children, r, redis_url, ["w2"], "--lease", "3")
    ready_at = time.monotonic()
    stale_job_s = max(5 * HEARTBEAT_S, 3 * 3.0)  # memo_solver.jobs.settings, with --lease 3

    taken = partial(taken_over_by, r, PRECOMPUTE_ID, taker)
    wait_for("w2 to take the job over", taken, stale_job_s + 60, 0.02)
    taken_at = time.monotonic()
    # The entry went stale the stale time after the stopped worker's last touch, which Redis
    # dates; w2 takes it at its first look after both the entry went stale and it was up.
    # What follows is computing.
    assert taken_at - touched_at >= stale_job_s
    assert taken_at < max(stopped_at + stale_job_s, ready_at) + TAKE_OVER_WITHIN_S

    def done() -> dict[str, str] | None:
        rec = job_record(r, PRECOMPUTE_ID)
        return rec if rec.get("status") == "done" else None

    record = wait_for("w2 to finish the job", done, 300, 0.1)
    assert record["worker"] == "w2"
    assert float(record["value"]) == pytest.approx(YAHTZEE_PIN, abs=TOL)
    assert blocks_done(r) == BLOCKS


# --- the health check and a Redis that is not there yet ------------------------------------


def test_check_names_an_unreachable_redis_once() -> None:
    dead_url = f"redis://127.0.0.1:{free_port()}/0"
    unreachable = check(dead_url)
    assert unreachable.returncode == 1
    assert unreachable.stderr.startswith(f"worker check: cannot reach Redis at {dead_url}: ")
    assert unreachable.stderr.count(dead_url) == 1, unreachable.stderr


def test_the_readme_gives_the_pauses_between_a_workers_retry_lines() -> None:
    backoff = Backoff()
    first, second, third = backoff.next(), backoff.next(), backoff.next()
    words = " ".join((Path(__file__).parents[1] / "README.md").read_text().split())
    assert (
        f"doubles from {first:.0f} s to {backoff.cap_s:.0f} s (`retrying in {first:.0f} s`, "
        f"`{second:.0f} s`, `{third:.0f} s`, ...)"
    ) in words
    assert "asks Redis every second" in words  # its probes meanwhile (wait_for_redis)


def test_check_says_whether_a_worker_is_alive(
    redis_url: str, r: redis.Redis, children: Children
) -> None:
    start_workers(children, r, redis_url, ["w1"])
    alive = check(redis_url, "--id", "w1")
    assert alive.returncode == 0, alive.stderr
    assert "w1" in alive.stdout
    unknown = check(redis_url, "--id", "nobody")
    assert unknown.returncode == 1
    assert "nobody" in unknown.stderr
    dead_url = f"redis://127.0.0.1:{free_port()}/0"
    unreachable = check(dead_url, "--id", "w1")
    assert unreachable.returncode == 1
    assert dead_url in unreachable.stderr


def test_a_worker_waits_for_its_redis_and_serves_once_it_is_up(
    redis_binary: str, tmp_path: Path, children: Children
) -> None:
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    worker = children.worker(url, "early")

    def retry_lines() -> list[str]:
        return [line for line in worker.text().splitlines() if "retrying in" in line]

    lines = wait_for("a retry line", retry_lines, 30)
    assert url in lines[0], lines
    assert worker.process.poll() is None, worker.text()

    with RedisServer(tmp_path / "late-redis", port=port, binary=redis_binary) as server:
        with server.client() as r:
            wait_for("the worker's heartbeat", lambda: heartbeat(r, "early"), 20)
        result = cli_json(url, "precompute", "--rules", "yahtzee-lower", "--wait", timeout=60)
        assert result["value"] == pytest.approx(LOWER_PIN, abs=TOL)
    assert "Traceback" not in worker.text()


# --- status, heartbeats and counters -------------------------------------------------------


def types_of(row: dict[str, Any]) -> dict[str, type]:
    return {name: type(value) for name, value in row.items()}


def counts_of(rule_set: dict[str, Any]) -> tuple[Any, Any, Any]:
    return (rule_set["blocks_total"], rule_set["blocks_done"], rule_set["claims_held"])


def test_status_json_gives_numbers_for_rule_sets_workers_and_jobs(
    redis_url: str, r: redis.Redis, children: Children
) -> None:
    start_workers(children, r, redis_url, ["w1"])
    cli_json(redis_url, "precompute", "--rules", "yahtzee-lower", "--wait", timeout=60)
    held = with_store(
        redis_url, lambda store: store.try_claim(UPPER_NS, [UPPER.root()], "the-test", 60)
    )
    assert held == {UPPER.root(): Claim.CLAIMED}

    def status_once_the_job_is_counted() -> dict[str, Any] | None:
        status: dict[str, Any] = cli_json(redis_url, "status")
        return status if any(w["jobs_done"] >= 1 for w in status["workers"]) else None

    status = wait_for("w1 to count its job", status_once_the_job_is_counted, 30, HEARTBEAT_S)

    rule_sets = status["rule_sets"]
    assert counts_of(rule_sets["yahtzee-lower"]) == (128, 128, 0)
    assert counts_of(rule_sets["yahtzee-upper"]) == (64, 0, 1)
    assert {type(n) for row in rule_sets.values() for n in counts_of(row)} == {int}

    (worker,) = status["workers"]
    assert (worker["id"], worker["host"]) == ("w1", HOST)
    assert types_of(worker) == {
        "id": str,
        "host": str,
        "pid": int,
        "started_at": float,
        "beat_at": float,
        "running": str,
        "blocks_computed": int,
        "blocks_waited": int,
        "blocks_fetched": int,
        "jobs_done": int,
    }

    # The precompute first, then the block jobs it fanned out into (oldest first).
    precompute, *blocks = status["jobs"]
    assert (precompute["id"], precompute["kind"], precompute["rules"]) == (
        Job.precompute("yahtzee-lower").id,
        "precompute",
        "yahtzee-lower",
    )
    assert (precompute["state"], precompute["status"], precompute["worker"]) == ("", "done", "w1")
    assert (precompute["blocks_done"], precompute["blocks_total"]) == (128, 128)
    assert precompute["value"] == pytest.approx(LOWER_PIN, abs=TOL)
    assert types_of(precompute) == {
        "id": str,
        "kind": str,
        "rules": str,
        "state": str,
        "status": str,
        "queued_at": float,
        "worker": str,
        "started_at": float,
        "blocks_done": int,
        "blocks_total": int,
        "value": float,
        "finished_at": float,
    }
    assert sorted(job["state"] for job in blocks) == sorted(LOWER.successors(LOWER.root()))
    for job in blocks:
        assert (job["kind"], job["rules"], type(job["queued_at"])) == (
            "block",
            "yahtzee-lower",
            float,
        )


def test_a_heartbeat_expires_by_itself_and_its_counters_move(
    redis_url: str, r: redis.Redis, children: Children
) -> None:
    """The heartbeat lives three beats unless renewed; a block claimed by someone else is
    waited for (and counted), and a finished job is counted."""
    start_workers(children, r, redis_url, ["w1"])
    ttl_ms = r.pttl(redis_keys.worker("w1"))
    assert 0 < ttl_ms <= 3 * HEARTBEAT_S * 1000  # WorkerSettings.heartbeat_ttl_s
    before = counters_after_a_beat(redis_url, ["w1"])["w1"]
    assert (before["blocks_waited"], before["jobs_done"]) == (0, 0)

    root = UPPER.root()
    with_store(redis_url, lambda store: store.try_claim(UPPER_NS, [root], "the-test", 60))
    job_id = cli_json(redis_url, "precompute", "--rules", "yahtzee-upper")["job"]
    wait_for(
        "w1 to wait for the block the test holds",
        lambda: int((heartbeat(r, "w1") or {}).get("blocks_waited", 0)) >= 1,
        30,
    )
    with_store(redis_url, lambda store: store.release(UPPER_NS, [root], "the-test"))
    wait_for("the job to be done", lambda: job_record(r, job_id).get("status") == "done", 30)

    after = counters_after_a_beat(redis_url, ["w1"])["w1"]
    assert after["blocks_waited"] >= 1
    assert after["jobs_done"] >= 1
    assert after["blocks_computed"] == UPPER.block_count


# --- a warm job ------------------------------------------------------------------------------


async def solved_here(game: YahtzeeGame, key: str) -> Block:
    async with MemoryStore() as store, open_engine(game, store) as engine:
        return await engine.block(key)


def test_a_warm_job_leaves_the_states_blocks_in_redis(
    redis_url: str, r: redis.Redis, children: Children
) -> None:
    """Four boxes of yahtzee-lower filled: the state's block and the 7 below it, no more."""
    start_workers(children, r, redis_url, ["w1"])
    filled = ("three_of_a_kind", "four_of_a_kind", "full_house", "small_straight")
    job = Job.warm("yahtzee-lower", f"filled={','.join(filled)}")
    job_id, queued = with_store(redis_url, lambda store: JobQueue(store).enqueue(job))
    assert queued
    wait_for("the warm job to be done", lambda: job_record(r, job_id).get("status") == "done", 30)

    mask = sum(1 << LOWER.rules.category_index(box) for box in filled)
    key = block_key(mask)
    assert stored_keys(r, LOWER_NS) == {
        block_key(m) for m in range(LOWER.rules.all_filled + 1) if m & mask == mask
    }
    data = r.hget(block_hash(r, LOWER_NS, key), key)
    assert isinstance(data, bytes)
    stored = decode_block(
        data, fingerprint=LOWER.fingerprint, key=key, shape=LOWER.block_shape(key)
    )
    assert stored is not None
    assert stored == pytest.approx(anyio.run(solved_here, LOWER, key), abs=TOL)


# --- the score distribution as a background job ---------------------------------------------


def test_stats_with_workers_is_their_background_job(
    redis_url: str, r: redis.Redis, children: Children
) -> None:
    """With a worker alive, `stats` queues the forward pass for it; the answer is exact."""
    start_workers(children, r, redis_url, ["w1"])
    answer = cli_json(redis_url, "stats", "--rules", "yahtzee-upper")
    assert answer["mean"] == pytest.approx(UPPER_PIN, abs=TOL)
    assert sum(answer["probabilities"]) == pytest.approx(1, abs=1e-12)
    stats_jobs = [
        record
        for job_id in r.zrange(redis_keys.RECENT_JOBS, 0, -1)
        if (record := job_record(r, text(job_id))) and record.get("kind") == "stats"
    ]
    assert [(job["rules"], job["status"], job["worker"]) for job in stats_jobs] == [
        ("yahtzee-upper", "done", "w1")
    ]


# --- the entry points ----------------------------------------------------------------------

BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
RUN_AND_REPORT_BLAS = """
import atexit, json, runpy, sys
from threadpoolctl import threadpool_info
atexit.register(lambda: print(json.dumps(threadpool_info())))
sys.argv = sys.argv[1:]
runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
"""
"""Run ``python -m <module> <args>`` as the interpreter does, then report the BLAS pools that
the process ended up with (threadpoolctl imports no numpy of its own), from an exit callback:
the console command leaves by ``os._exit`` once its callbacks have run."""


@pytest.mark.parametrize(
    "command", [["worker"], ["memo_solver", "worker"]], ids=["python -m worker", "memo-solver"]
)
def test_a_worker_pins_blas_to_one_thread_without_being_told(command: list[str]) -> None:
    """BLAS reads its thread count once, when numpy loads it: the pin must come first."""
    env = {k: v for k, v in ENV.items() if k not in BLAS_THREAD_VARS}
    dead_url = f"redis://127.0.0.1:{free_port()}/0"
    done = subprocess.run(
        [sys.executable, "-c", RUN_AND_REPORT_BLAS, *command, "--check", "--redis", dead_url],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,  # the check's own answer: no worker beats at a Redis nobody runs
    )
    pools = json.loads(done.stdout.splitlines()[-1])
    assert [pool["user_api"] for pool in pools] == ["blas"], "numpy's BLAS was not loaded"
    assert [pool["num_threads"] for pool in pools] == [1]


def test_memo_solver_worker_starts_beats_and_stops_on_sigterm(
    redis_url: str, r: redis.Redis, children: Children
) -> None:
    (worker,) = start_workers(children, r, redis_url, ["w1"], entry=("memo_solver", "worker"))
    alive = check(redis_url, "--id", "w1")
    assert alive.returncode == 0, alive.stderr
    worker.process.send_signal(signal.SIGTERM)
    assert worker.finish(timeout=10) == 0, worker.text()
    assert r.exists(redis_keys.worker("w1")) == 0
    assert check(redis_url, "--id", "w1").returncode == 1


# --- a rule set deleted while its workers solve it -------------------------------------------


@pytest.mark.full  # hardening 4's end to end: run with -m full (the suite's growth budget)
async def test_a_rule_set_deleted_during_its_precompute_fails_the_job_and_its_workers_stop(
    redis_url: str, r: redis.Redis, children: Children, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two workers precompute a registered rule set and an operator deletes it: the job
    fails saying so (never done), each worker's next claim or commit is refused, so that no
    block is written back into the deleted namespace, and both go idle."""
    from support.api_support import api_client, bearer

    from memo_solver.core.engine import namespace_of
    from memo_solver.games.yahtzee.rules.rule_file import rule_set_document
    from memo_solver.service.settings import ADMIN_TOKEN_ENV

    monkeypatch.setenv(ADMIN_TOKEN_ENV, "s3cret")
    operator = bearer("s3cret")
    start_workers(children, r, redis_url, ["w1", "w2"])
    # Maxi Yatzy with another bonus: a million blocks, minutes of work for two workers, so
    # the delete lands mid-way whenever the first blocks are stored.
    rules = rule_set_document(RULE_SETS["maxi-yatzy"]) | {"name": "maxi-99", "upper_bonus": 99}
    async with api_client(redis_url) as client:
        fingerprint = (await client.post("/v1/rules", json=rules)).json()["fingerprint"]
        ns = namespace_of(fingerprint)
        asked = await client.post(
            "/v1/jobs/precompute", json={"rules": "maxi-99"}, headers=operator
        )
        job = asked.json()["job"]
        wait_for("the first blocks", lambda: stored_blocks(r, ns) or None, 120)
        gone = await client.delete("/v1/rules/maxi-99", headers=operator)
        assert gone.json()["blocks_deleted"] is True

    record = job_record(r, job)
    assert record["status"] == "failed", record
    assert "the rule set 'maxi-99' was deleted" in record["error"]
    # Each worker's next claim or commit comes within a chunk's solve (a fraction of a
    # second) and is refused; its next heartbeat (every HEARTBEAT_S) then runs nothing.

    def idle(name: str) -> bool:
        return (heartbeat(r, name) or {}).get("running") == ""

    for name in ("w1", "w2"):
        wait_for(f"{name} idle", partial(idle, name), 60)
    blocks = [k for k in r.scan_iter(match=f"ms:{{{ns}*") if k.endswith(b":blocks")]
    assert blocks == []
    assert job_record(r, job)["status"] == "failed"
