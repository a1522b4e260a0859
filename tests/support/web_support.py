"""What the browser tests of the players' page share: Chromium, the service, axe-core.

- :func:`chromium_or_reason` finds Debian's ``/usr/bin/chromium`` (installing the package
  first where that is possible: root with ``apt-get``, as on CI), or says why there is none;
- :class:`Service` runs ``memo-solver --store PATH serve`` as a child process on a free
  loopback port with an SQLite store of its own, and stops it afterwards;
- :func:`serious_violations` runs axe-core (the copy bundled in ``axe-playwright-python``,
  so nothing is fetched) in a page and returns its serious and critical violations.

Playwright drives the system Chromium (``executable_path``): ``playwright install`` is
never run, so no browser is downloaded.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from support.redis_server import free_port

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "artifacts" / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PHONE = {"width": 375, "height": 667}
DESKTOP = {"width": 1280, "height": 900}


def chromium_or_reason() -> tuple[str | None, str]:
    """(path of Chromium, "") or (None, why the browser tests cannot run here)."""
    if _runs(CHROMIUM):
        return str(CHROMIUM), ""
    apt_get = shutil.which("apt-get")
    if apt_get is None or os.geteuid() != 0:
        return None, (
            f"{CHROMIUM} is missing and cannot be installed here (needs root and apt-get): "
            "install Debian's chromium package (apt-get install chromium)"
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in ([apt_get, "update", "-qq"], [apt_get, "install", "-y", "-qq", "chromium"]):
        done = subprocess.run(
            command, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            tail = (done.stdout + done.stderr)[-1000:]
            return None, f"{CHROMIUM} is missing and `{' '.join(command)}` failed: {tail}"
    if _runs(CHROMIUM):
        return str(CHROMIUM), ""
    return None, f"apt-get installed chromium, yet {CHROMIUM} does not run"


def _runs(binary: Path) -> bool:
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        return False
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        done = subprocess.run(
            [str(binary), "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=30,
            check=False,
        )
        return done.returncode == 0
    return False


class Service:
    """``memo-solver --store FOLDER/store.sqlite serve`` on a free port, for a with block."""

    def __init__(
        self, folder: Path, *, start_timeout_s: float = 30.0, options: Sequence[str] = ()
    ) -> None:
        self.folder = folder
        self.options = list(options)
        """More options of ``serve``."""
        self.store = folder / "store.sqlite"
        self.log_path = folder / "serve.log"
        self.start_timeout_s = start_timeout_s
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Self:
        self.folder.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMO_SOLVER_")}
        env["OPENBLAS_NUM_THREADS"] = "1"
        for _ in range(3):  # another process may take the port before the service binds it
            self.port = free_port()
            command = [
                sys.executable, "-m", "memo_solver", "--store", str(self.store),
                "serve", "--host", "127.0.0.1", "--port", str(self.port), *self.options,
            ]  # fmt: skip
            with self.log_path.open("ab") as log:
                self.process = subprocess.Popen(
                    command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env, cwd=REPO
                )
            if self._wait_ready():
                return self
            self._stop()
        raise RuntimeError(f"the service did not start; its log:\n{self.log()}")

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop()

    def _wait_ready(self) -> bool:
        assert self.process is not None
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as answer,
            ):
                if answer.status == 200:
                    return True
            time.sleep(0.1)
        return False

    def _stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def log(self) -> str:
        with contextlib.suppress(OSError):
            return self.log_path.read_text(errors="replace")[-4000:]
        return ""


def axe_script() -> str:
    """axe-core's source, as bundled in ``axe-playwright-python`` (nothing is downloaded)."""
    import axe_playwright_python

    return (Path(axe_playwright_python.__file__).parent / "axe.min.js").read_text()


def serious_violations(page: Any) -> list[dict[str, Any]]:
    """axe-core's violations of impact serious or critical in ``page``, shortened."""
    page.evaluate(axe_script())
    results = page.evaluate(
        "() => axe.run(document, {resultTypes: ['violations'],"
        " runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa',"
        " 'wcag22aa', 'best-practice']}})"
    )
    return [
        {
            "id": v["id"],
            "impact": v["impact"],
            "help": v["help"],
            "nodes": [n["target"] for n in v["nodes"]][:5],
        }
        for v in results["violations"]
        if v.get("impact") in ("serious", "critical")
    ]
