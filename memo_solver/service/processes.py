"""``serve --workers N``: N server processes on one port, sharing the store.

The process manager is uvicorn's own (its ``Multiprocess``): the parent binds the port once,
spawns the children, which accept on that one socket, restarts a child that dies, and stops
them all on SIGINT or SIGTERM. On a stop the parent first makes the socket ignore new
connections and lets go of its copy of it (see :class:`Supervisor`). It was chosen over
gunicorn (one more dependency, and its uvicorn worker class builds its own protocol, where
the one of :mod:`.serving` writes each response once) and over forking the processes
ourselves (a fork copies numba's and numpy's threads and locks mid-state; the supervision
would be ours to write and test).

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

import ctypes
import dataclasses
import json
import os
import socket
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
SO_ATTACH_FILTER = 26
"""Linux's option attaching a classic BPF program to a socket (not in :mod:`socket`)."""


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


class SockFilter(ctypes.Structure):
    """One classic BPF instruction (``struct sock_filter``)."""

    _fields_ = [
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    ]


class SockFprog(ctypes.Structure):
    """A classic BPF program (``struct sock_fprog``), as ``SO_ATTACH_FILTER`` takes it."""

    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(SockFilter))]


DROP_SYN = (SockFilter * 5)(
    SockFilter(0x30, 0, 0, 13),  # ldb [13]: the TCP header's flags (a TCP socket's filter
    # sees the segment from its TCP header on)
    SockFilter(0x54, 0, 0, 0x12),  # and #(SYN|ACK)
    SockFilter(0x15, 0, 1, 0x02),  # jeq #SYN: a new connection's first segment...
    SockFilter(0x06, 0, 0, 0),  # ret #0: ...is dropped
    SockFilter(0x06, 0, 0, 0xFFFFFFFF),  # ret #-1: every other segment is kept whole
)
"""A socket filter dropping the SYN that opens a connection, and nothing else."""


class Supervisor(Multiprocess):
    """uvicorn's process manager, stopping the listening socket's intake before its children.

    The socket is one, shared by every process that holds it, and it listens until the
    last of them closes it. The kernel completes a client's handshake into the socket's
    accept queue with no process involved; the client's ``connect`` returns and it sends
    its request. When the last copy closes, Linux resets every connection still in the
    queue (``inet_csk_listen_stop``, the same on ``shutdown(SHUT_RD)``): accepted by the
    kernel, dropped by the server. A child accepts until it stops serving, then closes
    its copy; a queue that fills between its last ``accept`` and its ``close`` is reset,
    and a busy machine can stretch that gap. (The parent's copy, left open, once kept the
    port completing connections that no process would serve until the parent exited.)

    So on SIGINT or SIGTERM the parent, before it tells the children to stop, attaches
    :data:`DROP_SYN` to the socket (a filter belongs to the socket, so it holds in every
    process) and closes its copy. From then on no handshake begins: the client's SYN is
    dropped, and it sends it again (Linux retries after 1 s, then 2, 4, ... s more) until
    the children have closed the socket; then it finds no listener and is refused, as by
    a single-process ``serve``. A handshake that began before the filter completes one
    round trip later, into the queue, and the children go on accepting until they stop
    serving (uvicorn's ``Server.shutdown`` stops accepting and closes the socket in one
    step, and a child's event loop accepts until the queue is empty each time it polls).
    What is left, in the kernel's terms: a handshake whose final ACK reaches the socket
    only after the last child's ``close``, i.e. one that began before the filter and took
    longer than the parent's signalling of the children and their way to ``shutdown``
    (a round trip that long, or its ACK lost or held back by a full queue), is reset. No
    system call takes a listener out of service and hands over its half-open handshakes.
    On loopback a handshake is over within the client's ``connect`` call, in the kernel.

    A child stopping alone (SIGHUP's restart, SIGTTOU) leaves the filter off: its siblings
    and the parent keep the socket listening, and they accept what its queue holds.
    """

    def handle_int(self) -> None:
        self._stop_listening()
        super().handle_int()

    def handle_term(self) -> None:
        self._stop_listening()
        super().handle_term()

    def _stop_listening(self) -> None:
        program = SockFprog(len(DROP_SYN), DROP_SYN)
        for sock in self.sockets:
            if sock.family in (socket.AF_INET, socket.AF_INET6):
                sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, bytes(program))
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
