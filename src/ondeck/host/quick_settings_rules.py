"""The rules for names, paths and URLs that both settings readers apply: the hooks' quick
reader (host/quick_settings_read.py) and the full settings (host/settings.py), so the two agree.

Paths are made as `pathlib` makes them, without importing it (a hook's start-up cost: see
host/quick_settings.py); the places the settings default to (XDG, the machine's zone) are
found here too.
"""

from __future__ import annotations

import os

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
# bits; `openssl rand -hex 32` (64 characters) is what docs/configuration.md recommends.
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
