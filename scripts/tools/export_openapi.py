"""Write the HTTP service's OpenAPI document to ``openapi.json``, or check it is up to date.

The document is the one the service serves at ``/openapi.json``, written sorted and
indented (``memo_solver.service.app.openapi_document``) so that its diffs are readable. Building it
opens no store: the app is created but never started.

Run::

    .venv/bin/python scripts/tools/export_openapi.py            # (re)write openapi.json
    .venv/bin/python scripts/tools/export_openapi.py --check    # exit 1 if openapi.json differs
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_OUTPUT = REPO / "openapi.json"


def document() -> str:
    """The OpenAPI document of the app ``memo-solver serve`` runs."""
    from memo_solver.service.app import create_app, openapi_document
    from memo_solver.stores.memory import MemoryStore

    return openapi_document(create_app(lambda: (MemoryStore(), None)))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="export_openapi.py",
        description="Write the service's OpenAPI document, or check the committed one.",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if the file differs from the document the service serves",
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=DEFAULT_OUTPUT,
        help=f"the file (default: {DEFAULT_OUTPUT.name} at the repository root)",
    )
    args = parser.parse_args(argv)
    wanted = document()
    path: Path = args.output
    if args.check:
        try:
            current = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            print(f"{path} is missing: run scripts/tools/export_openapi.py", file=sys.stderr)
            return 1
        except OSError as exc:
            print(f"cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
            return 1
        if current != wanted:
            print(
                f"{path} differs from the API's OpenAPI document: run "
                "scripts/tools/export_openapi.py",
                file=sys.stderr,
            )
            return 1
        print(f"{path} is up to date")
        return 0
    path.write_text(wanted, encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
