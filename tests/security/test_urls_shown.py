"""Secrets in what ondeck prints: wherever a URL is shown (a refusal, the
dry run of `service install`, a session's context, the server's banner, the System page), its
password and secret options are `***`, whichever way the URL carries them."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from ondeck.core import urls
from ondeck.core.errors import ConfigError
from ondeck.db.engine import describe, make_engine
from ondeck.entrypoints.cli import run
from ondeck.host.quick_settings import HookConfig
from ondeck.host.settings import load_settings
from support.hooks import ONDECK, payload

SECRETS = ("sekrit1", "sekrit2", "sekrit3")
# The same password given each way a database or server URL can carry one.
URLS = [
    "postgresql+psycopg://me:sekrit1@127.0.0.1:1/ondeck",
    "postgresql+psycopg://me@127.0.0.1:1/ondeck?password=sekrit1&sslmode=disable",
    "postgresql+psycopg://me:sekrit1@127.0.0.1:1/ondeck?sslpassword=sekrit2&PassWord=sekrit3",
]


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql+psycopg://u:sekrit1@h/db", "postgresql+psycopg://u:***@h/db"),
        (
            "postgresql+psycopg://u@h/db?password=sekrit1&x=1",
            "postgresql+psycopg://u@h/db?password=***&x=1",
        ),
        ("https://a:sekrit1@h:1/p?api_key=sekrit2#frag", "https://a:***@h:1/p?api_key=***#frag"),
        (
            "https://h/?access-token=sekrit1&Signature=sekrit2",
            "https://h/?access-token=***&Signature=***",
        ),
        ("sqlite:////srv/온덱/ondeck.db", "sqlite:////srv/온덱/ondeck.db"),
        ("https://user@h/", "https://user@h/"),
        ("postgresql+psycopg://me:p@ss:sekrit1@h/db", "postgresql+psycopg://me:***@h/db"),
        ("not a url: sekrit", "not a url: sekrit"),
    ],
)
def test_shown_hides_the_password_and_the_secret_options(url: str, expected: str) -> None:
    assert urls.shown(url) == expected


@pytest.mark.parametrize("url", URLS)
def test_the_engine_s_description_and_a_refusal_never_hold_it(url: str) -> None:
    engine = make_engine(url)
    try:
        assert not any(s in describe(engine) for s in SECRETS), describe(engine)
    finally:
        engine.dispose()
    with pytest.raises(ConfigError) as refused:
        load_settings(database_url=url.replace("postgresql+psycopg", "mysql"))
    assert not any(s in refused.value.message for s in SECRETS), refused.value.message
    config = HookConfig(database_url=url, data_dir="/tmp", token="t" * 40)
    assert not any(s in repr(config) for s in SECRETS) and "t" * 40 not in repr(config)


def test_a_server_url_with_a_password_is_refused_without_it() -> None:
    with pytest.raises(ConfigError) as refused:
        load_settings(server_url="https://me:sekrit1@deck.example.net:8787")
    assert "sekrit1" not in refused.value.message and "me:***@" in refused.value.message


@pytest.mark.parametrize("url", URLS)
def test_service_install_dry_run_hides_it(
    url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("ONDECK_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ONDECK_DATABASE_URL", url)
    assert run(["service", "install", "--dry-run"]) == 0
    out, err = capsys.readouterr()
    assert "ONDECK_DATABASE_URL=postgresql+psycopg://me" in out
    assert not any(s in out + err for s in SECRETS), out


@pytest.mark.parametrize(
    "env",
    [
        {"ONDECK_SERVER_URL": "https://me:sekrit1@deck.example.net:8787"},
        {"ONDECK_DATABASE_URL": URLS[2]},
        {"ONDECK_DATABASE_URL": URLS[1].replace("postgresql+psycopg", "mysql")},
    ],
    ids=["server-url", "database-url", "refused-database-url"],
)
def test_a_session_s_context_never_holds_it(env: dict[str, str], tmp_path: Path) -> None:
    """The session-start hook, a real process, tells the session why ondeck is unavailable;
    what it says goes into the agent's context, so it must not carry the password."""
    result = subprocess.run(
        [ONDECK, "hook", "session-start"],
        input=json.dumps(payload("start", cwd=str(tmp_path))),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "ONDECK_DATA_DIR": str(tmp_path / "data"), **env},
        check=False,
    )
    assert result.returncode == 0
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "unavailable" in context
    assert not any(s in result.stdout + result.stderr for s in SECRETS), context
