"""Settings from the environment (`ONDECK_*`) and an optional TOML file.

The file is `~/.config/ondeck/config.toml` (or `$ONDECK_CONFIG`); environment variables win
over it. Every bad value becomes one `ConfigError` line naming the setting and the value.

Refused at load, so nothing runs on a setting that would lie later:
- a database that keeps nothing (`sqlite://`, `sqlite:///`, `:memory:`, `file:` URIs, SQLite
  URL options such as `?mode=memory`), and any relative path (`ONDECK_DATA_DIR`,
  `ONDECK_BACKUP_DIR`, `ONDECK_SSL_CERTFILE`, `ONDECK_SSL_KEYFILE`, a relative SQLite path,
  `ONDECK_CONFIG`, the `projects` prefixes):
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
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BeforeValidator,
    Field,
    GetCoreSchemaHandler,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import core_schema
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

from ondeck.core import urls
from ondeck.core.durations import parse_duration
from ondeck.core.errors import ConfigError, InvalidInput
from ondeck.core.validation import PROJECT_PATTERN
from ondeck.host.quick_settings import (
    HOST_DEFAULT,
    LEASE_GRACE_DEFAULT,
    LEASE_GRACE_MAX,
    PORT_DEFAULT,
    PORT_MAX,
    SESSION_GRACE_DEFAULT,
    SESSION_GRACE_MAX,
    SESSION_GRACE_MIN,
    TICK_SECONDS_DEFAULT,
    TICK_SECONDS_MAX,
)
from ondeck.host.quick_settings_rules import (
    ABSOLUTE_HINT,
    absolute_text,
    check_database_url,
    check_server_url,
    check_token,
    config_file,
    database_url,
    default_data_dir,
    local_server_url,
    local_zone_name,
    rules_problem,
)

_PROJECT = re.compile(PROJECT_PATTERN)


def _config_file() -> Path | None:
    try:
        found = config_file()
    except ValueError as exc:
        raise ConfigError(
            f"ONDECK_CONFIG={os.environ.get('ONDECK_CONFIG', ''):.60}: {exc}"
        ) from None
    return None if found is None else Path(found)


def absolute_path(value: str | Path, *, hint: str = ABSOLUTE_HINT) -> Path:
    """An absolute path, `~` expanded; ValueError saying why for empty or relative ones
    (the rule is hook_config_rules.absolute_text, which the hooks' quick reader uses too)."""
    return Path(absolute_text(str(value), hint=hint))


def _absolute(value: Any) -> Any:
    return value if value is None else absolute_path(value)


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


class Settings(BaseSettings):
    """Every setting. Those a hook uses take their defaults and bounds from host/quick_settings.py
    (the hooks read them without pydantic); the others are only here."""

    # validate_default: the default data directory comes from HOME and XDG_DATA_HOME, which
    # can be relative or missing too.
    model_config = SettingsConfigDict(
        env_prefix="ONDECK_", frozen=True, extra="ignore", validate_default=True
    )

    database_url: str | None = None
    data_dir: Annotated[Path, BeforeValidator(_absolute)] = Field(
        default_factory=lambda: Path(default_data_dir())
    )
    tz: str = Field(default_factory=local_zone_name)
    lease_grace: Annotated[timedelta, DurationSetting(maximum=LEASE_GRACE_MAX)] = (
        LEASE_GRACE_DEFAULT
    )
    tick_seconds: float = Field(default=TICK_SECONDS_DEFAULT, gt=0, le=TICK_SECONDS_MAX)
    backup_dir: Annotated[Path | None, BeforeValidator(_absolute)] = None
    backup_keep: int = Field(default=14, ge=1, le=10000)
    token: SecretStr | None = None
    # Client mode: the server this machine's commands and hooks talk to.
    server_url: str | None = None
    host: str = HOST_DEFAULT
    port: int = Field(default=PORT_DEFAULT, ge=0, le=PORT_MAX)
    # Names (besides loopback and the address a request came in on) that the server answers
    # as Host: `deck.example.net` (any port) or `deck.example.net:8787`; any other Host is
    # refused (a page of another site reaching it by DNS rebinding).
    public_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Reverse proxies whose X-Forwarded-For / X-Forwarded-Proto are believed: addresses or
    # networks. None by default: a local process must not forge the address it comes from.
    trusted_proxies: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # TLS served by ondeck itself (entrypoints/server/serve.py checks the files before binding).
    ssl_certfile: Annotated[Path | None, BeforeValidator(_absolute)] = None
    ssl_keyfile: Annotated[Path | None, BeforeValidator(_absolute)] = None
    # Working directory (prefix) → project, for the session hook.
    projects: dict[str, str] = Field(default_factory=dict)
    # Session records (sessions/classify.py): side → working directory prefixes; git remote
    # URL pattern → side and/or project; prefixes whose sessions keep times only; globs of
    # files never listed (besides .env*).
    sides: dict[str, list[str]] = Field(default_factory=dict)
    remotes: dict[str, dict[str, str]] = Field(default_factory=dict)
    no_capture: list[str] = Field(default_factory=list)
    private_globs: list[str] = Field(default_factory=list)
    # An open session silent this long (no hook event) is marked lost.
    session_grace: Annotated[timedelta, DurationSetting(maximum=SESSION_GRACE_MAX)] = (
        SESSION_GRACE_DEFAULT
    )

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

    @field_validator("server_url")
    @classmethod
    def _server_url(cls, value: str | None) -> str | None:
        return None if value is None else check_server_url(value)

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

    @field_validator("sides", "no_capture")
    @classmethod
    def _prefixes(cls, value: Any) -> Any:
        prefixes = value if isinstance(value, list) else [p for ps in value.values() for p in ps]
        for prefix in prefixes:
            try:
                absolute_path(prefix)
            except ValueError as exc:
                raise ValueError(f"prefix {prefix!r:.60}: {exc}") from None
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
        if value is None or not value.get_secret_value():
            return None  # unset (an empty line in an environment file): no token
        check_token(value.get_secret_value())  # a blank or short one is refused, saying why
        return value

    @field_validator("public_hosts", "trusted_proxies", mode="before")
    @classmethod
    def _comma_list(cls, value: Any) -> Any:
        # `a,b` in the environment, a list in the TOML file.
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("public_hosts")
    @classmethod
    def _public_hosts(cls, value: list[str]) -> list[str]:
        from ondeck.core.access import split_host

        names = []
        for given in value:
            try:  # a name in any script is asked for in its ASCII (punycode) form
                name = given.encode("idna").decode("ascii")
            except UnicodeError:
                name = given
            names.append(name.lower())
            if split_host(name) is None:
                raise ValueError(
                    f"public host {given!r:.80} is not a host name: write deck.example.net "
                    "or deck.example.net:8787"
                )
        return names

    @field_validator("trusted_proxies")
    @classmethod
    def _trusted_proxies(cls, value: list[str]) -> list[str]:
        import ipaddress

        for entry in value:
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(
                    f"trusted proxy {entry!r:.80} is not an address or network: write "
                    "127.0.0.1, ::1 or 10.0.0.0/8"
                ) from None
        return value

    @field_validator("session_grace")
    @classmethod
    def _session_grace(cls, value: timedelta) -> timedelta:
        # Shorter, and every session between two turns would flap between open and lost.
        if value < SESSION_GRACE_MIN:
            raise ValueError("a session grace shorter than 10m would mark live sessions lost")
        return value

    @model_validator(mode="after")
    def _rules(self) -> Settings:
        problem = rules_problem(self.projects, self.sides, self.remotes)
        if problem is not None:
            raise ValueError(problem)
        return self

    @cached_property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.tz)

    @property
    def url(self) -> str:
        return database_url(self.database_url, self.data_dir)

    @property
    def backups_path(self) -> Path:
        return self.backup_dir or self.data_dir / "backups"

    @property
    def token_value(self) -> str | None:
        return self.token.get_secret_value() if self.token else None

    @property
    def local_url(self) -> str:
        """Where this machine reaches its own server."""
        return local_server_url(self.host, self.port)

    @property
    def spool_dir(self) -> Path:
        """Where hooks keep the events they could not store (sessions/capture/spool.py)."""
        return self.data_dir.expanduser() / "spool"


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


