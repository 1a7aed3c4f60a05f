"""Settings from the environment (`ONDECK_*`) and an optional TOML file.

The file is `~/.config/ondeck/config.toml` (or `$ONDECK_CONFIG`); environment variables win
over it. Every bad value becomes one `ConfigError` line naming the setting and the value.

Refused at load, so nothing runs on a setting that would lie later:
- a database that keeps nothing (`sqlite://`, `sqlite:///`, `:memory:`, `file:` URIs, SQLite
  URL options such as `?mode=memory`), and any relative path (`ONDECK_DATA_DIR`,
  `ONDECK_BACKUP_DIR`, a relative SQLite path, `ONDECK_CONFIG`, the `projects` prefixes):
  resolved against the working directory, each project folder the session hook runs in would
  get its own empty database. `~` is expanded (it is explicit); nothing else is implied;
- a duration past its setting's maximum (`DurationSetting`): every instant computed from it
  (lease end + grace, now - grace) then stays far inside what a datetime holds.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import timedelta
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import unquote, urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BeforeValidator,
    Field,
    GetCoreSchemaHandler,
    SecretStr,
    ValidationError,
    field_validator,
)
from pydantic_core import core_schema
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

from ondeck.core.durations import parse_duration
from ondeck.core.errors import ConfigError, InvalidInput
from ondeck.core.validation import PROJECT_PATTERN

_PROJECT = re.compile(PROJECT_PATTERN)


def _config_file() -> Path | None:
    explicit = os.environ.get("ONDECK_CONFIG")
    if explicit is not None:
        try:
            return absolute_path(explicit)
        except ValueError as exc:
            raise ConfigError(f"ONDECK_CONFIG={explicit:.60}: {exc}") from None
    try:
        return absolute_path(_xdg("XDG_CONFIG_HOME", "~/.config") / "ondeck" / "config.toml")
    except ValueError:
        return None  # no home directory to look in: no default file


def _default_data_dir() -> Path:
    # Checked like a given value (validate_default): no HOME is refused there, with the reason.
    return _xdg("XDG_DATA_HOME", "~/.local/share") / "ondeck"


def _xdg(variable: str, fallback: str) -> Path:
    # The XDG spec: "a relative path in any of these variables ... should be considered
    # invalid and ignored".
    base = os.environ.get(variable, "")
    return Path(base if base.startswith("/") else fallback)


_ABSOLUTE = "write an absolute path (~ is expanded)"


def absolute_path(value: str | Path, *, hint: str = _ABSOLUTE) -> Path:
    """An absolute path, `~` expanded; ValueError saying why for empty or relative ones."""
    text = str(value)
    if not text.strip():
        raise ValueError(f"the path is empty: {hint}")
    if "\x00" in text:
        raise ValueError("the path contains a NUL character")
    try:
        path = Path(text).expanduser()
    except RuntimeError:  # `~` with no HOME, or `~name` for no such user
        raise ValueError(
            f"the path {text!r:.60} starts with ~ but there is no such home directory "
            "(HOME unset, or no such user)"
        ) from None
    if not path.is_absolute():
        raise ValueError(
            f"the path {text!r:.60} is relative, so it would depend on the directory each "
            f"command runs in: {hint}"
        )
    return path


def _absolute(value: Any) -> Any:
    return value if value is None else absolute_path(value)


# --- the database URL ---------------------------------------------------------------------

_NO_MEMORY = (
    "write an absolute file path such as sqlite:////srv/ondeck/ondeck.db (four slashes) "
    "or sqlite:///~/ondeck.db"
)


_URL_FORMS = "sqlite:////absolute/path.db or postgresql+psycopg://user@host/db"
# The stores and the drivers ondeck ships with (`postgresql://` means psycopg 3).
_DRIVERS = {"sqlite": ("", "pysqlite"), "postgresql": ("", "psycopg")}
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9]*(\+[A-Za-z0-9_]+)?")


def check_database_url(value: str) -> str:
    """The URL to use: a SQLite URL must name an absolute file (`~` expanded, the URL
    rewritten); a PostgreSQL URL passes unchanged once its form is one the engine takes."""
    url = value.strip()
    if not url:
        raise ValueError(
            f"the URL is empty: unset it for the SQLite file in ONDECK_DATA_DIR, or write "
            f"{_URL_FORMS}"
        )
    scheme, sep, rest = url.partition("://")
    if not sep or not _SCHEME.fullmatch(scheme):
        raise ValueError(f"not a database URL: write {_URL_FORMS}")
    backend, _, driver = scheme.lower().partition("+")
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
    # SQLAlchemy reads the path %-decoded.
    path = unquote(raw)
    if path == ":memory:" or path.startswith("file:"):
        raise ValueError(f"an in-memory or file: URI database is refused: {_NO_MEMORY}")
    absolute = absolute_path(path, hint=_NO_MEMORY)
    if absolute.is_dir():
        raise ValueError(f"{str(absolute)!r:.60} is a directory: {_NO_MEMORY}")
    return sqlite_url(absolute, scheme=scheme)


def _port_readable(url: str) -> bool:
    # SQLAlchemy would fail on it with a bare ValueError, far from the setting.
    try:
        port = urlsplit(url).port
    except ValueError:
        return False
    return port is None or port >= 0


def sqlite_url(path: Path, *, scheme: str = "sqlite") -> str:
    """The URL of a SQLite file, escaped so SQLAlchemy reads back exactly `path`."""
    return f"{scheme}:///{_quote(str(path))}"


def _quote(path: str) -> str:
    # Only what SQLAlchemy's URL parser would take for something else: %-escapes, the query
    # and the fragment. Anything else (spaces, Korean) it reads back as written.
    return path.replace("%", "%25").replace("?", "%3F").replace("#", "%23")


# --- durations ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DurationSetting:
    """A duration setting's bound: written `90s`, `15m`, `6h`, `2d` (or seconds), never
    negative, at most `maximum`. Every timedelta setting carries one (a test checks)."""

    maximum: timedelta

    def parse(self, value: Any) -> timedelta:
        try:
            return parse_duration(value, name="duration", maximum=self.maximum)
        except InvalidInput as exc:
            raise ValueError(str(exc)) from None

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_before_validator_function(self.parse, handler(source))


# Leases last at most 7 days; a month of grace on top is already far more than a silent
# holder deserves, and keeps now - grace and lease end + grace ordinary dates.
LEASE_GRACE_MAX = timedelta(days=30)


def local_zone_name() -> str:
    """The machine's IANA zone name: `$TZ`, `/etc/timezone`, the `/etc/localtime` link, else UTC."""
    tz = os.environ.get("TZ", "").lstrip(":")
    if (tz and "/" in tz) or tz == "UTC":
        return tz
    try:
        name = Path("/etc/timezone").read_text().strip()
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


