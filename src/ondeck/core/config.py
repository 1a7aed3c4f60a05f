"""Settings from the environment (`ONDECK_*`) and an optional TOML file.

The file is `~/.config/ondeck/config.toml` (or `$ONDECK_CONFIG`); environment variables win
over it. Every bad value becomes one `ConfigError` line naming the setting and the value.
"""

from __future__ import annotations

import tomllib
from datetime import timedelta
from functools import cached_property
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

from ondeck.core.durations import parse_duration
from ondeck.core.errors import ConfigError, InvalidInput
from ondeck.core.hook_config import (
    config_file,
    database_url,
    default_data_dir,
    local_server_url,
    local_zone_name,
    rules_problem,
    store_fingerprint,
)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ONDECK_", frozen=True, extra="ignore")

    database_url: str | None = None
    data_dir: Path = Field(default_factory=lambda: Path(default_data_dir()))
    tz: str = Field(default_factory=local_zone_name)
    lease_grace: timedelta = timedelta(hours=6)
    tick_seconds: float = Field(default=60.0, gt=0, le=86400)
    backup_dir: Path | None = None
    backup_keep: int = Field(default=14, ge=1, le=10000)
    token: SecretStr | None = None
    host: str = "127.0.0.1"
    port: int = Field(default=8787, ge=0, le=65535)
    # Working directory (prefix) → project, for the session hook.
    projects: dict[str, str] = Field(default_factory=dict)
    # Session records (services/classify.py): side → working directory prefixes; git remote
    # URL pattern → side and/or project; prefixes whose sessions keep times only; globs of
    # files never listed (besides .env*).
    sides: dict[str, list[str]] = Field(default_factory=dict)
    remotes: dict[str, dict[str, str]] = Field(default_factory=dict)
    no_capture: list[str] = Field(default_factory=list)
    private_globs: list[str] = Field(default_factory=list)
    # An open session silent this long (no hook event) is marked lost.
    session_grace: timedelta = timedelta(hours=12)

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
        path = Path(config_file())
        if path.is_file():
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
        return tuple(sources)

    @field_validator("lease_grace", "session_grace", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> timedelta:
        try:
            return parse_duration(value, name="duration")
        except InvalidInput as exc:
            raise ValueError(str(exc)) from None

    @field_validator("tz")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
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

    @field_validator("session_grace")
    @classmethod
    def _session_grace(cls, value: timedelta) -> timedelta:
        # Shorter, and every session between two turns would flap between open and lost.
        if value < timedelta(minutes=10):
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
        return (self.backup_dir or self.data_dir / "backups").expanduser()

    @property
    def token_value(self) -> str | None:
        return self.token.get_secret_value() if self.token else None

    @property
    def store_id(self) -> str:
        """A short fingerprint of the database URL: lets a client check that a server it
        reaches serves the same database it is configured for (the session hook does)."""
        return store_fingerprint(self.url)

    @property
    def local_url(self) -> str:
        """Where this machine reaches its own server."""
        return local_server_url(self.host, self.port)

    @property
    def spool_dir(self) -> Path:
        """Where hooks keep the events they could not store (services/spool.py)."""
        return self.data_dir.expanduser() / "spool"


def load_settings(**overrides: Any) -> Settings:
    """Read the settings, or raise one `ConfigError` line naming the setting and its value."""
    clean = {k: v for k, v in overrides.items() if v is not None}
    try:
        return Settings(**clean)
    except SettingsError as exc:
        # A dict or list setting in the environment that is not JSON.
        import re

        named = re.search(r'field "(\w+)"', str(exc))
        name = f"ONDECK_{named.group(1).upper()}" if named else "a setting"
        raise ConfigError(
            f"{name} is not JSON: dict and list settings given in the environment are JSON, "
            """such as ONDECK_SIDES='{"work": ["~/work"]}'"""
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{config_file()}: not valid TOML ({exc})") from None
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        value = err.get("input")
        reason = err["msg"].removeprefix("Value error, ")
        if not field:  # a rule across settings (the classification rules): its own words
            raise ConfigError(reason) from None
        if isinstance(value, dict):
            raise ConfigError(f"ONDECK_{field.upper()}: {reason}") from None
        raise ConfigError(f"ONDECK_{field.upper()}={value!s:.60}: {reason}") from None
