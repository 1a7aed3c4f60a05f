"""Settings from the environment (`ONDECK_*`) and an optional TOML file.

The file is `~/.config/ondeck/config.toml` (or `$ONDECK_CONFIG`); environment variables win
over it. Every bad value becomes one `ConfigError` line naming the setting and the value.
"""

from __future__ import annotations

import os
from datetime import timedelta
from functools import cached_property
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from ondeck.core.durations import parse_duration
from ondeck.core.errors import ConfigError, InvalidInput


def _config_file() -> Path:
    explicit = os.environ.get("ONDECK_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or "~/.config"
    return Path(base).expanduser() / "ondeck" / "config.toml"


def _default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or "~/.local/share"
    return Path(base).expanduser() / "ondeck"


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
    model_config = SettingsConfigDict(env_prefix="ONDECK_", frozen=True, extra="ignore")

    database_url: str | None = None
    data_dir: Path = Field(default_factory=_default_data_dir)
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
        if path.is_file():
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
        return tuple(sources)

    @field_validator("lease_grace", mode="before")
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

    @cached_property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.tz)

    @property
    def url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.data_dir.expanduser() / 'ondeck.db'}"

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
        import hashlib

        return hashlib.sha256(self.url.encode()).hexdigest()[:16]

    @property
    def local_url(self) -> str:
        """Where this machine reaches its own server."""
        host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(self.host, self.host)
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{self.port}"


def load_settings(**overrides: Any) -> Settings:
    """Read the settings, or raise one `ConfigError` line naming the setting and its value."""
    clean = {k: v for k, v in overrides.items() if v is not None}
    try:
        return Settings(**clean)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "setting"
        value = err.get("input")
        reason = err["msg"].removeprefix("Value error, ")
        if isinstance(value, dict):
            raise ConfigError(f"ONDECK_{field.upper()}: {reason}") from None
        raise ConfigError(f"ONDECK_{field.upper()}={value!s:.60}: {reason}") from None
