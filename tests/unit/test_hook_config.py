"""The hooks' settings reader (no pydantic) and the full settings never disagree: on every
value both accept they give the same, and where the quick reader is unsure it gives up and
the full settings decide (accept, or refuse with their one line)."""

from __future__ import annotations

import inspect
import os
from pathlib import Path

import pytest

from ondeck.core.errors import ConfigError
from ondeck.host.quick_settings import (
    FIELDS,
    RULE_FIELDS,
    HookConfig,
)
from ondeck.host.quick_settings_read import hook_config_of, load_hook_config, read_quickly
from ondeck.host.quick_settings_rules import database_url, posix_path
from ondeck.host.settings import Settings, load_settings

PLAIN_CASES = [
    ({}, ""),
    ({"ONDECK_DATABASE_URL": "postgresql+psycopg://u@h/db", "ONDECK_PORT": "9100"}, ""),
    (
        {
            "ONDECK_DATA_DIR": "~/od",
            "ONDECK_TOKEN": "s3cret-0123456789abcdef0123456789abcdef",
            "ONDECK_HOST": "0.0.0.0",
        },
        "",
    ),
    ({"ONDECK_TOKEN": ""}, ""),
    (
        {
            "ONDECK_SERVER_URL": "https://deck.example.net:8787/",
            "ONDECK_TOKEN": "odk_x0123456789abcdef0123456789abcdef012345",
        },
        "",
    ),
    ({}, 'server_url = "http://[::1]:8787"\n'),
    ({"ONDECK_TZ": "Asia/Seoul", "ONDECK_LEASE_GRACE": "90m", "ONDECK_TICK_SECONDS": "2.5"}, ""),
    ({"ondeck_port": "9000"}, ""),
    ({}, 'port = 9001\ntz = "Europe/Berlin"\nlease_grace = "2h"\ntick_seconds = 5\n'),
    ({"ONDECK_PORT": "9100"}, "port = 9001\n"),
    (
        {},
        '[projects]\n"~/site" = "site"\n[sides]\nwork = ["~/work", "/srv"]\npersonal = []\n'
        '[remotes]\n"github.com/acme/*" = { side = "work", project = "acme" }\n',
    ),
    (
        {"ONDECK_SIDES": '{"work": ["/w"], "personal": ["/p"]}', "ONDECK_NO_CAPTURE": '["/p/x"]'},
        'no_capture = ["/ignored"]\nprivate_globs = ["*.sqlite"]\n',
    ),
    ({"ONDECK_PRIVATE_GLOBS": '["secrets/*"]'}, 'backup_keep = 3\nsomething_else = "x"\n'),
]

UNSURE_CASES = [
    # A blank or short token: the full settings refuse it, saying why.
    ({"ONDECK_TOKEN": " "}, ""),
    ({"ONDECK_TOKEN": "s3cret"}, ""),
    ({}, 'token = "토큰"\n'),
    ({"ONDECK_PORT": " 9000"}, ""),
    ({"ONDECK_TICK_SECONDS": "1e2"}, ""),
    ({}, "port = 9000.0\n"),
    ({}, "PORT = 9000\n"),
    ({"ONDECK_SIDES": '{"work": "/w"}'}, ""),
    # Past a bound the full settings hold: they refuse it, and so does the hook.
    ({"ONDECK_LEASE_GRACE": "31d"}, ""),
    ({}, 'lease_grace = "800h"\n'),
]

BAD_CASES = [
    ({"ONDECK_PORT": "99999"}, "", "ONDECK_PORT"),
    ({"ONDECK_SIDES": "{not json"}, "", "ONDECK_SIDES: not valid JSON"),
    ({"ONDECK_SIDES": '{"bad side": []}'}, "", "not a side name"),
    ({}, '[remotes]\n"x" = { side = "w" }\n[sides]\nwork = []\n', "which sides does not list"),
    ({}, "[remotes]\n\"x\" = { team = 'w' }\n", "must give side and/or project"),
    ({}, "port = [", "not valid TOML"),
    ({"ONDECK_DATABASE_URL": ""}, "", "the URL is empty"),
    ({"ONDECK_SERVER_URL": "ftp://h"}, "", "not an http or https URL"),
    ({"ONDECK_SERVER_URL": "https://h:99999"}, "", "the port"),
    ({"ONDECK_SERVER_URL": "https://h/api"}, "", "no path"),
    ({"ONDECK_SERVER_URL": "https://u:p@h"}, "", "user name"),
    ({"ONDECK_SERVER_URL": "https://h?x=1"}, "", "no query"),
    ({"ONDECK_DATABASE_URL": "sqlite:///relative.db"}, "", "relative"),
    ({"ONDECK_DATA_DIR": "data"}, "", "relative"),
    ({"ONDECK_SIDES": '{"work": ["work"]}'}, "", "relative"),
    ({"ONDECK_NO_CAPTURE": '["~nobody-here/x"]'}, "", "home directory"),
]


