"""One exception tree for every entry point.

    OndeckError                 (exit 1, HTTP 500: a bug or an unexpected state)
    ├── InvalidInput            (exit 2, HTTP 422: bad input, nothing written)
    │   └── ConfigError         (exit 2: a setting that cannot be used)
    │       └── SchemaUnknown   (a schema revision a newer ondeck wrote: nothing written)
    ├── Conflict                (exit 3, HTTP 409: not in a state for that)
    │   ├── LeaseLost           (the token presented is not the current one)
    │   └── NothingClaimable    (no READY task to claim)
    ├── NotFound                (exit 4, HTTP 404)
    ├── Unauthorized            (exit 6, HTTP 401: no token, or one wrong, revoked or expired)
    │   └── Forbidden           (HTTP 403: a token whose scope does not allow that)
    └── Unavailable             (exit 5, HTTP 503: the database, or systemd, cannot be reached)
        └── Locked              (exit 2: another process held the database's write lock past
                                 the wait; nothing was started)

Each error's `str` is one line for a human; `code` is a stable word for programs.
The CLI and the API map these once (cli/ and api/), never per command.
"""

from __future__ import annotations


class OndeckError(Exception):
    """Something went wrong inside ondeck."""

    code = "internal"
    exit_code = 1
    http_status = 500

    def __init__(self, message: str | None = None, *, code: str | None = None) -> None:
        message = message or (self.__doc__ or self.code).strip()
        # One line, always: messages land in terminals, logs and JSON.
        super().__init__(" ".join(message.split()))
        if code is not None:
            self.code = code

    @property
    def message(self) -> str:
        return str(self)


class InvalidInput(OndeckError):
    """The input is not valid."""

    code = "invalid_input"
    exit_code = 2
    http_status = 422


class ConfigError(InvalidInput):
    """A setting has a value that cannot be used."""

    code = "invalid_setting"


class SchemaUnknown(ConfigError):
    """The database's schema revision is one this ondeck does not know (a newer ondeck
    migrated it): nothing is written into it."""

    code = "schema_unknown"


class Conflict(OndeckError):
    """The item is not in a state for that."""

    code = "conflict"
    exit_code = 3
    http_status = 409


class LeaseLost(Conflict):
    """The lease token is not the current one: the lease was lost."""

    code = "lease_lost"


class NothingClaimable(Conflict):
    """No READY task can be claimed."""

    code = "nothing_claimable"


class NotFound(OndeckError):
    """No such item."""

    code = "not_found"
    exit_code = 4
    http_status = 404


class Unauthorized(OndeckError):
    """A valid token is required."""

    code = "unauthorized"
    exit_code = 6
    http_status = 401


class Forbidden(Unauthorized):
    """This token may not do that."""

    code = "forbidden"
    http_status = 403


class Unavailable(OndeckError):
    """The database cannot be reached right now."""

    code = "unavailable"
    exit_code = 5
    http_status = 503


class Locked(Unavailable):
    """Another process held the database's write lock past the wait."""

    code = "locked"
    exit_code = 2
