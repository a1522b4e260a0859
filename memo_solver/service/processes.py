"""``serve --workers N``: N server processes on one port, sharing the store.

The process manager is uvicorn's own (its ``Multiprocess``): the parent binds the port once,
spawns the children, which accept on that one socket, restarts a child that dies, and stops
them all on SIGINT or SIGTERM. On a stop the parent lets go of its copy of the listening
socket first (see :class:`Supervisor`). It was chosen over gunicorn (one more
dependency, and its uvicorn worker class builds its own protocol, where the one of
:mod:`.serving` writes each response once) and over forking the processes ourselves (a
fork copies numba's and numpy's threads and locks mid-state; the supervision would be
ours to write and test).

uvicorn spawns its children (fresh interpreters, not forks), so the app cannot be handed
to them as an object: each builds its own with the factory :func:`app_from_environment`,
named by import string, from the store location and settings the parent puts in
:data:`CONFIG_ENV` as JSON. Each child therefore has its own engines, block cache and
background task group; what must hold across them goes through the store (see
:meth:`memo_solver.service.service.Service.run_shared`). Metrics use Prometheus
multiprocess mode on a folder made for this run and removed after it (see
:mod:`.metrics`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from uvicorn.supervisors.multiprocess import Multiprocess

from memo_solver.jobs.storage import Location, open_store_and_queue
from memo_solver.service.settings import ApiSettings

CONFIG_ENV = "MEMO_SOLVER_SERVE_CONFIG"
"""The store and settings of ``serve --workers``, from the parent to its children."""
METRICS_ENV = "PROMETHEUS_MULTIPROC_DIR"
APP_FACTORY = f"{__name__}:app_from_environment"


def app_from_environment() -> FastAPI:
    """The app of one child process of ``serve --workers``, as its parent configured it."""
    from memo_solver.core.runtime import freeze_startup_objects
    from memo_solver.service.app import create_app

    config = json.loads(os.environ[CONFIG_ENV])
    store = config["store"]
    location: Location = store["redis"] if "redis" in store else Path(store["sqlite"])
    app = create_app(lambda: open_store_and_queue(location), ApiSettings(**config["settings"]))
    freeze_startup_objects()
    return app


class Supervisor(Multiprocess):
    """uvicorn's process manager, closing its copy of the listening socket when told to stop.

    The socket is one, shared by every process that holds it: each child closes its copy
    when it stops accepting, but as long as the parent's stays open the kernel goes on
    completing connections into the socket's queue, which nobody accepts any more and which
    are reset when the parent exits (requests sent while the children drain were accepted,
    then dropped). With the parent's copy closed, the socket closes with the last child's
    and a late client's connection is refused, as by a single-process ``serve``.
    """

    def handle_int(self) -> None:
        self._stop_listening()
        super().handle_int()

    def handle_term(self) -> None:
        self._stop_listening()
        super().handle_term()

    def _stop_listening(self) -> None:
        for sock in self.sockets:
            sock.close()


def run_processes(
    workers: int, location: Location, settings: ApiSettings, uvicorn_options: Mapping[str, Any]
) -> None:
    """Serve with ``workers`` processes until stopped (uvicorn's process manager)."""
    from uvicorn import Config

    store = {"redis": location} if isinstance(location, str) else {"sqlite": str(location)}
    config = {"store": store, "settings": dataclasses.asdict(settings)}
    with tempfile.TemporaryDirectory(prefix="memo-solver-metrics-") as folder:
        os.environ[CONFIG_ENV] = json.dumps(config)
        os.environ[METRICS_ENV] = folder  # read by each child as it imports prometheus_client
        try:
            processes = Config(APP_FACTORY, factory=True, workers=workers, **uvicorn_options)
            Supervisor(processes, sockets=[processes.bind_socket()]).run()
        finally:
            del os.environ[CONFIG_ENV], os.environ[METRICS_ENV]