def hide_password(url: str) -> str:
    """The URL with its password and secret options (if any) written `***`."""
    return urls.shown(url)


def load_settings(**overrides: Any) -> Settings:
    """Read the settings, or raise one `ConfigError` line naming the setting and its value."""
    clean = {k: v for k, v in overrides.items() if v is not None}
    try:
        return Settings(**clean)
    except SettingsError as exc:
        # pydantic-settings' own parse step: a table or list setting that is not JSON.
        found = _SOURCE_FIELD.search(str(exc))
        name = f"ONDECK_{found.group(1).upper()}" if found else "a setting"
        raise ConfigError(
            f"{name}: not valid JSON: table and list settings given in the environment are "
            """JSON, such as ONDECK_SIDES='{"work": ["~/work"]}'"""
        ) from None
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        value = err.get("input")
        reason = err["msg"].removeprefix("Value error, ")
        if isinstance(value, str):  # a refusal names the URL, never its password
            value = hide_password(value)
        if field == "token":
            raise ConfigError(f"ONDECK_TOKEN: {reason}") from None
        if not field:  # a rule across settings (the classification rules): its own words
            raise ConfigError(reason) from None
        if isinstance(value, dict):
            raise ConfigError(f"ONDECK_{field.upper()}: {reason}") from None
        raise ConfigError(f"ONDECK_{field.upper()}={value!s:.60}: {reason}") from None
