"""`ondeck service install|uninstall`: the files written (and only those removed), the
systemctl commands run (a stand-in `systemctl` on PATH records them), and every refusal one
line with nothing changed."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from ondeck.entrypoints.cli import run
from ondeck.entrypoints.server import service_install
from ondeck.entrypoints.server.systemd_unit import MARKER

FAKE_SYSTEMCTL = """#!/bin/sh
echo "$*" >> "$SYSTEMCTL_LOG"
if [ -n "$SYSTEMCTL_FAILS" ]; then echo "$SYSTEMCTL_FAILS" >&2; exit 1; fi
"""


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A user's config home, a data directory, and a systemctl that records its calls."""
    config = tmp_path / "설정 home"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    monkeypatch.setenv("ONDECK_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ONDECK_TZ", "Asia/Seoul")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "systemctl"
    fake.write_text(FAKE_SYSTEMCTL)
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("SYSTEMCTL_LOG", str(tmp_path / "systemctl.log"))
    monkeypatch.delenv("SYSTEMCTL_FAILS", raising=False)
    return config


def _calls(home: Path) -> list[str]:
    log = home.parent / "systemctl.log"
    return log.read_text().splitlines() if log.exists() else []


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file() or p.is_symlink()} if root.exists() else set()


def _env(path: Path) -> dict[str, str]:
    lines = path.read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if not line.startswith("#"))