class Settings(BaseSettings):
    # validate_default: the default data directory comes from HOME and XDG_DATA_HOME, which
    # can be relative or missing too.
    model_config = SettingsConfigDict(
        env_prefix="ONDECK_", frozen=True, extra="ignore", validate_default=True
    )

    database_url: str | None = None
    data_dir: Annotated[Path, BeforeValidator(_absolute)] = Field(default_factory=_default_data_dir)
    tz: str = Field(default_factory=local_zone_name)
    lease_grace: Annotated[timedelta, DurationSetting(maximum=LEASE_GRACE_MAX)] = timedelta(hours=6)
    tick_seconds: float = Field(default=60.0, gt=0, le=86400)
    backup_dir: Annotated[Path | None, BeforeValidator(_absolute)] = None
    backup_keep: int = Field(default=14, ge=1, le=10000)
    token: SecretStr | None = None
    host: str = "127.0.0.1"
    port: int = Field(default=8787, ge=0, le=65535)
    # Working directory (prefix) → project, for the session hook.
    projects: dict[str, str] = Field(default_factory=dict)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        path = _config_file()
        # A missing file is no file (tests and benchmarks point ONDECK_CONFIG at one on
        # purpose); anything else that is there must be a readable TOML file.
        if path is not None and (path.exists() or path.is_symlink()):
            sources.append(_toml_source(settings_cls, path))
        return tuple(sources)

    @field_validator("database_url")
    @classmethod
    def _database_url(cls, value: str | None) -> str | None:
        return None if value is None else check_database_url(value)

    @field_validator("projects")
    @classmethod
    def _projects(cls, value: dict[str, str]) -> dict[str, str]:
        for prefix, project in value.items():
            try:
                absolute_path(prefix)
            except ValueError as exc:
                raise ValueError(f"project prefix {prefix!r:.60}: {exc}") from None
            if not isinstance(project, str) or not _PROJECT.fullmatch(project):
                raise ValueError(
                    f"project {str(project)!r:.60} for {prefix!r:.60} is not valid: "
                    "use 1 to 64 letters, digits, '.', '_', '-'"
                )
        return value

    @field_validator("tz")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        # OSError: a name that is a folder of zones (Asia) or too long for a file name.
        except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
            raise ValueError(
                f"unknown time zone {value!r}: use an IANA name such as Europe/Berlin"
            ) from exc
        return value

    @field_validator("token")
    @classmethod
    def _token(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value():
            return None
        return value

    @cached_property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.tz)

    @property
    def url(self) -> str:
        if self.database_url:
            return self.database_url
        return sqlite_url(self.data_dir / "ondeck.db")

    @property
    def backups_path(self) -> Path:
        return self.backup_dir or self.data_dir / "backups"

    @property
    def token_value(self) -> str | None:
        return self.token.get_secret_value() if self.token else None

    @property
    def store_id(self) -> str:
        """A short fingerprint of the database URL: lets a client check that a server it
        reaches serves the same database it is configured for (the session hook does)."""
        import hashlib

        return hashlib.sha256(self.url.encode()).hexdigest()[:16]

    @property
    def local_url(self) -> str:
        """Where this machine reaches its own server."""
        host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(self.host, self.host)
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{self.port}"


