"""Run the README's shell examples for real, and check or rewrite the output it shows.

    python scripts/tools/readme_examples.py          # check: exit 1 and a diff if any drifted
    python scripts/tools/readme_examples.py --write  # rewrite README.md's drifted output in place
    python scripts/tools/readme_examples.py --full   # also the blocks that solve for minutes

Every ```console block is a sequence of ``$ command`` lines, each followed by the output it
shows. The blocks run in order in one sandbox, the way a reader would run them: a temporary
folder as the working directory, an SQLite store holding the solved ``yahtzee`` game (the
README says its examples were captured on one), and, for the blocks that name Redis or the
HTTP service, a real ``redis-server``, workers and ``memo-solver serve`` on free loopback
ports (``127.0.0.1:6379`` and ``localhost:8000`` in the text are rewritten to them, and
``/tmp/`` to the sandbox's folder, and back in what the commands print).

Output matches line by line, where ``...`` stands for any text inside a line, and a line of
``...`` alone for any number of lines (timings, paths, worker ids, cut JSON). A directive in
an HTML comment on the line before a block says what it needs:

- ``<!-- readme: skip (why) -->``: not run (docker, a fresh machine, an interrupted run);
- ``<!-- readme: full (why) -->``: run only with ``--full`` (minutes of solving);
- ``<!-- readme: workers=2 server -->``: those processes run against the Redis first;
- ``<!-- readme: input=13456,,23456 -->``: the lines typed at the prompts, in a terminal
  (``play``); after the last one the terminal sends end-of-file;
- ``<!-- readme: until-match -->``: each command runs again until its output matches, for
  at most a minute (a job the workers finish in the background).

A block with no directive runs as is. ``--write`` replaces only the output of commands
whose output no longer matches, so the ellipses of matching ones stay.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pty
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from support.redis_server import RedisServer  # noqa: E402  (the tests' real redis-server helper)

README = ROOT / "README.md"
TOKEN = "s3cret"
COMMAND_TIMEOUT_S = 300.0
START_TIMEOUT_S = 60.0
UNTIL_MATCH_S = 60.0
_DIRECTIVE = re.compile(r"<!--\s*readme:\s*(.*?)\s*-->")


@dataclass
class Step:
    command: str
    expected: list[str]
    first_line: int
    """Index in the README's lines of the first expected output line."""


@dataclass
class Block:
    directive: str
    steps: list[Step] = field(default_factory=list)

    def option(self, name: str) -> str | None:
        for word in self.directive.split():
            key, _, value = word.partition("=")
            if key == name:
                return value
        return None


def parse(lines: list[str]) -> list[Block]:
    """The console blocks, with their directives and steps."""
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        if lines[index].strip() != "```console":
            index += 1
            continue
        found = _DIRECTIVE.search(lines[index - 1]) if index else None
        block = Block(found.group(1) if found else "")
        index += 1
        while lines[index].strip() != "```":
            line = lines[index]
            if line.startswith("$ "):
                command = line[2:]
                while command.endswith("\\"):  # a command continued on the next line
                    index += 1
                    command = command[:-1] + lines[index].strip()
                block.steps.append(Step(command, [], index + 1))
            elif block.steps:
                block.steps[-1].expected.append(line)
            index += 1
        blocks.append(block)
        index += 1
    return blocks


def matches(expected: list[str], actual: list[str]) -> bool:
    """Line by line, ``...`` inside a line matching any text, alone any lines."""
    pattern = ""
    for line in expected:
        if line.strip() == "...":
            pattern += r"(?:[^\n]*\n)*?"
        else:
            pattern += ".*?".join(re.escape(part) for part in line.split("...")) + r"\n"
    text = "".join(line + "\n" for line in actual)
    return re.fullmatch(pattern, text) is not None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _wait_until(ready: object, what: str, process: subprocess.Popen[bytes] | None) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{what} exited with status {process.returncode}")
        with contextlib.suppress(OSError):
            if ready():  # type: ignore[operator]
                return
        time.sleep(0.1)
    raise RuntimeError(f"{what} was not ready within {START_TIMEOUT_S:.0f} s")