def _setup(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, env: dict[str, str], toml: str) -> None:
    config = tmp_path / "config.toml"
    if toml:
        config.write_text(toml)
    monkeypatch.setenv("ONDECK_CONFIG", str(config))
    for key, value in env.items():
        monkeypatch.setenv(key, value)


@pytest.mark.parametrize(("env", "toml"), PLAIN_CASES)
def test_the_quick_reader_reads_what_the_settings_read(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, env: dict[str, str], toml: str
) -> None:
    _setup(monkeypatch, tmp_path, env, toml)
    quick = read_quickly()
    assert quick is not None
    full = hook_config_of(load_settings())
    assert quick == full
    assert (quick.url, quick.store_id, quick.local_url) == (full.url, full.store_id, full.local_url)
    assert quick.spool_dir == str(load_settings().spool_dir)


@pytest.mark.parametrize(("env", "toml"), UNSURE_CASES)
def test_where_unsure_the_full_settings_decide(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, env: dict[str, str], toml: str
) -> None:
    _setup(monkeypatch, tmp_path, env, toml)
    assert read_quickly() is None
    try:
        full = hook_config_of(load_settings())
    except ConfigError as exc:
        with pytest.raises(ConfigError, match=str(exc)[:20]):
            load_hook_config()
    else:
        assert load_hook_config() == full


@pytest.mark.parametrize(("env", "toml", "message"), BAD_CASES)
def test_a_bad_value_is_one_line_naming_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, env: dict[str, str], toml: str, message: str
) -> None:
    _setup(monkeypatch, tmp_path, env, toml)
    with pytest.raises(ConfigError, match=message) as caught:
        load_hook_config()
    assert "\n" not in str(caught.value)


def test_the_database_url_given_on_the_command_line_wins(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _setup(monkeypatch, tmp_path, {"ONDECK_DATABASE_URL": "sqlite:////a.db"}, "")
    assert load_hook_config("sqlite:////b.db").url == "sqlite:////b.db"


def test_an_unknown_zone_is_refused_where_it_is_used(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A stop hook has no use for the zone; session-start's context does, and says so."""
    _setup(monkeypatch, tmp_path, {"ONDECK_TZ": "Mars/Olympus"}, "")
    config = load_hook_config()
    with pytest.raises(ConfigError, match="ONDECK_TZ=Mars/Olympus: unknown time zone"):
        _ = config.zone
    with pytest.raises(ConfigError, match="unknown time zone"):
        load_settings()


@pytest.mark.parametrize(
    "text",
    [
        "/srv/od",
        "/srv//od/",
        "~/od/./x",
        "rel/path",
        "/a/../b",
        "//net/share",
        "///x",
        ".",
        "./",
        "~",
        "/",
        "한글/폴더",
    ],
)
def test_paths_are_made_as_pathlib_makes_them(text: str) -> None:
    """The database URL (and so the store fingerprint a server is matched by) must not
    change with the way the path is built."""
    assert posix_path(text) == str(Path(text).expanduser())
    assert database_url(None, text) == f"sqlite:///{Path(text).expanduser() / 'ondeck.db'}"


def test_the_session_settings_are_documented() -> None:
    docs = Path(__file__).resolve().parents[2] / "docs"
    assert "`ONDECK_SESSION_GRACE`" in (docs / "configuration.md").read_text()
    sessions = (docs / "sessions.md").read_text()
    for key in ("[sides]", "[remotes]", "no_capture", "private_globs", ".ondeck.toml"):
        assert key in sessions, key


def test_the_hooks_settings_are_settings_with_the_same_defaults(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Each field a hook uses is one of the full settings' fields, the record takes each of
    them, and where nothing is set the two give the same values."""
    assert set(FIELDS) <= set(Settings.model_fields)
    assert set(RULE_FIELDS) <= set(FIELDS)
    assert set(inspect.signature(HookConfig).parameters) == set(FIELDS)
    for name in list(os.environ):
        if name.lower().startswith("ondeck_"):
            monkeypatch.delenv(name)
    _setup(monkeypatch, tmp_path, {}, "")
    assert HookConfig() == hook_config_of(load_settings())


def test_the_hooks_name_rule_is_the_projects() -> None:
    """The hooks read names without `core.validation` (it loads the scrubber): their copy of
    the pattern is held to the one projects and sides are checked by."""
    from ondeck.core.validation import PROJECT_PATTERN
    from ondeck.host.quick_settings_rules import NAME_PATTERN

    assert NAME_PATTERN == PROJECT_PATTERN
