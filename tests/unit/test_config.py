"""Settings: environment, the TOML file, and one clear line for every bad value."""

from __future__ import annotations

import re
import typing
from datetime import UTC, timedelta
from pathlib import Path

import pytest

from ondeck.core.durations import format_duration
from ondeck.core.errors import ConfigError
from ondeck.host.settings import DurationSetting, Settings, load_settings


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
    monkeypatch.setenv("ONDECK_TOKEN", "s3cret-0123456789abcdef0123456789abcdef")
    monkeypatch.setenv("ONDECK_BACKUP_DIR", "/b")
    settings = load_settings()
    assert settings.url == "postgresql+psycopg://u@h/db"
    assert str(settings.zone) == "Asia/Seoul"
    assert settings.lease_grace == timedelta(minutes=90)
    assert settings.tick_seconds == 5
    assert settings.token_value == "s3cret-0123456789abcdef0123456789abcdef"
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
        ("ONDECK_TZ", "Asia", "ONDECK_TZ=Asia: unknown time zone"),
        ("ONDECK_TZ", "x" * 300, "unknown time zone"),
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


# --- settings that would lie later are refused at load ---------------------------------

SETTINGS_FIELDS = Settings.model_fields


def _annotation_has(name: str, kind: type) -> bool:
    annotation = SETTINGS_FIELDS[name].annotation
    return annotation is kind or kind in typing.get_args(annotation)


PATH_SETTINGS = [name for name in SETTINGS_FIELDS if _annotation_has(name, Path)]
DURATION_SETTINGS = [name for name in SETTINGS_FIELDS if _annotation_has(name, timedelta)]
SECONDS_SETTINGS = [name for name in SETTINGS_FIELDS if name.endswith("_seconds")]


def _refused(monkeypatch: pytest.MonkeyPatch, env: str, value: str) -> str:
    monkeypatch.setenv(env, value)
    with pytest.raises(ConfigError) as info:
        load_settings()
    message = str(info.value)
    assert "\n" not in message and info.value.exit_code == 2
    return message


def test_the_walks_find_the_settings_we_know() -> None:
    assert {"data_dir", "backup_dir"} <= set(PATH_SETTINGS)
    assert "lease_grace" in DURATION_SETTINGS
    assert "tick_seconds" in SECONDS_SETTINGS


@pytest.mark.parametrize("name", PATH_SETTINGS)
@pytest.mark.parametrize("value", ["", "  ", "data", "./data", "../data", "~nobody-here/data"])
def test_every_path_setting_refuses_empty_and_relative_paths(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str, value: str
) -> None:
    """Relative to what? The session hook runs in each project's folder: a relative path
    would give each project its own empty database."""
    monkeypatch.chdir(tmp_path)
    message = _refused(monkeypatch, f"ONDECK_{name.upper()}", value)
    assert message.startswith(f"ONDECK_{name.upper()}=")
    assert any(word in message for word in ("empty", "relative", "home directory"))
    assert list(tmp_path.iterdir()) == [], "nothing is created in the working directory"


@pytest.mark.parametrize("name", PATH_SETTINGS)
def test_every_path_setting_refuses_a_relative_path_in_the_file_too(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'{name} = "data"\n')
    monkeypatch.setenv("ONDECK_CONFIG", str(config))
    with pytest.raises(ConfigError, match=f"ONDECK_{name.upper()}=data: .* relative"):
        load_settings()


@pytest.mark.parametrize("name", PATH_SETTINGS)
def test_every_path_setting_expands_the_home_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "홈"))
    monkeypatch.setenv(f"ONDECK_{name.upper()}", "~/od")
    assert getattr(load_settings(), name) == tmp_path / "홈" / "od"


