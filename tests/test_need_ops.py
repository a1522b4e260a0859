"""Need tables as operators meet them: their size before a precompute, ``precompute --need``
in process on SQLite and as jobs for the workers on Redis, and the workers' warm jobs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import anyio
import pytest
import redis
from support.api_support import child_env, cli
from support.cli_support import TINY_RULES, one_error_line
from support.worker_support import (
    Children,
    job_record,
    start_workers,
    stored_keys,
    wait_for,
    with_store,
)

from memo_solver.core.engine import namespace_of
from memo_solver.games.yahtzee.need_entries import need_entry
from memo_solver.games.yahtzee.rules.catalog import RULE_SETS
from memo_solver.games.yahtzee.rules.rule_file import parse_rule_set
from memo_solver.games.yahtzee.solve.game import block_key
from memo_solver.games.yahtzee.solve.need import width
from memo_solver.games.yahtzee.solve.need_table import cone_values, table_bytes
from memo_solver.games.yahtzee.solve.turn import Guideposts
from memo_solver.jobs.queue import Job, JobQueue
from memo_solver.stores import redis_keys
from memo_solver.stores.redis import RedisStore
from memo_solver.stores.sqlite import SQLiteStore

TOL = 1e-12
# One die, a chance box, one reroll: 6 points or more need a six in two rolls (11/36).
TINY = parse_rule_set(TINY_RULES)
TINY_TOP = 11 / 36
WAIT = ("--need", "--wait", "--json")


@pytest.mark.parametrize("name", ["yahtzee-upper", "yahtzee-lower", "yatzy-forced"])
@pytest.mark.parametrize("cap", [1, 37, 400])
def test_a_tables_size_is_every_reachable_turn_start_times_its_blocks_width(
    name: str, cap: int
) -> None:
    if name == "yatzy-forced":
        path = Path(__file__).parent.parent / "examples" / "rules" / "yatzy-forced.json"
        rules = parse_rule_set(json.loads(path.read_text()))
    else:
        rules = RULE_SETS[name]
    counted = sum(
        Guideposts.reachable(rules, filled).upper.size * width(rules, cap, filled) * 8
        for filled in rules.reachable_masks(0)
    )
    assert table_bytes(rules, cap) == counted
    assert cone_values(rules, cap, 0) == rules.cone_turn_starts(0) * width(rules, cap, 0)


def _precompute(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cli("--store", str(store), "precompute", *args),
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=120,
        check=False,
    )


def test_precompute_need_solves_the_whole_table_on_sqlite(tmp_path: Path) -> None:
    rules_file = tmp_path / "tiny.json"
    rules_file.write_text(json.dumps(TINY_RULES))
    store = tmp_path / "s.sqlite"
    args = ("--rules-file", str(rules_file), "--need", "--json")
    done = _precompute(store, *args)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["probability"] == pytest.approx(TINY_TOP, abs=TOL)
    assert (result["blocks_total"], result["blocks_computed"]) == (2, 2)
    again = json.loads(_precompute(store, *args).stdout)
    assert (again["blocks_computed"], again["blocks_already_stored"]) == (0, 2)
    capped = json.loads(_precompute(store, *args, "--need-cap", "5").stdout)
    assert capped["blocks_computed"] == 2  # its own namespace: another table
    assert capped["probability"] == pytest.approx(5 / 9, abs=TOL)

    async def held() -> tuple[int, bool]:
        async with SQLiteStore(store) as opened:
            table = namespace_of(f"{TINY.fingerprint}-need400")
            blocks = await opened.get_many(table, [block_key(0), block_key(1)])
            return len(blocks), await opened.definition(table) is not None

    assert anyio.run(held) == (2, True)  # with the rule file: prune keeps it


def _cli_json(store: Path, *args: str) -> dict[str, object]:
    done = subprocess.run(
        cli("--store", str(store), *args, "--json"),
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.mark.full  # hardening 4's end to end: run with -m full (the suite's growth budget)
def test_export_and_import_take_a_rule_sets_need_table(tmp_path: Path) -> None:
    """An operator copies a need table as a rule set's mean values: ``--need`` (and its
    cap) picks the table, every block verified on the way, its rule file kept beside it."""
    rules_file = tmp_path / "tiny.json"
    rules_file.write_text(json.dumps(TINY_RULES))
    table = ("--rules-file", str(rules_file), "--need", "--need-cap", "5")
    store, copy, dump = tmp_path / "s.sqlite", tmp_path / "copy.sqlite", tmp_path / "t.msgpack"
    assert _cli_json(store, "precompute", *table)["blocks_computed"] == 2
    assert _cli_json(store, "export", *table, "--to", str(dump))["blocks"] == 2
    assert _cli_json(copy, "import", *table, "--from", str(dump))["blocks"] == 2
    again = _cli_json(copy, "precompute", *table)
    assert (again["blocks_computed"], again["blocks_already_stored"]) == (0, 2)
    assert again["probability"] == pytest.approx(5 / 9, abs=TOL)
    assert (
        _cli_json(copy, "export", *table[:2], "--to", str(tmp_path / "m.msgpack"))["blocks"] == 0
    )  # the mean values: another namespace, none copied


def test_precompute_need_refuses_a_table_past_the_limit_saying_its_size(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    line = one_error_line(_precompute(store, "--rules", "maxi-yatzy", "--need"))
    assert "151,464 MiB" in line
    assert "--max-table-mb 4,096" in line
    small = one_error_line(
        _precompute(store, "--rules", "yahtzee", "--need", "--max-table-mb", "1")
    )
    assert "1,624 MiB" in small
    assert "no need table" in one_error_line(
        _precompute(store, "--game", "dice-of-doom", "--size", "2", "--need")
    )
    assert "between 1 and 2000" in one_error_line(
        _precompute(store, "--rules", "yahtzee", "--need", "--need-cap", "0")
    )
    assert not store.exists() or store.stat().st_size < 1 << 20


def test_workers_precompute_a_need_table_and_warm_a_need_job(
    redis_url: str, r: redis.Redis, children: Children, tmp_path: Path
) -> None:
    """The workers know the table by its fingerprint alone: the command stored the rule
    file beside its blocks."""
    start_workers(children, r, redis_url, ["w1"])
    rules_file = tmp_path / "tiny.json"
    rules_file.write_text(json.dumps(TINY_RULES))
    done = subprocess.run(
        cli("--redis", redis_url, "precompute", "--rules-file", str(rules_file), *WAIT),
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["probability"] == pytest.approx(TINY_TOP, abs=TOL)
    record = job_record(r, result["job"])
    assert record["rules"] == f"{TINY.fingerprint}-need400"
    # The record's value is the table's headline, as the command printed it: the chance of
    # the cap (here the most the tiny game can score), not the first need's.
    assert float(record["value"]) == pytest.approx(TINY_TOP, abs=TOL)
    # The pooled engine's blocks count in the worker's heartbeat like a built-in's.
    wait_for("w1's count", lambda: int(r.hget(redis_keys.worker("w1"), "blocks_computed") or 0), 10)

    # A warm job of a built-in's need table (as a service hands over a cold question).
    lower = RULE_SETS["yahtzee-lower"]
    entry = need_entry(lower, 50)
    state = '{"filled": ["chance", "yahtzee"]}'
    job = Job.warm(entry.job_name, entry.canonical_state(state))

    async def hand_over(store: RedisStore) -> None:
        assert entry.definition is not None
        await store.put_definition(namespace_of(entry.job_name), entry.definition)
        await JobQueue(store).enqueue(job)

    with_store(redis_url, hand_over)
    wait_for("the warm job", lambda: job_record(r, job.id).get("status") == "done" or None, 60)
    filled = sum(1 << i for i, c in enumerate(lower.categories) if c.name in ("chance", "yahtzee"))
    assert block_key(filled) in stored_keys(r, namespace_of(entry.job_name))
