"""Settings: environment, the TOML file, and one clear line for every bad value."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from ondeck.core.config import load_settings
from ondeck.core.errors import ConfigError


def test_defaults_are_sqlite_in_the_data_dir_on_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONDECK_DATA_DIR", "/srv/od")
    settings = load_settings()
    assert settings.url == "sqlite:////srv/od/ondeck.db"
    assert settings.host == "127.0.0.1"
    assert settings.port == 8787
    assert settings.lease_grace == timedelta(hours=6)
    assert settings.tick_seconds == 60
    assert settings.backups_path == Path("/srv/od/backups")
    assert settings.token_value is None


def test_environment_values_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONDECK_DATABASE_URL", "postgresql+psycopg://u@h/db")
    monkeypatch.setenv("ONDECK_TZ", "Asia/Seoul")
    monkeypatch.setenv("ONDECK_LEASE_GRACE", "90m")
    monkeypatch.setenv("ONDECK_TICK_SECONDS", "5")
    monkeypatch.setenv("ONDECK_TOKEN", "s3cret")
    monkeypatch.setenv("ONDECK_BACKUP_DIR", "/b")
    settings = load_settings()
    assert settings.url == "postgresql+psycopg://u@h/db"
    assert str(settings.zone) == "Asia/Seoul"
    assert settings.lease_grace == timedelta(minutes=90)
    assert settings.tick_seconds == 5
    assert settings.token_value == "s3cret"
    assert settings.backups_path == Path("/b")


def test_the_toml_file_is_read_and_the_environment_wins(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('tz = "Europe/Berlin"\nport = 9000\n[projects]\n"/home/me/site" = "site"\n')
    monkeypatch.setenv("ONDECK_CONFIG", str(config))
    monkeypatch.setenv("ONDECK_PORT", "9100")
    settings = load_settings()
    assert settings.tz == "Europe/Berlin"
    assert settings.port == 9100
    assert settings.projects == {"/home/me/site": "site"}


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("ONDECK_TZ", "Mars/Olympus", "ONDECK_TZ=Mars/Olympus: unknown time zone"),
        ("ONDECK_LEASE_GRACE", "6 weeks", "ONDECK_LEASE_GRACE=6 weeks"),
        ("ONDECK_LEASE_GRACE", "h6", "is not a duration"),
        ("ONDECK_TICK_SECONDS", "0", "ONDECK_TICK_SECONDS=0"),
        ("ONDECK_PORT", "http", "ONDECK_PORT=http"),
        ("ONDECK_PORT", "70000", "ONDECK_PORT=70000"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, expected: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert expected in str(info.value)
    assert "\n" not in str(info.value)
    assert info.value.exit_code == 2


def test_an_empty_token_means_no_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONDECK_TOKEN", "")
    assert load_settings().token_value is None
