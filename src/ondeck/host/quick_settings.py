"""The settings a session hook needs, read without pydantic.

A hook runs at every turn of an agent session (Stop) and within Claude Code's 1.5 s budget
(SessionEnd): its whole process is measured against `python -c pass` (server running) and
`python -c 'import sqlalchemy'` (no server). Importing pydantic-settings alone costs about
0.8x the latter, so hooks read their settings here: the environment (`ONDECK_*`, any case)
over the TOML file, as `config.Settings` reads them. Anything this reader is not sure of (a
value of an unexpected type or form, a key in another case) makes it give up (`None`), and
the caller reads the full settings instead, which accept or refuse the value with their own
message: so the two can never disagree on a value they both accept, and
tests/unit/test_hook_config.py holds them together.

The path, URL and name rules below are the ones `config.Settings` uses. With a
server running, a hook's whole process is meant to cost no more than 4x `python -c pass`, so
this module imports nothing beyond `os` and `json` until it needs more: not `pathlib`,
`typing` or `dataclasses` (each about half a `python -c pass`), not `zoneinfo` (the zone is
checked where it is used: the context of session-start).
"""

from __future__ import annotations

import json
import os
from datetime import timedelta

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any
    from zoneinfo import ZoneInfo


NAME_PATTERN = r"^[A-Za-z0-9._-]{1,64}$"  # = validation.PROJECT_PATTERN, for sides too
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
RULE_KEYS = frozenset({"side", "project"})


def posix_path(text: str) -> str:
    """`str(pathlib.Path(text).expanduser())`, without importing pathlib: repeated slashes
    and `.` parts dropped, `..` kept, a leading `//` kept (tests/unit/test_hook_config.py
    checks it against pathlib)."""
    text = os.path.expanduser(text)
    if text.startswith("//") and not text.startswith("///"):
        root = "//"  # POSIX leaves the meaning of exactly two leading slashes open
    else:
        root = "/" if text.startswith("/") else ""
    parts = [part for part in text.split("/") if part and part != "."]
    return root + "/".join(parts) if (root or parts) else "."


def join(base: str, *names: str) -> str:
    """`str(Path(base) / name …)` for a base already made by posix_path."""
    if base == ".":
        return "/".join(names)
    return base + ("" if base.endswith("/") else "/") + "/".join(names)


ABSOLUTE_HINT = "write an absolute path (~ is expanded)"


def absolute_text(value: str, *, hint: str = ABSOLUTE_HINT) -> str:
    """An absolute path, `~` expanded and written as `pathlib` writes it; ValueError saying
    why for an empty or relative one. Relative to what? The session hook runs in each
    project's folder: a relative path would give each project its own empty database."""
    if not value.strip():
        raise ValueError(f"the path is empty: {hint}")
    if "\x00" in value:
        raise ValueError("the path contains a NUL character")
    expanded = os.path.expanduser(value)
    if expanded.startswith("~"):  # `~name` for no such user (pathlib: RuntimeError)
        raise ValueError(
            f"the path {value!r:.60} starts with ~ but there is no such home directory "
            "(HOME unset, or no such user)"
        )
    if not expanded.startswith("/"):
        raise ValueError(
            f"the path {value!r:.60} is relative, so it would depend on the directory each "
            f"command runs in: {hint}"
        )
    return posix_path(expanded)


def _xdg(variable: str, fallback: str) -> str:
    # The XDG spec: "a relative path in any of these variables ... should be considered
    # invalid and ignored".
    base = os.environ.get(variable, "")
    return base if base.startswith("/") else fallback


def config_home() -> str:
    """`$XDG_CONFIG_HOME` or `~/.config`, absolute; ValueError when there is no home."""
    return absolute_text(_xdg("XDG_CONFIG_HOME", "~/.config"))


def config_file() -> str | None:
    """The TOML file to read: `$ONDECK_CONFIG` (ValueError when it is not an absolute path),
    else the XDG place, or None when there is no home directory to look in."""
    explicit = os.environ.get("ONDECK_CONFIG")
    if explicit is not None:
        return absolute_text(explicit)
    try:
        return join(config_home(), "ondeck", "config.toml")
    except ValueError:
        return None


