"""The settings a session hook uses, as a plain record: their names, their defaults and
bounds (the one home of each: host/settings.Settings declares its fields with them, and
tests/unit/test_hook_config.py holds the two together), and what a hook derives from them.

A hook runs at every turn of an agent session (Stop) and within Claude Code's 1.5 s budget
(SessionEnd): its whole process is measured against `python -c pass` (server running) and
`python -c 'import sqlalchemy'` (no server). Importing pydantic-settings alone costs about
0.8x the latter, so hooks hold their settings here, read by host/quick_settings_read.py. With
a server running, a hook's whole process is meant to cost no more than 4x `python -c pass`,
so this module and its two neighbours (host/quick_settings_rules.py, host/quick_settings_read.py)
import nothing beyond `os` and `json` until they need more: not `pathlib`, `typing` or
`dataclasses` (each about half a `python -c pass`), not `zoneinfo` (the zone is checked
where it is used: the context of session-start).
"""

from __future__ import annotations

from datetime import timedelta

from ondeck.host.quick_settings_rules import (
    database_url,
    default_data_dir,
    join,
    local_server_url,
    local_zone_name,
    posix_path,
    rules_problem,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from typing import Any
    from zoneinfo import ZoneInfo

# Defaults and bounds. The data directory and the zone default to the machine's
# (`default_data_dir`, `local_zone_name`).
HOST_DEFAULT = "127.0.0.1"
PORT_DEFAULT = 8787
PORT_MAX = 65535
# Leases last at most 7 days; a month of grace on top is already far more than a silent
# holder deserves, and keeps now - grace and lease end + grace ordinary dates.
LEASE_GRACE_DEFAULT = timedelta(hours=6)
LEASE_GRACE_MAX = timedelta(days=30)
# A session silent this long is shown lost (db/predicates.SESSION_PRESUMED_LOST), and an
# event older than that does not reopen it. Shorter than the minimum, and every session
# between two turns would flap between open and lost; a session silent for a month is not
# coming back.
SESSION_GRACE_DEFAULT = timedelta(hours=12)
SESSION_GRACE_MIN = timedelta(minutes=10)
SESSION_GRACE_MAX = timedelta(days=30)
TICK_SECONDS_DEFAULT = 60.0
TICK_SECONDS_MAX = 86400  # an int: the refusal says 86400, not 86400.0

# The classification rules, which a hook sends to a server with its event.
RULE_FIELDS = ("projects", "sides", "remotes", "no_capture", "private_globs")
# Every setting a hook uses (each one of `config.Settings`' fields). Others (backup_keep, …)
# change nothing for a hook: the quick reader ignores them, and the full settings check
# them wherever they are used. In the order of HookConfig's repr.
FIELDS = tuple(
    sorted(
        (
            "data_dir",
            "database_url",
            "host",
            "lease_grace",
            "port",
            "server_url",
            "session_grace",
            "tick_seconds",
            "token",
            "tz",
            *RULE_FIELDS,
        )
    )
)


class HookConfig:
    """The settings a hook uses (a plain class: see the module's docstring)."""

    __slots__ = FIELDS

    def __init__(
        self,
        *,
        database_url: str | None = None,
        data_dir: str | None = None,
        host: str = HOST_DEFAULT,
        port: int = PORT_DEFAULT,
        server_url: str | None = None,
        token: str | None = None,
        tz: str | None = None,
        lease_grace: timedelta = LEASE_GRACE_DEFAULT,
        session_grace: timedelta = SESSION_GRACE_DEFAULT,
        tick_seconds: float = TICK_SECONDS_DEFAULT,
        projects: dict[str, str] | None = None,
        sides: dict[str, list[str]] | None = None,
        remotes: dict[str, dict[str, str]] | None = None,
        no_capture: list[str] | None = None,
        private_globs: list[str] | None = None,
    ) -> None:
        self.database_url = database_url
        self.data_dir = data_dir if data_dir is not None else default_data_dir()
        self.host = host
        self.port = port
        self.server_url = server_url
        self.token = token
        self.tz = tz if tz is not None else local_zone_name()
        self.lease_grace = lease_grace
        self.session_grace = session_grace
        self.tick_seconds = tick_seconds
        self.projects = projects or {}
        self.sides = sides or {}
        self.remotes = remotes or {}
        self.no_capture = no_capture or []
        self.private_globs = private_globs or []

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HookConfig) and self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self.url)

    def __repr__(self) -> str:
        from ondeck.core import urls

        def value(name: str) -> str:
            found = getattr(self, name)
            if name == "token" and found:
                return urls.HIDDEN
            return repr(urls.shown(found) if isinstance(found, str) else found)

        return f"HookConfig({', '.join(f'{name}={value(name)}' for name in self.__slots__)})"

    @property
    def url(self) -> str:
        return database_url(self.database_url, self.data_dir)

    @property
    def store_id(self) -> str | None:
        """The id of this config's database as the owner last learned it from the database
        itself (host/channel.read_known): what its server must answer; None: not known."""
        from ondeck.host.channel import read_known

        return read_known(posix_path(self.data_dir), self.url)

    def learned_store_id(self, store_id: str) -> None:
        """The id just read from this config's database: remembered for the next hooks."""
        from ondeck.host.channel import write_known

        write_known(posix_path(self.data_dir), self.url, store_id)

    @property
    def local_url(self) -> str:
        return local_server_url(self.host, self.port)

    @property
    def server_store_id(self) -> str | None:
        """Client mode: the store this machine's events are captured for (the id the first
        server met answered with), or None before any."""
        from ondeck.host.channel import read_known

        return read_known(posix_path(self.data_dir), f"server {self.server_url}")

    def learned_server_store_id(self, store_id: str) -> None:
        from ondeck.host.channel import write_known

        write_known(posix_path(self.data_dir), f"server {self.server_url}", store_id)

    @property
    def known_store_file(self) -> str:
        from ondeck.host.channel import KNOWN_NAME, socket_dir

        return join(socket_dir(posix_path(self.data_dir)), KNOWN_NAME)

    @property
    def owner_socket(self) -> str:
        """This machine's server's owner-only socket (host/channel.py): the hooks' only way
        to it."""
        from ondeck.host.channel import socket_path

        return socket_path(posix_path(self.data_dir), self.port)

    @property
    def spool_dir(self) -> str:
        return join(posix_path(self.data_dir), "spool")

    @property
    def zone(self) -> ZoneInfo:
        """The configured zone; a name that is not one is refused here, where it is used."""
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        from ondeck.core.errors import ConfigError

        try:
            return ZoneInfo(self.tz)
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigError(
                f"ONDECK_TZ={self.tz[:60]}: unknown time zone: use an IANA name such as "
                "Europe/Berlin"
            ) from None

    def rules(self) -> dict[str, Any]:
        """The classification rules, as the hooks send them to a server (which classifies
        a hook's event by the hook's rules: they are the hook's machine's paths)."""
        return {name: getattr(self, name) for name in RULE_FIELDS}

    @classmethod
    def from_rules(cls, rules: Any, **kwargs: Any) -> HookConfig:
        """A config holding rules a hook sent (checked: ValueError with the reason)."""
        if not isinstance(rules, dict) or set(rules) - set(RULE_FIELDS):
            raise ValueError("rules must be an object of projects, sides, remotes, ...")
        try:
            projects = str_map(rules.get("projects", {}))
            sides = {text_of(k): str_list(v) for k, v in pairs_of(rules.get("sides", {}))}
            remotes = {text_of(k): str_map(v) for k, v in pairs_of(rules.get("remotes", {}))}
            no_capture = str_list(rules.get("no_capture", []))
            private_globs = str_list(rules.get("private_globs", []))
        except Unsure:
            raise ValueError("rules hold a value of the wrong kind") from None
        problem = rules_problem(projects, sides, remotes)
        if problem is not None:
            raise ValueError(problem)
        return cls(
            projects=projects,
            sides=sides,
            remotes=remotes,
            no_capture=no_capture,
            private_globs=private_globs,
            **kwargs,
        )


class Unsure(Exception):
    """A value a quick reader does not vouch for: the full settings decide."""


def text_of(value: Any) -> str:
    if not isinstance(value, str):
        raise Unsure
    return value


def str_map(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise Unsure
    return {text_of(k): text_of(v) for k, v in value.items()}


def str_list(value: Any) -> list[str]:
    if not isinstance(value, list):
        raise Unsure
    return [text_of(v) for v in value]


def pairs_of(value: Any) -> list[tuple[Any, Any]]:
    if not isinstance(value, dict):
        raise Unsure
    return list(value.items())