def _toml_source(settings_cls: type[BaseSettings], path: Path) -> PydanticBaseSettingsSource:
    import tomllib

    if not path.is_file():
        raise ConfigError(f"config file {path}: not a file")
    try:
        return TomlConfigSettingsSource(settings_cls, toml_file=path)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path}: not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"config file {path}: not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"config file {path}: cannot read: {exc.strerror}") from None


_SOURCE_FIELD = re.compile(r'field "([a-z_]+)"')
# user:password@ in a URL: a refusal names the URL, never the password.
_PASSWORD = re.compile(r"(://[^/@:]*:)[^/@]*@")


def load_settings(**overrides: Any) -> Settings:
    """Read the settings, or raise one `ConfigError` line naming the setting and its value."""
    clean = {k: v for k, v in overrides.items() if v is not None}
    try:
        return Settings(**clean)
    except SettingsError as exc:
        # pydantic-settings' own parse step: a list or table setting that is not JSON.
        found = _SOURCE_FIELD.search(str(exc))
        name = f"ONDECK_{found.group(1).upper()}" if found else "a setting"
        example = '{"/home/me/site": "site"}'
        raise ConfigError(f"{name}: not valid JSON (a table, such as {example})") from None
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "setting"
        value = err.get("input")
        reason = err["msg"].removeprefix("Value error, ")
        if field == "database_url" and isinstance(value, str):
            value = _PASSWORD.sub(r"\1***@", value)
        if isinstance(value, dict):
            raise ConfigError(f"ONDECK_{field.upper()}: {reason}") from None
        raise ConfigError(f"ONDECK_{field.upper()}={value!s:.60}: {reason}") from None