def test_the_default_data_dir_is_checked_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default comes from HOME: a relative HOME is refused like a relative setting."""
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", "relative-home")
    message = _refused(monkeypatch, "ONDECK_TZ", "UTC")
    assert message.startswith("ONDECK_DATA_DIR=") and "relative" in message


def test_a_relative_xdg_directory_is_ignored_as_the_spec_says(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_DATA_HOME", "relative/data")
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/config")
    assert load_settings().data_dir == tmp_path / ".local" / "share" / "ondeck"


@pytest.mark.parametrize("value", ["", "config.toml", "./c/config.toml"])
def test_the_config_file_setting_refuses_empty_and_relative_paths(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    message = _refused(monkeypatch, "ONDECK_CONFIG", value)
    assert message.startswith("ONDECK_CONFIG=")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"tz = \n", "not valid TOML"),
        (b"\xff\xfe tz", "not UTF-8"),
        (b"lease_grace = 5.5e300\n", "ONDECK_LEASE_GRACE=5.5e+300: duration is too long"),
        (b"lease_grace = inf\n", "ONDECK_LEASE_GRACE=inf"),
        (b"projects = 3\n", "ONDECK_PROJECTS=3"),
    ],
)
def test_a_broken_config_file_is_one_line_naming_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, content: bytes, expected: str
) -> None:
    config = tmp_path / "config.toml"
    config.write_bytes(content)
    message = _refused(monkeypatch, "ONDECK_CONFIG", str(config))
    assert expected in message


def test_a_config_path_that_is_a_directory_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert "not a file" in _refused(monkeypatch, "ONDECK_CONFIG", str(tmp_path))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("not json", "ONDECK_PROJECTS: not valid JSON"),
        ('{"site": "site"}', "relative"),
        ('{"~/site": "a b"}', "is not valid"),
    ],
)
def test_the_projects_table_is_checked(
    monkeypatch: pytest.MonkeyPatch, value: str, expected: str
) -> None:
    assert expected in _refused(monkeypatch, "ONDECK_PROJECTS", value)


# --- the database URL ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("sqlite://", "nothing would be kept"),
        ("sqlite:///", "nothing would be kept"),
        ("sqlite+pysqlite://", "nothing would be kept"),
        ("sqlite:///:memory:", "in-memory"),
        ("SQLite:///:memory:", "in-memory"),
        ("sqlite:///file:x.db?mode=memory&uri=true", "not supported"),
        ("sqlite:///file:/tmp/x.db", "file: URI"),
        ("sqlite:////tmp/x.db?mode=memory&uri=true", "not supported"),
        ("sqlite:///ondeck.db", "relative"),
        ("sqlite:///./data/ondeck.db", "relative"),
        ("sqlite:///%2E/ondeck.db", "relative"),
        ("sqlite://host/ondeck.db", "nothing would be kept"),
        ("", "the URL is empty"),
        (" ", "the URL is empty"),
        ("::not a url::", "not a database URL"),
        ("/srv/ondeck.db", "not a database URL"),
        ("mysql://me:s3cret@h/db", "only sqlite:/// and postgresql+psycopg://"),
        ("postgres://me:s3cret@h/db", "only sqlite:/// and postgresql+psycopg://"),
        ("postgresql+asyncpg://me:s3cret@h/db", "only sqlite:/// and postgresql+psycopg://"),
        ("postgresql://me:s3cret@h:port/db", "the port is not a number"),
        ("postgresql://me:s3cret@h:99999/db", "the port is not a number"),
    ],
)
def test_a_database_that_keeps_nothing_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, url: str, expected: str
) -> None:
    monkeypatch.chdir(tmp_path)
    message = _refused(monkeypatch, "ONDECK_DATABASE_URL", url)
    assert message.startswith("ONDECK_DATABASE_URL=") and expected in message
    assert "s3cret" not in message, "a refusal never shows the password"
    # The same checks for the CLI's --db, which arrives as an override.
    with pytest.raises(ConfigError, match="ONDECK_DATABASE_URL"):
        load_settings(database_url=url)
    assert list(tmp_path.iterdir()) == []


def test_a_directory_is_not_a_database_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    message = _refused(monkeypatch, "ONDECK_DATABASE_URL", f"sqlite:///{tmp_path}")
    assert "is a directory" in message


def test_database_urls_that_keep_data_are_used(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    pg = "postgresql+psycopg://me:s3cret@db.example/ondeck?sslmode=require"
    assert load_settings(database_url=pg).url == pg
    assert load_settings(database_url="sqlite:////srv/o.db").url == "sqlite:////srv/o.db"
    assert load_settings(database_url="sqlite:///~/o.db").url == f"sqlite:///{tmp_path}/o.db"


@pytest.mark.parametrize("name", ["a b", "50%off", "what?", "no#1", "한글", "%41"])
def test_a_data_dir_with_any_characters_gives_a_url_naming_exactly_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str
) -> None:
    """SQLAlchemy reads `%`, `?` and `#` in a URL as escapes, a query and a fragment."""
    from sqlalchemy.engine import make_url

    monkeypatch.setenv("ONDECK_DATA_DIR", str(tmp_path / name))
    settings = load_settings()
    assert make_url(settings.url).database == str(tmp_path / name / "ondeck.db")
    escaped = name.replace("%", "%25").replace("?", "%3F").replace("#", "%23")
    given = load_settings(database_url=f"sqlite:///{tmp_path}/{escaped}.db")
    assert make_url(given.url).database == f"{tmp_path}/{name}.db"


# --- durations -------------------------------------------------------------------------


def _bounds(name: str) -> DurationSetting:
    found = [m for m in SETTINGS_FIELDS[name].metadata if isinstance(m, DurationSetting)]
    assert found, f"{name} is a duration setting without a DurationSetting (its bounds)"
    return found[0]


@pytest.mark.parametrize("name", DURATION_SETTINGS)
def test_every_duration_setting_has_an_upper_bound_checked_at_load(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    bounds = _bounds(name)
    env = f"ONDECK_{name.upper()}"
    at_most = f"at most {format_duration(bounds.maximum)}"
    monkeypatch.setenv(env, format_duration(bounds.maximum))
    assert getattr(load_settings(), name) == bounds.maximum
    longer = format_duration(bounds.maximum + timedelta(seconds=1))
    for value in (longer, "99999999d", "999999999d999999999d", str(10**9 * 86400)):
        message = _refused(monkeypatch, env, value)
        assert message.startswith(f"{env}=") and at_most in message, message
    for value in ("-1", "1.5h", "nan", "inf", "1" * 100 + "s"):
        assert _refused(monkeypatch, env, value).startswith(f"{env}=")


@pytest.mark.parametrize("name", DURATION_SETTINGS)
def test_every_duration_bound_keeps_instant_arithmetic_in_range(name: str) -> None:
    """The bound leaves every computation with the setting (now ± it, plus the longest
    lease) far inside datetime's range for any date ondeck accepts."""
    from datetime import datetime, time

    from ondeck.core.validation import DATE_MAX, DATE_MIN
    from ondeck.work.backlog_leases import MAX_LEASE

    span = _bounds(name).maximum + MAX_LEASE
    late = datetime.combine(DATE_MAX, time.max, tzinfo=UTC)
    early = datetime.combine(DATE_MIN, time.min, tzinfo=UTC)
    assert late + span + span < datetime.max.replace(tzinfo=UTC)
    assert early - span - span > datetime.min.replace(tzinfo=UTC)


