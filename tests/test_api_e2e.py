"""The HTTP service end to end: ``memo-solver serve`` (uvicorn) on a free port, a real
redis-server and a real ``python -m worker`` process, talked to over a socket.

- an operator queues the precompute of ``yahtzee-lower`` with the token, follows the job
  until the worker is done, and the service then answers the pinned start value, with
  coverage 128/128 and the worker counted alive;
- the operator endpoints refuse a missing or wrong token over the wire too;
- a Redis restart: /readyz says 503 while it is down and 200 again once it is back, with
  no restart of the service.

Every process a test starts is stopped at teardown; their output goes to files in the
test's temporary folder and is printed when the test fails.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from support.api_support import (
    LOWER_PIN,
    OPENAPI_PATH,
    TOL,
    UPPER_PIN,
    child_env,
    cli,
    error_of,
)
from support.redis_server import RedisServer, free_port

from memo_solver.jobs.queue import Job
from memo_solver.service.settings import ADMIN_TOKEN_ENV

pytestmark = pytest.mark.slow

T = TypeVar("T")
TOKEN = "e2e-operator-token"
START_TIMEOUT_S = 30.0
JOB_TIMEOUT_S = 60.0


@dataclass
class Child:
    name: str
    process: subprocess.Popen[bytes]
    out: Path

    def text(self) -> str:
        return self.out.read_text(errors="replace") if self.out.exists() else "(no output)"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class Processes:
    """The children of one test, started with their output in files, stopped at the end."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.children: list[Child] = []
        self.clients: list[httpx.Client] = []

    def start(self, name: str, args: list[str], env: dict[str, str]) -> Child:
        out = self.folder / f"{name}.log"
        with out.open("wb") as sink:
            process = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT, env=env
            )
        child = Child(name, process, out)
        self.children.append(child)
        return child

    def logs(self) -> str:
        return "\n".join(f"--- {c.name} ({c.out}) ---\n{c.text()[-4000:]}" for c in self.children)

    def stop_all(self) -> None:
        for client in self.clients:
            client.close()
        for child in reversed(self.children):
            child.stop()


@pytest.fixture
def processes(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Processes]:
    children = Processes(tmp_path)
    try:
        yield children
    finally:
        children.stop_all()
        report = getattr(request.node, "rep_call", None)
        if report is None or report.failed:
            print(children.logs())


def wait_for(what: str, probe: Callable[[], T | None], timeout_s: float, logs: Processes) -> T:
    """Call ``probe`` every 0.1 s until it returns something other than None."""
    deadline = time.monotonic() + timeout_s
    while True:
        for child in logs.children:
            if child.process.poll() is not None:
                pytest.fail(
                    f"{child.name} exited ({child.process.returncode}) "
                    f"while waiting for {what}\n{logs.logs()}"
                )
        found = probe()
        if found is not None:
            return found
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {timeout_s:g} s\n{logs.logs()}")
        time.sleep(0.1)


@dataclass
class Service:
    url: str
    client: httpx.Client
    server: Child