def test_it_installs_a_user_unit_with_the_settings_in_effect(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ONDECK_TOKEN", "s3cret-token-0123456789abcdef0123456789abcdef")
    monkeypatch.setenv("ONDECK_LEASE_GRACE", "2h")
    monkeypatch.setenv("ONDECK_SIDES", '{\n"work": ["/w"]\n}')
    assert run(["service", "install"]) == 0
    unit = home / "systemd" / "user" / "ondeck.service"
    env_file = home / "ondeck" / "ondeck.env"
    assert _files(home) == {unit, env_file}
    text = unit.read_text()
    assert f"ExecStart={sys.executable} -I -m ondeck serve" in text
    assert f"EnvironmentFile={env_file}" in text
    assert "WantedBy=default.target" in text
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    env = _env(env_file)
    data = str(home.parent / "data")
    assert env["ONDECK_DATA_DIR"] == data
    assert env["ONDECK_DATABASE_URL"] == f"sqlite:///{data}/ondeck.db"
    assert env["ONDECK_TZ"] == "Asia/Seoul"
    assert (env["ONDECK_HOST"], env["ONDECK_PORT"]) == ("127.0.0.1", "8787")
    assert env["ONDECK_TOKEN"] == "s3cret-token-0123456789abcdef0123456789abcdef"
    assert env["ONDECK_CONFIG"] == os.environ["ONDECK_CONFIG"]
    assert env["ONDECK_LEASE_GRACE"] == "2h"
    assert env["ONDECK_SIDES"] == """'{"work": ["/w"]}'""", "a table on one line"
    assert _calls(home) == ["--user daemon-reload", "--user enable --now ondeck.service"]
    out = capsys.readouterr().out
    assert f"wrote {unit}" in out and "enabled and started" in out and "s3cret" not in out


def test_a_dry_run_prints_everything_and_changes_nothing(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ONDECK_TOKEN", "s3cret-token-0123456789abcdef0123456789abcdef")
    monkeypatch.setenv("ONDECK_DATABASE_URL", "postgresql+psycopg://me:pw0rd@db/ondeck")
    assert run(["service", "install", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert _files(home) == set() and _calls(home) == []
    assert f"unit file: {home}/systemd/user/ondeck.service" in out
    assert f"environment file: {home}/ondeck/ondeck.env (mode 0600)" in out
    assert "Restart=on-failure" in out
    assert "ONDECK_TOKEN=<45 characters, not shown>" in out
    assert "ONDECK_DATABASE_URL=postgresql+psycopg://me:***@db/ondeck" in out
    assert "s3cret" not in out and "pw0rd" not in out
    assert "would run: systemctl --user daemon-reload" in out
    assert "would run: systemctl --user enable --now ondeck.service" in out


def test_installing_again_brings_the_files_up_to_date(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(["service", "install"]) == 0
    monkeypatch.setenv("ONDECK_PORT", "9999")
    assert run(["service", "install"]) == 0
    assert _env(home / "ondeck" / "ondeck.env")["ONDECK_PORT"] == "9999"


def test_when_systemctl_cannot_be_used_the_files_stay_and_it_says_what_to_run(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SYSTEMCTL_FAILS", "Failed to connect to bus: No medium found")
    assert run(["service", "install"]) == 5
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "Failed to connect to bus" in err
    assert "run systemctl --user daemon-reload && systemctl --user enable --now" in err
    assert len(_files(home)) == 2
    assert _calls(home) == ["--user daemon-reload"], "no enable after a failed reload"


def test_without_systemctl_at_all_it_is_unavailable_too(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(home.parent / "nothing"))
    assert run(["service", "install"]) == 5
    assert "systemctl not found" in capsys.readouterr().err


def test_uninstall_removes_exactly_what_install_wrote(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (home / "ondeck").mkdir(parents=True)
    config = home / "ondeck" / "config.toml"
    config.write_text('tz = "UTC"\n')
    other = home / "systemd" / "user" / "other.service"
    other.parent.mkdir(parents=True)
    other.write_text("[Service]\n")
    assert run(["service", "install"]) == 0
    assert run(["service", "uninstall", "--dry-run"]) == 0
    assert len(_files(home)) == 4
    assert run(["service", "uninstall"]) == 0
    assert _files(home) == {config, other}
    assert _calls(home)[2:] == ["--user disable --now ondeck.service", "--user daemon-reload"]
    assert run(["service", "uninstall"]) == 0
    assert "nothing to remove" in capsys.readouterr().out


def test_uninstall_without_systemd_removes_the_files_and_the_enable_link(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["service", "install"]) == 0
    unit = home / "systemd" / "user" / "ondeck.service"
    link = unit.parent / "default.target.wants" / "ondeck.service"
    link.parent.mkdir()
    link.symlink_to(unit)
    monkeypatch.setenv("SYSTEMCTL_FAILS", "System has not been booted with systemd")
    assert run(["service", "uninstall"]) == 5
    assert _files(home) == set()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "systemctl --user stop ondeck.service" in err


@pytest.mark.parametrize("which", ["unit", "env"])
def test_a_file_install_did_not_write_is_never_touched(
    home: Path, which: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = (
        home / "systemd" / "user" / "ondeck.service"
        if which == "unit"
        else home / "ondeck" / "ondeck.env"
    )
    path.parent.mkdir(parents=True)
    path.write_text("# mine\n")
    for args in (["service", "install"], ["service", "uninstall"]):
        assert run(args) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "was not written by `ondeck service install`" in err
    assert _files(home) == {path} and path.read_text() == "# mine\n"
    assert _calls(home) == []


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        (["service", "install", "--user", "--system"], {}, "choose one"),
        (["service", "install"], {"ONDECK_HOST": "0.0.0.0"}, "needs ONDECK_TOKEN"),
        (["service", "install"], {"ONDECK_SSL_CERTFILE": "/no/cert.pem"}, "cannot read"),
        (["service", "install"], {"ONDECK_SSL_KEYFILE": "/no/key.pem"}, "without"),
        (["service", "install"], {"ONDECK_TOKEN": "two\nlines"}, "line break"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_changed(
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    env: dict[str, str],
    expected: str,
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert run(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err, err
    assert _files(home) == set() and _calls(home) == []


@pytest.mark.parametrize("verb", ["install", "uninstall"])
def test_system_needs_root(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], verb: str
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert run(["service", verb, "--system"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "run it as root" in err
    assert _calls(home) == []


@pytest.fixture
def system_dirs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[Path, Path]:
    """/etc/systemd/system and /etc/ondeck, moved into the test's folder."""
    units, env = tmp_path / "etc-systemd-system", tmp_path / "etc-ondeck"
    monkeypatch.setattr(service_install, "SYSTEM_UNIT_DIR", units)
    monkeypatch.setattr(service_install, "SYSTEM_ENV_DIR", env)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    return units, env


def test_a_system_unit_runs_as_the_user_who_ran_sudo(
    home: Path, monkeypatch: pytest.MonkeyPatch, system_dirs: tuple[Path, Path]
) -> None:
    monkeypatch.setenv("SUDO_USER", "nobody")
    assert run(["service", "install", "--system"]) == 0
    units, env = system_dirs
    text = (units / "ondeck.service").read_text()
    assert text.startswith(MARKER)
    assert "User=nobody" in text and "WantedBy=multi-user.target" in text
    assert f"EnvironmentFile={env / 'ondeck.env'}" in text
    assert stat.S_IMODE((env / "ondeck.env").stat().st_mode) == 0o600
    assert _calls(home) == ["daemon-reload", "enable --now ondeck.service"]
    assert run(["service", "uninstall", "--system"]) == 0
    assert _files(units) == set() and _files(env) == set()


def test_a_system_unit_refuses_a_data_dir_in_roots_home(
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    system_dirs: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """sudo's HOME is root's on some systems: so would be every default path."""
    monkeypatch.setenv("SUDO_USER", "nobody")
    monkeypatch.setenv("ONDECK_DATA_DIR", "/root/.local/share/ondeck")
    assert run(["service", "install", "--system"]) == 2
    assert "ONDECK_DATA_DIR=/root/.local/share/ondeck: in root's home" in capsys.readouterr().err
    monkeypatch.setenv("ONDECK_DATA_DIR", str(home.parent / "data"))
    monkeypatch.setenv("ONDECK_CONFIG", "/root/.config/ondeck/config.toml")
    assert run(["service", "install", "--system"]) == 2
    assert "ONDECK_CONFIG=/root/.config/ondeck/config.toml" in capsys.readouterr().err
    assert _files(system_dirs[0]) == set() and _calls(home) == []