@pytest.mark.parametrize("name", SECONDS_SETTINGS)
@pytest.mark.parametrize("value", ["0", "-1", "inf", "nan", "1e308", "86401"])
def test_every_seconds_setting_is_bounded(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    assert _refused(monkeypatch, f"ONDECK_{name.upper()}", value).startswith(
        f"ONDECK_{name.upper()}="
    )


SETTINGS_PAGE = Path(__file__).parents[2] / "docs" / "configuration.md"


def test_every_setting_is_documented_with_its_bound() -> None:
    """The settings table of docs/configuration.md names every setting and nothing else,
    and each duration setting's maximum as the loader enforces it."""
    page = SETTINGS_PAGE.read_text()
    rows = [line for line in page.splitlines() if line.startswith("| `ONDECK_")]
    named = set(re.findall(r"`ONDECK_([A-Z_]+)`", " ".join(row.split("|")[1] for row in rows)))
    fields = {name.upper() for name in SETTINGS_FIELDS}
    assert fields - named == set(), "settings missing from the table"
    assert named - fields <= {"CONFIG"}, "the table names settings that do not exist"
    for name in DURATION_SETTINGS:
        row = next(line for line in rows if f"`ONDECK_{name.upper()}`" in line)
        assert f"at most `{format_duration(_bounds(name).maximum)}`" in row


def test_the_documented_defaults_are_the_defaults() -> None:
    """A default written as a literal in the table is the field's default."""
    page = SETTINGS_PAGE.read_text()
    for line in page.splitlines():
        cells = [cell.strip() for cell in line.split("|")[1:-1]]
        if not line.startswith("| `ONDECK_") or "/" in cells[0]:
            continue
        name = cells[0].strip("`").removeprefix("ONDECK_").lower()
        literal = re.fullmatch(r"`([^`$]+)`", cells[1])
        field = SETTINGS_FIELDS.get(name)
        if field is None or literal is None or field.default_factory is not None:
            continue  # a computed default (the machine's zone, the data directory)
        default = field.default
        if isinstance(default, timedelta):
            shown = format_duration(default)
        elif isinstance(default, int | float):
            shown = f"{default:g}"
        else:
            shown = str(default)
        assert literal.group(1) == shown, f"ONDECK_{name.upper()}: {literal.group(1)} != {shown}"