def start_service(
    processes: Processes, redis_url: str, *, worker: bool, deadline_s: float = 30.0
) -> Service:
    port = free_port()
    env = child_env(**{ADMIN_TOKEN_ENV: TOKEN})
    serve = ["serve", "--host", "127.0.0.1", "--port", str(port), "--deadline", str(deadline_s)]
    server = processes.start("server", cli("--redis", redis_url, *serve), env)
    if worker:
        command = [sys.executable, "-m", "worker", "--redis", redis_url, "--id", "w1"]
        processes.start("worker", [*command, "--heartbeat", "0.5"], child_env())
    url = f"http://127.0.0.1:{port}"
    client = httpx.Client(base_url=url, timeout=30)
    processes.clients.append(client)  # closed at teardown

    def ready() -> bool | None:
        try:
            return True if client.get("/readyz").status_code == 200 else None
        except httpx.TransportError:
            return None  # not listening yet

    wait_for("/readyz 200", ready, START_TIMEOUT_S, processes)
    return Service(url, client, server)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_precompute_job_through_the_api_with_a_real_worker(
    fresh_redis: RedisServer, processes: Processes
) -> None:
    service = start_service(processes, fresh_redis.url, worker=True)
    client = service.client
    assert client.get("/healthz").json()["status"] == "ok"

    def worker_alive() -> dict[str, Any] | None:
        coverage = client.get("/v1/rules/yahtzee-lower/coverage").json()
        return coverage if coverage["workers_alive"] >= 1 else None

    before = wait_for("a live worker", worker_alive, START_TIMEOUT_S, processes)
    assert before["blocks_done"] == 0
    assert before["blocks_total"] == 128

    # The operator endpoints refuse a missing or wrong token.
    job_id = Job.precompute("yahtzee-lower").id
    body = {"rules": "yahtzee-lower"}
    error_of(client.post("/v1/jobs/precompute", json=body), 401, "authorization")
    refused = client.post("/v1/jobs/precompute", json=body, headers=bearer("nope"))
    assert "wrong operator token" in error_of(refused, 403, "authorization")
    error_of(client.get(f"/v1/jobs/{job_id}"), 401, "authorization")
    error_of(client.get(f"/v1/jobs/{job_id}", headers=bearer("nope")), 403, "authorization")
    error_of(client.get(f"/v1/jobs/{job_id}", headers=bearer(TOKEN)), 404, "job_id")

    queued = client.post("/v1/jobs/precompute", json=body, headers=bearer(TOKEN))
    assert queued.status_code == 202, queued.text
    assert queued.json()["job"] == job_id
    assert queued.json()["queued"] is True

    def finished() -> dict[str, str] | None:
        answer = client.get(f"/v1/jobs/{job_id}", headers=bearer(TOKEN))
        assert answer.status_code == 200, answer.text
        record: dict[str, str] = answer.json()["record"]
        assert record["status"] in ("queued", "running", "done"), record
        return record if record["status"] == "done" else None

    record = wait_for("the job done", finished, JOB_TIMEOUT_S, processes)
    assert record["worker"] == "w1"
    assert abs(float(record["value"]) - LOWER_PIN) < TOL

    value = client.post("/v1/value", json={"rules": "yahtzee-lower", "state": "start"})
    assert value.status_code == 200, value.text
    assert abs(value.json()["value"] - LOWER_PIN) < TOL

    coverage = client.get("/v1/rules/yahtzee-lower/coverage").json()
    assert coverage["blocks_done"] == coverage["blocks_total"] == 128
    assert coverage["workers_alive"] >= 1
    assert coverage["claims_held"] == 0

    # Asking again merges into the finished job instead of queueing new work.
    again = client.post("/v1/jobs/precompute", json=body, headers=bearer(TOKEN))
    assert again.json()["queued"] is False
    assert again.json()["status"] == "done"

    # A cold game the service solves itself, beside the worker.
    upper = client.post("/v1/value", json={"rules": "yahtzee-upper", "state": "start"})
    assert abs(upper.json()["value"] - UPPER_PIN) < TOL

    assert client.get("/openapi.json").json() == json.loads(OPENAPI_PATH.read_text())
    metrics = client.get("/metrics").text
    assert 'memo_solver_requests_total{route="/v1/value",status="200"} 2.0' in metrics
    assert 'memo_solver_request_seconds_count{route="/v1/jobs/{job_id}"}' in metrics
    assert 'memo_solver_blocks_computed_total{rules="yahtzee-upper"} 64.0' in metrics
    assert 'memo_solver_blocks_computed_total{rules="yahtzee-lower"} 0.0' in metrics
    assert "memo_solver_cache_hit_ratio" in metrics


def test_the_service_rides_out_a_redis_restart(
    fresh_redis: RedisServer, processes: Processes
) -> None:
    service = start_service(processes, fresh_redis.url, worker=False)
    lower = {"rules": "yahtzee-lower", "state": "start"}
    client = service.client
    warm = client.post("/v1/value", json=lower)
    assert abs(warm.json()["value"] - LOWER_PIN) < TOL
    fresh_redis.kill()
    down = client.get("/readyz")
    assert "cannot reach Redis" in error_of(down, 503, "store")
    assert down.headers["retry-after"] == "2"
    error_of(client.get("/v1/rules/yahtzee-lower/coverage"), 503, "store")
    assert client.post("/v1/value", json=lower).json() == warm.json()  # from memory
    fresh_redis.start()

    def ready() -> bool | None:
        return True if client.get("/readyz").status_code == 200 else None

    wait_for("/readyz 200 after the restart", ready, START_TIMEOUT_S, processes)
    assert client.post("/v1/value", json=lower).json() == warm.json()
    assert service.server.process.poll() is None


def answered_after_503s(client: httpx.Client, body: dict[str, Any]) -> Callable[[], Any]:
    """A probe for wait_for: the /v1/value answer once it is not a 503."""

    def probe() -> httpx.Response | None:
        response = client.post("/v1/value", json=body)
        assert response.status_code in (200, 503), response.text
        return response if response.status_code == 200 else None

    return probe


def test_a_cold_request_during_a_redis_outage_is_a_503_and_the_service_recovers(
    fresh_redis: RedisServer, processes: Processes
) -> None:
    service = start_service(processes, fresh_redis.url, worker=False)
    lower = {"rules": "yahtzee-lower", "state": "start"}
    client = service.client
    fresh_redis.kill()
    down = client.post("/v1/value", json=lower)
    assert "cannot reach Redis" in error_of(down, 503, "store")
    fresh_redis.start()
    value = wait_for("a 200 after the restart", answered_after_503s(client, lower), 30, processes)
    assert abs(value.json()["value"] - LOWER_PIN) < TOL


def test_a_cold_request_after_a_redis_restart_is_answered(
    fresh_redis: RedisServer, processes: Processes
) -> None:
    service = start_service(processes, fresh_redis.url, worker=False)
    client = service.client
    warm = client.post("/v1/value", json={"rules": "yahtzee-lower", "state": "start"})
    assert warm.status_code == 200
    fresh_redis.kill()
    assert client.get("/readyz").status_code == 503
    fresh_redis.start()

    def ready() -> bool | None:
        return True if client.get("/readyz").status_code == 200 else None

    wait_for("/readyz 200 after the restart", ready, START_TIMEOUT_S, processes)
    upper = {"rules": "yahtzee-upper", "state": "start"}
    value = wait_for("a 200 after the restart", answered_after_503s(client, upper), 30, processes)
    assert abs(value.json()["value"] - UPPER_PIN) < TOL
