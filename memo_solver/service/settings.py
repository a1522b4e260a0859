"""How the HTTP service is configured: its limits, and where the operator token comes from."""

from __future__ import annotations

from dataclasses import dataclass

from memo_solver.games.dice_of_doom.tree import check_limit

ADMIN_TOKEN_ENV = "MEMO_SOLVER_ADMIN_TOKEN"
"""The operator token of the job endpoints, read on each request: unset, they are off."""


@dataclass(frozen=True)
class ApiSettings:
    deadline_s: float = 10.0
    """How long a request waits for a cold computation before 503 + Retry-After."""
    cache_bytes: int = 256 << 20
    """In-process block cache per rule set (the whole ``yahtzee`` game is 8 MiB)."""
    max_body_bytes: int = 1 << 20
    retry_after_s: int = 2
    cold_budget: int = 2_500_000
    """Turn starts a cold Yahtzee-family request may compute here (the whole 15-box
    ``yatzy`` is 2.1 million): past it the state goes to the workers (503) or is refused
    (422 naming the budget), so one early ``maxi-yatzy`` question (89 million) cannot
    stall everyone else's cold requests."""
    need_budget: int = 30_000_000
    """Chances (turn starts times needs) a cold request with a need may compute here, about
    10 CPU s and 240 MB of blocks: a ``yahtzee`` need table at the default cap answers cold
    with up to nine boxes open (26 million); past it, as past ``cold_budget``."""
    rule_engines: int = 16
    """Engines kept open at once for rule sets outside the built-ins (least recently used
    closed first); their memos share ``cache_bytes``."""
    doom_limit: int = 1_000_000
    """Positions one Dice of Doom request may solve (about 0.33 GB): every 2 x 2 and 3 x 3
    board fits; a larger board past it gets a 422 naming the limit."""

    def __post_init__(self) -> None:
        # Refused when the service starts, not in a 422 to every client that asks.
        check_limit(self.doom_limit, "doom_limit")
