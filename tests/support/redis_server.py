"""A real ``redis-server`` for the tests, on a free loopback port, with its own data folder.

The server persists the way production does (``docker-compose.yml``): an append-only file,
flushed to disk every second, and no RDB snapshots. :meth:`RedisServer.restart` brings it
back on the same port and folder, so Redis replays the AOF, which is how the tests see
what survives a stop (:meth:`RedisServer.stop`, SIGTERM) or a crash
(:meth:`RedisServer.kill`, SIGKILL).

    with RedisServer() as server:          # or server.start() ... server.close()
        run_workers(server.url)
        server.kill()
        server.restart()

:func:`ensure_redis_server` finds the binary, installing the Debian package first where
that is possible (root with ``apt-get``, as on CI).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import redis
from redis.backoff import NoBackoff
from redis.exceptions import RedisError
from redis.retry import Retry

_SEARCH_DIRS = ("/usr/bin", "/usr/local/bin", "/usr/sbin")
_INSTALL_HINT = (
    "redis-server is not installed: install it with `sudo apt-get install redis-server` "
    "(Debian/Ubuntu), `brew install redis` (macOS) or from https://redis.io/download, "
    "and make sure it is on PATH"
)
_BIND_RETRIES = 5

# Servers still running when the interpreter exits (a test that forgot them, Ctrl-C):
# stopped at exit so no redis-server outlives the test run.
_running: set[RedisServer] = set()


def find_redis_server() -> str | None:
    """The path of the ``redis-server`` binary, or ``None`` where there is none."""
    found = shutil.which("redis-server")
    if found:
        return found
    for folder in _SEARCH_DIRS:
        candidate = Path(folder) / "redis-server"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def ensure_redis_server() -> str:
    """The path of ``redis-server``, installed with apt-get first when missing, if we can.

    Installing needs root and ``apt-get`` (CI runs as root with no standard input);
    anywhere else a missing binary raises :class:`RuntimeError` saying how to install it.
    """
    found = find_redis_server()
    if found:
        return found
    apt_get = shutil.which("apt-get")
    if apt_get is None or os.geteuid() != 0:
        raise RuntimeError(_INSTALL_HINT)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (
        [apt_get, "update", "-qq"],
        [apt_get, "install", "-y", "-qq", "--no-install-recommends", "redis-server"],
    ):
        done = subprocess.run(
            command,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"{_INSTALL_HINT}\n`{' '.join(command)}` failed ({done.returncode}):\n"
                f"{done.stdout[-2000:]}{done.stderr[-2000:]}"
            )
    found = find_redis_server()
    if found is None:
        raise RuntimeError(f"{_INSTALL_HINT} (apt-get installed redis-server, yet none found)")
    return found


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class RedisServer:
    """One ``redis-server`` process with AOF persistence, on 127.0.0.1.

    The port is picked on the first :meth:`start` (or given) and kept from then on, and
    so is the data folder: a temporary one unless given, removed by :meth:`close`.
    """

    def __init__(
        self,
        data_dir: Path | None = None,
        *,
        port: int | None = None,
        binary: str | None = None,
        start_timeout_s: float = 10.0,
        extra_args: Sequence[str] = (),
    ) -> None:
        self._own_dir = data_dir is None
        self.data_dir = (
            Path(tempfile.mkdtemp(prefix="redis-test-")) if data_dir is None else data_dir
        )
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._port = port
        self._binary = binary
        self.start_timeout_s = start_timeout_s
        self.extra_args = list(extra_args)
        """More redis-server options (``--cluster-enabled yes``...), after ours."""
        self._process: subprocess.Popen[bytes] | None = None

    # -- what the tests read ---------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("the Redis server has no port yet: call start() first")
        return self._port

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs, else ``None``."""
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def log_path(self) -> Path:
        """Redis's own log (``--logfile``)."""
        return self.data_dir / "redis.log"

    @property
    def output_path(self) -> Path:
        """The process's stdout and stderr: where a bad argument's complaint goes."""
        return self.data_dir / "redis.out"

    def client(self, **kwargs: Any) -> redis.Redis:
        """A sync client of database 0; close it (``with server.client() as r:``)."""
        return redis.Redis.from_url(self.url, **kwargs)

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> Self:
        """Start the server and wait until it answers PING (RuntimeError if it does not)."""
        if self.running:
            raise RuntimeError(f"the Redis server on port {self.port} is already running")
        binary = self._binary or ensure_redis_server()
        if self._port is not None:  # given, or kept from the first start
            self._spawn(binary, may_move=False)
            return self
        for _ in range(_BIND_RETRIES):
            self._port = free_port()
            try:
                self._spawn(binary, may_move=True)
                return self
            except _PortTakenError:
                continue  # taken between free_port() and redis's bind: pick another
        self._port = None
        raise RuntimeError(f"redis-server found no free port in {_BIND_RETRIES} tries")

    def stop(self, timeout_s: float = 10.0) -> None:
        """Graceful shutdown (SIGTERM: Redis flushes the AOF), then wait for the exit."""
        self._signal_and_wait(signal.SIGTERM, timeout_s)

    def kill(self) -> None:
        """Crash the server (SIGKILL): only what Redis has written to the AOF survives."""
        self._signal_and_wait(signal.SIGKILL, 10.0)

    def wait_written(self, timeout_s: float = 10.0) -> None:
        """Wait until Redis has written to its AOF every write it had answered when called:
        what a crash of the server (not of the machine) then keeps. Redis writes its AOF
        buffer before each turn of its event loop, later (up to 2 s) while a slow fsync runs.
        """
        with self.client() as client:
            info = client.info("persistence")
            target = info["aof_current_size"] + info["aof_buffer_length"]
            deadline = time.monotonic() + timeout_s
            while client.info("persistence")["aof_current_size"] < target:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Redis wrote no AOF up to {target} B in {timeout_s:g} s")
                time.sleep(0.01)

    def restart(self) -> Self:
        """Stop the server if it runs, then start it on the same port and data folder."""
        if self.running:
            self.stop()
        return self.start()

    def close(self) -> None:
        """Stop the server and remove the data folder if it is our temporary one."""
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = f"pid {self.pid}" if self.running else "stopped"
        return f"<RedisServer 127.0.0.1:{self._port} {state} dir={self.data_dir}>"

    # -- internals -------------------------------------------------------------------------

    def _spawn(self, binary: str, *, may_move: bool) -> None:
        args = [
            binary,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", str(self.data_dir),
            "--appendonly", "yes",
            "--appendfsync", "everysec",
            "--save", "",
            "--daemonize", "no",
            "--logfile", str(self.log_path),
            *self.extra_args,
        ]  # fmt: skip
        # Redis appends to its log, and so do we to the output file (a file, not a pipe
        # nobody drains): mark where this start's lines begin, for error messages.
        log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        out_start = self.output_path.stat().st_size if self.output_path.exists() else 0
        with self.output_path.open("ab") as out:
            process = self._process = subprocess.Popen(
                args,
                cwd=self.data_dir,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        _running.add(self)
        deadline = time.monotonic() + self.start_timeout_s
        last_error: Exception | None = None
        while True:
            code = process.poll()
            if code is not None:
                self._reap()
                log = _tail(self.log_path, log_start)
                output = _tail(self.output_path, out_start)
                if may_move and "Address already in use" in log + output:
                    raise _PortTakenError
                raise RuntimeError(
                    f"redis-server exited with code {code} at start-up on port {self.port}"
                    f"\n--- {self.output_path} ---\n{output}\n--- {self.log_path} ---\n{log}"
                )
            try:
                # One try per probe (redis-py retries a timeout 3 times by default), and the
                # answer must come from our process, not from whatever else holds the port.
                with redis.Redis(
                    host="127.0.0.1",
                    port=self.port,
                    socket_connect_timeout=0.5,
                    socket_timeout=0.5,
                    retry=Retry(NoBackoff(), 0),
                ) as probe:
                    if probe.ping() and probe.info("server")["process_id"] == process.pid:
                        return
            except RedisError as error:  # not listening yet, or still LOADING the AOF
                last_error = error
            if time.monotonic() > deadline:
                self._signal_and_wait(signal.SIGKILL, 5.0)
                raise RuntimeError(
                    f"redis-server did not answer PING on port {self.port} within "
                    f"{self.start_timeout_s:g} s (last error: {last_error!r})"
                    f"\n--- {self.log_path} ---\n{_tail(self.log_path, log_start)}"
                )
            time.sleep(0.02)

    def _signal_and_wait(self, signum: signal.Signals, timeout_s: float) -> None:
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signum)
            try:
                process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._reap()

    def _reap(self) -> None:
        """Wait for the exited process and forget it."""
        if self._process is not None:
            self._process.wait()
            self._process = None
        _running.discard(self)


def _tail(path: Path, offset: int) -> str:
    """What was appended to ``path`` since ``offset`` (its last 4000 bytes), for errors."""
    try:
        with path.open("rb") as file:
            file.seek(offset)
            return file.read()[-4000:].decode(errors="replace") or "(empty)"
    except OSError:
        return "(missing)"


class _PortTakenError(Exception):
    """The port picked was taken before redis-server could bind it."""


@atexit.register
def _stop_leftovers() -> None:
    for server in list(_running):
        server.kill()