def default_data_dir() -> str:
    # Not checked here: the settings check it like a given value (no HOME is refused there).
    return join(_xdg("XDG_DATA_HOME", "~/.local/share"), "ondeck")


def local_zone_name() -> str:
    """The machine's IANA zone name: `$TZ`, `/etc/timezone`, the `/etc/localtime` link, else UTC."""
    tz = os.environ.get("TZ", "").lstrip(":")
    if (tz and "/" in tz) or tz == "UTC":
        return tz
    try:
        with open("/etc/timezone") as handle:
            name = handle.read().strip()
        if name:
            return name
    except OSError:
        pass
    try:
        target = os.readlink("/etc/localtime")
        if "zoneinfo/" in target:
            return target.split("zoneinfo/", 1)[1]
    except OSError:
        pass
    return "UTC"


# --- the database URL ---------------------------------------------------------------------

_NO_MEMORY = (
    "write an absolute file path such as sqlite:////srv/ondeck/ondeck.db (four slashes) "
    "or sqlite:///~/ondeck.db"
)
_URL_FORMS = "sqlite:////absolute/path.db or postgresql+psycopg://user@host/db"
# The stores and the drivers ondeck ships with (`postgresql://` means psycopg 3).
_DRIVERS = {"sqlite": ("", "pysqlite"), "postgresql": ("", "psycopg")}
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def check_database_url(value: str) -> str:
    """The URL to use: a SQLite URL must name an absolute file (`~` expanded, the URL
    rewritten); a PostgreSQL URL passes unchanged once its form is one the engine takes.
    ValueError saying why otherwise."""
    url = value.strip()
    if not url:
        raise ValueError(
            f"the URL is empty: unset it for the SQLite file in ONDECK_DATA_DIR, or write "
            f"{_URL_FORMS}"
        )
    scheme, sep, rest = url.partition("://")
    backend, plus, driver = scheme.partition("+")
    well_formed = (
        backend[:1].isalpha()
        and set(backend) <= _SCHEME_CHARS
        and (not plus or (driver and set(driver.replace("_", "")) <= _SCHEME_CHARS))
    )
    if not sep or not well_formed:
        raise ValueError(f"not a database URL: write {_URL_FORMS}")
    backend, driver = backend.lower(), driver.lower()
    if driver not in _DRIVERS.get(backend, ()):
        raise ValueError("only sqlite:/// and postgresql+psycopg:// URLs are supported")
    if backend == "postgresql":
        if not _port_readable(url):
            raise ValueError("the port is not a number from 0 to 65535")
        return url
    if not rest.startswith("/") or rest == "/":
        raise ValueError(f"no database file, so nothing would be kept: {_NO_MEMORY}")
    raw = rest[1:]
    if "?" in raw:
        raise ValueError(f"SQLite URL options (after '?') are not supported: {_NO_MEMORY}")
    if "%" in raw:  # SQLAlchemy reads the path %-decoded
        from urllib.parse import unquote

        raw = unquote(raw)
    if raw == ":memory:" or raw.startswith("file:"):
        raise ValueError(f"an in-memory or file: URI database is refused: {_NO_MEMORY}")
    path = absolute_text(raw, hint=_NO_MEMORY)
    if os.path.isdir(path):
        raise ValueError(f"{path!r:.60} is a directory: {_NO_MEMORY}")
    return sqlite_url(path, scheme=scheme)


def _port_readable(url: str) -> bool:
    # SQLAlchemy would fail on it with a bare ValueError, far from the setting.
    from urllib.parse import urlsplit

    try:
        port = urlsplit(url).port
    except ValueError:
        return False
    return port is None or port >= 0


def sqlite_url(path: str, *, scheme: str = "sqlite") -> str:
    """The URL of a SQLite file, escaped so SQLAlchemy reads back exactly `path`."""
    # Only what SQLAlchemy's URL parser would take for something else: %-escapes, the query
    # and the fragment. Anything else (spaces, Korean) it reads back as written.
    quoted = path.replace("%", "%25").replace("?", "%3F").replace("#", "%23")
    return f"{scheme}:///{quoted}"


