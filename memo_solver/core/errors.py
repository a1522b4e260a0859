"""The one base of every error the user can fix by changing what they gave.

Each surface maps it in one place: the CLI prints ``memo-solver: error: <str(error)>`` and
exits with status 2; the HTTP service answers ``status`` with
``{"error": {"field": field, "message": message}}``. A new kind of bad input is a subclass
here or beside its parser, and both surfaces report it with no change.

Store faults are not user errors (``memo_solver.core.store.StoreUnavailableError``: exit 75,
503); a store location that cannot be a store is both, and reported as the user's.
"""

from __future__ import annotations

from typing import Any


class UserError(ValueError):
    """Input the user can fix: ``field`` names what is wrong, ``message`` says how.

    A ValueError, as most of the errors it unites were before it, so that code which checks
    a value by catching ValueError (job messages, canonical states) still does.
    """

    field: str = "input"
    """What is wrong: the option, JSON key or part of a state the message is about."""
    status: int = 422
    """The HTTP status the service answers: 422 unless the subclass or instance says
    otherwise (401 and 403 for the operator token, 404 for an unknown job, 409 for a job
    endpoint on a store without a queue)."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if field is not None:
            self.field = field

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt from its attributes rather than through the constructor, whose arguments
        # differ between subclasses: any user error survives pickling whole, as it must to
        # come back from a worker process.
        return _rebuilt, (type(self), self.args, self.__dict__)


def _rebuilt(cls: type[UserError], args: tuple[Any, ...], state: dict[str, Any]) -> UserError:
    error = cls.__new__(cls, *args)
    error.__dict__.update(state)
    return error
