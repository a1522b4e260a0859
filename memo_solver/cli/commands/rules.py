"""``memo-solver rules``: the built-in rule sets listed, or one printed as its file."""

from __future__ import annotations

import argparse

from memo_solver.cli.command import Command
from memo_solver.cli.common import Output, UsageError


def _show(name: str | None, out: Output) -> int:
    from memo_solver.games.yahtzee import format_rule_document, get_rule_set, rule_set_document

    if name is None:
        raise UsageError("rules show: name the built-in rule set to print, e.g. yatzy")
    document = rule_set_document(get_rule_set(name))
    out.emit(document, format_rule_document(document).rstrip("\n"))
    return 0


def _list(name: str | None, out: Output) -> int:
    from memo_solver.games.yahtzee import RULE_SETS

    if name is not None:
        raise UsageError(f"rules list takes no name (did you mean 'rules show {name}'?)")
    rows = [
        {
            "name": r.name,
            "description": r.description,
            "boxes": [c.name for c in r.categories],
            "start_value": r.start_value,
            "fingerprint": r.fingerprint,
        }
        for r in RULE_SETS.values()
    ]
    width = max(len(r["name"]) for r in rows)  # type: ignore[arg-type]
    text = "\n".join(
        f"{r['name']:<{width}}  {r['start_value']:>14.10f}  {r['description']}" for r in rows
    )
    out.emit(rows, text)
    return 0


ACTIONS = {"list": _list, "show": _show}


def _rules_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "action", nargs="?", choices=tuple(ACTIONS), default="list", help="(default: list)"
    )
    sub.add_argument("name", nargs="?", help="with show: the built-in rule set to print")


def _rules(args: argparse.Namespace, out: Output) -> int:
    return ACTIONS[args.action](args.name, out)


RULES = Command(
    "rules",
    "list the built-in rule sets, or print one as its file",
    _rules_options,
    _rules,
)