def database_url(checked: str | None, data_dir: str | os.PathLike[str]) -> str:
    """The database URL: the configured one (already through check_database_url), else the
    SQLite file in the data directory."""
    if checked:
        return checked
    return sqlite_url(join(posix_path(os.fspath(data_dir)), "ondeck.db"))


# A token guards the whole store, and the dashboard's signing key is derived from it, so a
# signed form token (which the login page hands anyone) lets a guesser test candidates
# offline at full speed: only a long random token resists. 32 characters of hex are 128
# bits; `openssl rand -hex 32` (64 characters) is what the README recommends.
TOKEN_MIN_CHARS = 32
_TOKEN_MIN_DISTINCT = 8
TOKEN_HOW = "make one with `openssl rand -hex 32`"


def check_token(value: str) -> str:
    """A token (ONDECK_TOKEN, or one a request presents) that can resist guessing; else
    ValueError saying why and how to make one."""
    if not value.strip():
        raise ValueError(f"a blank token guards nothing: {TOKEN_HOW}")
    if any(c.isspace() or not c.isprintable() for c in value):
        raise ValueError(f"a token has no spaces, line breaks or control characters: {TOKEN_HOW}")
    if len(value) < TOKEN_MIN_CHARS:
        raise ValueError(
            f"{len(value)} characters are too few to resist guessing (at least "
            f"{TOKEN_MIN_CHARS}): {TOKEN_HOW}"
        )
    if len(set(value)) < _TOKEN_MIN_DISTINCT:
        raise ValueError(
            f"a token of {len(set(value))} different characters is guessable: {TOKEN_HOW}"
        )
    return value


_SERVER_FORM = "write http(s)://host:port, such as https://deck.example.net:8787"


def check_server_url(value: str) -> str:
    """The server a client talks to (client mode): an http or https URL naming a host, with
    no path beyond `/`, query or fragment; written back without the final slash."""
    url = value.strip()
    if not url:
        raise ValueError(f"the URL is empty: unset it to use the database here, or {_SERVER_FORM}")
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in ("http", "https"):
        raise ValueError(f"not an http or https URL: {_SERVER_FORM}")
    if any(c in url for c in "?#") or any(c.isspace() or ord(c) < 32 for c in url):
        raise ValueError(f"no query, fragment, spaces or control characters: {_SERVER_FORM}")
    authority, _, path = rest.partition("/")
    if path.strip("/"):
        raise ValueError(f"no path: the API's paths are added to it; {_SERVER_FORM}")
    # Read here rather than by urllib.parse (every client-mode hook checks this URL, and
    # that import is a share of its whole process): host, or [IPv6] in brackets, and port.
    if "@" in authority:
        raise ValueError(f"no host, or a user name in it: {_SERVER_FORM}")
    if authority.startswith("["):
        host, bracket, after = authority[1:].partition("]")
        if not bracket or (after and not after.startswith(":")):
            raise ValueError(f"an IPv6 address goes in brackets, [::1]:8787: {_SERVER_FORM}")
        port = after[1:]
    else:
        if "[" in authority or "]" in authority:
            raise ValueError(f"an IPv6 address goes in brackets, [::1]:8787: {_SERVER_FORM}")
        host, _, port = authority.partition(":")
    if port and not (port.isascii() and port.isdigit() and int(port) <= 65535):
        raise ValueError("the port is not a number from 0 to 65535")
    if not host:
        raise ValueError(f"no host, or a user name in it: {_SERVER_FORM}")
    return f"{scheme.lower()}://{authority}"


def local_server_url(host: str, port: int) -> str:
    """Where this machine reaches its own server."""
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def is_name(value: object) -> bool:
    """A project or side name: 1 to 64 ASCII letters, digits, '.', '_', '-'."""
    return isinstance(value, str) and 0 < len(value) <= 64 and set(value) <= _NAME_CHARS


