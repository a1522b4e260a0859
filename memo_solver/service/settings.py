"""How the HTTP service is configured: its limits, and where the operator token comes from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from memo_solver.games.dice_of_doom.tree import check_limit

ADMIN_TOKEN_ENV = "MEMO_SOLVER_ADMIN_TOKEN"
"""The operator token of the job endpoints, read on each request: unset, they are off."""

Registration = Literal["anyone", "operator"]
REGISTRATION: Final[tuple[Registration, ...]] = ("anyone", "operator")
WholeGameSolves = Literal["off", "loopback", "anyone"]
WHOLE_GAME_SOLVES: Final[tuple[WholeGameSolves, ...]] = ("off", "loopback", "anyone")
LOOPBACK: Final = frozenset({"127.0.0.1", "::1"})
"""The clients ``--whole-game-solves loopback`` lets through: this machine's own."""

# The environment variables of ``serve``'s options (each option's default when it is not
# given, read as the option's text would be).
REGISTRATION_ENV: Final = "MEMO_SOLVER_REGISTRATION"
REGISTRATION_QUOTA_ENV: Final = "MEMO_SOLVER_REGISTRATION_QUOTA"
WHOLE_GAME_SOLVES_ENV: Final = "MEMO_SOLVER_WHOLE_GAME_SOLVES"
WHOLE_GAME_QUEUE_ENV: Final = "MEMO_SOLVER_WHOLE_GAME_QUEUE"
WHOLE_GAME_MAX_ENV: Final = "MEMO_SOLVER_WHOLE_GAME_MAX"


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
    registration: Registration = "anyone"
    """Who may register a rule set (``POST /v1/rules``): anyone, or only with the operator
    token (then the players' page sends a pasted rule set inline)."""
    registration_quota: int = 100
    """Registrations the store may hold: each is a name anyone can fill with blocks up to
    the cold budget (tens of MB apiece), so an anonymous client must not add them without
    end; past it a registration is a 429 naming the quota."""
    whole_game_solves: WholeGameSolves = "loopback"
    """Who may start a solve past the cold budget (the workers' work, or without live
    workers a whole-game solve in the server's background; as large as the operator's
    precompute): nobody, clients on this machine, or anyone."""
    whole_game_queue: int = 2
    """Such solves queued or running at once, on the store (every server process counts
    them together; background solves are counted in each process); past it, 429. The
    operator's precompute is not one of them."""
    whole_game_max: int = 100_000_000
    """Turn starts one such solve may have (every built-in: ``maxi-yatzy`` is 89 million);
    past it, 422."""

    def __post_init__(self) -> None:
        # Refused when the service starts, not in a 422 to every client that asks.
        check_limit(self.doom_limit, "doom_limit")