class Sandbox:
    """The folder, store, Redis and processes the README's commands run against."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        bin_dir = Path(sys.executable).parent
        self.env = {
            **os.environ,
            "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "MEMO_SOLVER_STORE": str(folder / "store.sqlite3"),
            "MEMO_SOLVER_ADMIN_TOKEN": TOKEN,
            "OPENBLAS_NUM_THREADS": "1",
            "COLUMNS": "100",
            "TERM": "dumb",
        }
        for name in ("MEMO_SOLVER_REDIS_URL", "MEMO_SOLVER_WORKER_ID"):
            self.env.pop(name, None)
        self.redis: RedisServer | None = None
        self.http_port = _free_port()
        self.workers: list[subprocess.Popen[bytes]] = []
        self.server: subprocess.Popen[bytes] | None = None
        self._run(["memo-solver", "precompute", "--rules", "yahtzee"])

    def _run(self, argv: list[str]) -> None:
        subprocess.run(argv, env=self.env, cwd=self.folder, check=True, capture_output=True)

    def redis_url(self, db: int = 0) -> str:
        if self.redis is None:
            self.redis = RedisServer()
            self.redis.start()
        return f"redis://127.0.0.1:{self.redis.port}/{db}"

    def rewrite(self, command: str) -> str:
        """The command with the README's well-known addresses replaced by the sandbox's."""
        if "6379" in command:
            self.redis_url()  # started on first use
            assert self.redis is not None
            command = command.replace("127.0.0.1:6379", f"127.0.0.1:{self.redis.port}")
        command = command.replace("localhost:8000", f"127.0.0.1:{self.http_port}")
        command = command.replace(" /tmp/", f" {self.folder}/")
        return command.replace("--port 8000", f"--port {self.http_port}")

    def ensure(self, block: Block) -> None:
        """Start what the block's directive names, if not running yet."""
        wanted = int(block.option("workers") or 0)
        while len(self.workers) < wanted:
            self.workers.append(
                subprocess.Popen(
                    [sys.executable, "-m", "worker", "--redis", self.redis_url()],
                    env=self.env,
                    cwd=self.folder,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
            self._wait_for_workers(len(self.workers))
        if block.option("server") is not None and self.server is None:
            serve = ["memo-solver", "--redis", self.redis_url(), "serve"]
            self.server = subprocess.Popen(
                [*serve, "--port", str(self.http_port)],
                env=self.env,
                cwd=self.folder,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            url = f"http://127.0.0.1:{self.http_port}/readyz"
            _wait_until(
                lambda: urllib.request.urlopen(url, timeout=1).status == 200, "serve", self.server
            )

    def _wait_for_workers(self, count: int) -> None:
        """Until ``count`` workers of this host beat (as ``worker --check`` lists them)."""

        def alive() -> bool:
            check = subprocess.run(
                [sys.executable, "-m", "worker", "--redis", self.redis_url(), "--check"],
                env=self.env,
                capture_output=True,
                text=True,
            )
            return f"check: {count} live" in check.stdout

        _wait_until(alive, f"{count} workers", self.workers[-1])

    def run(self, command: str, typed: list[str] | None) -> list[str]:
        """What the command prints (standard output and error, as a terminal shows them),
        with the sandbox's addresses written back as the README's."""
        command = self.rewrite(command)
        if typed is not None:
            printed = _in_terminal(command, typed, self.env, self.folder)
        else:
            printed = self._capture(command)
        text = "\n".join(printed).replace(f"127.0.0.1:{self.http_port}", "localhost:8000")
        text = text.replace(f"{self.folder}/", "/tmp/")
        if self.redis is not None:
            text = text.replace(f"127.0.0.1:{self.redis.port}", "127.0.0.1:6379")
        return text.split("\n") if printed else []

    def _capture(self, command: str) -> list[str]:
        done = subprocess.run(
            ["bash", "-c", command],
            env=self.env,
            cwd=self.folder,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
        )
        return _lines(done.stdout)

    def close(self) -> None:
        for process in [*self.workers, *([self.server] if self.server else [])]:
            process.send_signal(signal.SIGTERM)
        for process in [*self.workers, *([self.server] if self.server else [])]:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self.redis is not None:
            self.redis.close()


def _lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _in_terminal(command: str, typed: list[str], env: dict[str, str], cwd: Path) -> list[str]:
    """Run an interactive command in a pseudo-terminal, typing each line at its prompt."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the command, in the terminal
        os.chdir(cwd)
        os.execvpe("bash", ["bash", "-c", command], env)
    output = b""
    pending = list(typed)
    deadline = time.monotonic() + COMMAND_TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                output += chunk
            # A prompt: the text so far ends in ': ' and the command waits for a line.
            if not ready and output.endswith(b": "):
                os.write(fd, (pending.pop(0) + "\n").encode() if pending else b"\x04")
    finally:
        with contextlib.suppress(ChildProcessError):
            os.kill(pid, signal.SIGTERM)
            os.waitpid(pid, 0)
        os.close(fd)
    return _lines(output.decode(errors="replace"))


@dataclass
class Drift:
    step: Step
    actual: list[str]


def run_readme(lines: list[str], full: bool = False) -> Iterator[Drift]:
    """Every step whose output no longer matches what the README shows (``full``: with
    the blocks marked ``full`` too)."""
    with tempfile.TemporaryDirectory(prefix="readme-") as folder:
        sandbox = Sandbox(Path(folder))
        try:
            for block in parse(lines):
                if block.option("skip") is not None or not block.steps:
                    continue
                if block.option("full") is not None and not full:
                    continue
                sandbox.ensure(block)
                raw = block.option("input")
                typed = raw.split(",") if raw is not None else None
                for step in block.steps:
                    actual = sandbox.run(step.command, typed)
                    deadline = time.monotonic() + UNTIL_MATCH_S
                    while block.option("until-match") is not None and time.monotonic() < deadline:
                        if matches(step.expected, actual):
                            break
                        time.sleep(0.2)
                        actual = sandbox.run(step.command, typed)
                    if not matches(step.expected, actual):
                        yield Drift(step, actual)
        finally:
            sandbox.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite drifted output in place")
    parser.add_argument("--full", action="store_true", help="also the blocks marked full")
    parser.add_argument("--readme", type=Path, default=README, help="default: README.md")
    args = parser.parse_args()
    if shutil.which("memo-solver", path=str(Path(sys.executable).parent)) is None:
        raise SystemExit("run with the project's venv python: .venv/bin/python " + sys.argv[0])
    lines = args.readme.read_text(encoding="utf-8").split("\n")
    drifts = list(run_readme(lines, full=args.full))
    for drift in drifts:
        print(f"line {drift.step.first_line}: $ {drift.step.command}")
        print("  README shows:\n    " + "\n    ".join(drift.step.expected))
        print("  it prints:\n    " + "\n    ".join(drift.actual))
    if args.write and drifts:
        for drift in sorted(drifts, key=lambda d: -d.step.first_line):
            start = drift.step.first_line
            lines[start : start + len(drift.step.expected)] = drift.actual
        args.readme.write_text("\n".join(lines), encoding="utf-8")
        print(f"rewrote {len(drifts)} outputs in {args.readme}")
        return 0
    print(f"{len(drifts)} of the README's outputs drifted" if drifts else "README output is true")
    return 1 if drifts else 0


if __name__ == "__main__":
    sys.exit(main())