def rules_problem(
    projects: dict[str, str],
    sides: dict[str, list[str]],
    remotes: dict[str, dict[str, str]],
) -> str | None:
    """What is wrong with the classification rules of the config, in one line, or None."""
    for prefix, project in projects.items():
        if not is_name(project):
            return f"projects: {project!r:.70} (for {prefix!r:.60}) is not a project name"
    for side in sides:
        if not is_name(side):
            return f"sides: {side!r:.70} is not a side name (letters, digits, '.', '_', '-')"
    for pattern, rule in remotes.items():
        if not pattern.strip():
            return "remotes: an empty URL pattern"
        if not rule or set(rule) - RULE_KEYS:
            return f"remotes: {pattern!r:.60} must give side and/or project, nothing else"
        for key, value in rule.items():
            if not is_name(value):
                return f"remotes: {pattern!r:.60} has {key} {value!r:.40}, not a {key} name"
            if key == "side" and sides and value not in sides:
                return f"remotes: {pattern!r:.60} names side {value!r}, which sides does not list"
    return None


class HookConfig:
    """The settings a hook uses (a plain class: see the module's docstring)."""

    __slots__ = (
        "data_dir",
        "database_url",
        "host",
        "lease_grace",
        "no_capture",
        "port",
        "private_globs",
        "projects",
        "remotes",
        "server_url",
        "session_grace",
        "sides",
        "tick_seconds",
        "token",
        "tz",
    )

    def __init__(
        self,
        *,
        database_url: str | None = None,
        data_dir: str | None = None,
        host: str = "127.0.0.1",
        port: int = 8787,
        server_url: str | None = None,
        token: str | None = None,
        tz: str | None = None,
        lease_grace: timedelta = timedelta(hours=6),
        session_grace: timedelta = timedelta(hours=12),
        tick_seconds: float = 60.0,
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
        # A session silent this long is shown lost (db/predicates.SESSION_PRESUMED_LOST), and
        # an event older than that does not reopen it.
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
        return {
            "projects": self.projects,
            "sides": self.sides,
            "remotes": self.remotes,
            "no_capture": self.no_capture,
            "private_globs": self.private_globs,
        }

    @classmethod
    def from_rules(cls, rules: Any, **kwargs: Any) -> HookConfig:
        """A config holding rules a hook sent (checked: ValueError with the reason)."""
        if not isinstance(rules, dict) or set(rules) - set(RULE_FIELDS):
            raise ValueError("rules must be an object of projects, sides, remotes, ...")
        try:
            projects = _str_map(rules.get("projects", {}))
            sides = {_text(k): _str_list(v) for k, v in _mapping(rules.get("sides", {}))}
            remotes = {_text(k): _str_map(v) for k, v in _mapping(rules.get("remotes", {}))}
            no_capture = _str_list(rules.get("no_capture", []))
            private_globs = _str_list(rules.get("private_globs", []))
        except _Unsure:
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


RULE_FIELDS = ("projects", "sides", "remotes", "no_capture", "private_globs")


def _mapping(value: Any) -> list[tuple[Any, Any]]:
    if not isinstance(value, dict):
        raise _Unsure
    return list(value.items())


_FIELDS = (
    "database_url",
    "server_url",
    "data_dir",
    "host",
    "port",
    "token",
    "tz",
    "lease_grace",
    "session_grace",
    "tick_seconds",
    "projects",
    "sides",
    "remotes",
    "no_capture",
    "private_globs",
)
# Other settings (backup_keep, …) change nothing for a hook: this reader
# ignores them, and the full settings check them wherever they are used.


class _Unsure(Exception):
    """A value this reader does not vouch for: the full settings decide."""


def read_quickly(database_url: str | None = None) -> HookConfig | None:
    """The settings from the environment and the TOML file, or None when unsure."""
    try:
        raw = _raw_values()
        if database_url:
            raw["database_url"] = database_url
        return _build(raw)
    except _Unsure:
        return None


def _raw_values() -> dict[str, Any]:
    values: dict[str, Any] = {}
    try:
        path = config_file()
    except ValueError:
        raise _Unsure from None
    if path is not None and os.path.lexists(path) and not os.path.isfile(path):
        raise _Unsure  # the full settings say what is wrong with it
    if path is not None and os.path.isfile(path):
        import tomllib

        try:
            with open(path, "rb") as handle:
                document = tomllib.load(handle)
        except (OSError, ValueError):
            raise _Unsure from None
        for key, value in document.items():
            if key in _FIELDS:
                values[key] = value
            elif key.lower() in _FIELDS:  # another spelling: how pydantic reads it is its call
                raise _Unsure
    env: dict[str, str] = {}
    for name, value in os.environ.items():
        lowered = name.lower()
        if lowered.startswith("ondeck_"):
            key = lowered.removeprefix("ondeck_")
            if key in _FIELDS:
                if key in env:  # the same setting twice, in two cases: let pydantic choose
                    raise _Unsure
                env[key] = value
    for key, value in env.items():
        if key in ("projects", "sides", "remotes", "no_capture", "private_globs"):
            try:
                values[key] = json.loads(value)
            except ValueError:
                raise _Unsure from None
        else:
            values[key] = value
    return values


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise _Unsure
    return value


def _build(raw: dict[str, Any]) -> HookConfig:
    kwargs: dict[str, Any] = {}
    if "database_url" in raw:
        kwargs["database_url"] = _checked(check_database_url, _text(raw["database_url"]))
    kwargs["data_dir"] = _checked(absolute_text, _text(raw.get("data_dir", default_data_dir())))
    if "server_url" in raw:
        kwargs["server_url"] = _checked(check_server_url, _text(raw["server_url"]))
    if "host" in raw:
        kwargs["host"] = _text(raw["host"])
    if "port" in raw:
        kwargs["port"] = _whole(raw["port"], 0, 65535)
    if "token" in raw:
        given = _text(raw["token"])
        kwargs["token"] = _checked(check_token, given) if given else None
    if "tz" in raw:
        kwargs["tz"] = _text(raw["tz"])  # checked where used (HookConfig.zone)
    if "lease_grace" in raw:
        kwargs["lease_grace"] = _duration(raw["lease_grace"])
    if "session_grace" in raw:
        grace = _duration(raw["session_grace"])
        # Its bounds are the full settings' (host/settings.py), which word the refusal.
        if not timedelta(minutes=10) <= grace <= timedelta(days=30):
            raise _Unsure
        kwargs["session_grace"] = grace
    if "tick_seconds" in raw:
        kwargs["tick_seconds"] = _seconds(raw["tick_seconds"])
    if "projects" in raw:
        kwargs["projects"] = _str_map(raw["projects"])
    if "sides" in raw:
        sides = raw["sides"]
        if not isinstance(sides, dict):
            raise _Unsure
        kwargs["sides"] = {_text(k): _str_list(v) for k, v in sides.items()}
    if "remotes" in raw:
        remotes = raw["remotes"]
        if not isinstance(remotes, dict):
            raise _Unsure
        kwargs["remotes"] = {_text(k): _str_map(v) for k, v in remotes.items()}
    for key in ("no_capture", "private_globs"):
        if key in raw:
            kwargs[key] = _str_list(raw[key])
    config = HookConfig(**kwargs)
    if rules_problem(config.projects, config.sides, config.remotes) is not None:
        raise _Unsure
    for prefix in [
        *config.projects,
        *(p for ps in config.sides.values() for p in ps),
        *config.no_capture,
    ]:
        _checked(absolute_text, prefix)
    return config


def _checked(check: Callable[[str], str], value: str) -> str:
    try:
        return check(value)
    except ValueError:
        raise _Unsure from None


def _whole(value: Any, low: int, high: int) -> int:
    if isinstance(value, str):
        if not (value.isascii() and value.isdigit() and len(value) <= 9):
            raise _Unsure
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _Unsure
    return value


def _seconds(value: Any) -> float:
    import math

    if isinstance(value, str):
        whole, _, fraction = value.partition(".")
        plain = whole.isascii() and whole.isdigit() and (not fraction or fraction.isdigit())
        if not plain or len(value) > 20:  # no signs, exponents, spaces or words: plain numbers
            raise _Unsure
        value = float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Unsure
    if not math.isfinite(value) or not 0 < value <= 86400:
        raise _Unsure
    return float(value)


def _duration(value: Any) -> timedelta:
    from ondeck.core.durations import parse_duration
    from ondeck.core.errors import InvalidInput

    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise _Unsure
    try:
        return parse_duration(value, name="duration")
    except InvalidInput:
        raise _Unsure from None


def _str_map(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise _Unsure
    return {_text(k): _text(v) for k, v in value.items()}


def _str_list(value: Any) -> list[str]:
    if not isinstance(value, list):
        raise _Unsure
    return [_text(v) for v in value]
