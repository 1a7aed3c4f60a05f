"""The systemd unit and its environment file, rendered as systemd reads them: checked by
`systemd-analyze verify` and systemd's own environment parser where they exist."""

from __future__ import annotations

import os
import pwd
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from ondeck.core.errors import ConfigError
from ondeck.entrypoints.server.systemd_unit import (
    MARKER,
    EnvEntry,
    Scope,
    Unit,
    env_value,
    exec_word,
    render_env,
    render_unit,
)

ME = pwd.getpwuid(os.getuid()).pw_name
# The environment.d generator reads files with the parser EnvironmentFile= uses (it also
# expands $VARIABLES, which EnvironmentFile= does not: values with `$` are left out there).
ENV_GENERATOR = Path(
    "/usr/lib/systemd/user-environment-generators/30-systemd-environment-d-generator"
)


def _unit(scope: Scope, command: tuple[str, ...] = ("/opt/ondeck/bin/ondeck", "serve")) -> Unit:
    return Unit(scope=scope, command=command, env_file="/etc/ondeck/ondeck.env", user=ME)


def _settings_of(text: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            found.setdefault(key, []).append(value)
    return found


def test_it_renders_a_user_unit_that_restarts_on_failure() -> None:
    text = render_unit(_unit(Scope.USER))
    assert text.startswith(MARKER + "\n")
    got = _settings_of(text)
    assert got["ExecStart"] == ["/opt/ondeck/bin/ondeck serve"]
    assert got["EnvironmentFile"] == ["/etc/ondeck/ondeck.env"]
    assert got["Restart"] == ["on-failure"]
    assert got["RestartSec"] == ["5"]
    assert got["WantedBy"] == ["default.target"]
    assert "User" not in got, "a user unit runs as its user"
    assert "After" not in got, "a user manager has no network-online.target"


def test_it_renders_a_system_unit_run_as_the_invoking_user() -> None:
    got = _settings_of(render_unit(_unit(Scope.SYSTEM)))
    assert got["User"] == [ME]
    assert got["WantedBy"] == ["multi-user.target"]
    assert got["After"] == ["network-online.target"]


@pytest.mark.parametrize(
    ("word", "executable", "expected"),
    [
        ("serve", False, "serve"),
        ("/srv/my tools/ondeck", True, '"/srv/my tools/ondeck"'),
        ("/home/나/.venv/bin/ondeck", True, '"/home/나/.venv/bin/ondeck"'),
        ("/srv/100%/ondeck", True, "/srv/100%%/ondeck"),
        ("/srv/$x/ondeck", True, '"/srv/$x/ondeck"'),
        ("$HOME", False, '"$$HOME"'),
        ('say "hi" \\o/', False, '"say \\"hi\\" \\\\o/"'),
        (";", False, '";"'),
    ],
)
def test_exec_words_are_quoted_as_systemd_reads_them(
    word: str, executable: bool, expected: str
) -> None:
    assert exec_word(word, executable=executable) == expected


@pytest.mark.parametrize("path", ['/srv/"q"/ondeck', "/srv/it's/ondeck", "/srv/a\\b/ondeck"])
def test_an_executable_systemd_would_refuse_is_refused(path: str) -> None:
    with pytest.raises(ConfigError, match="systemd refuses"):
        render_unit(_unit(Scope.USER, (path, "serve")))


@pytest.mark.parametrize("value", ["line\nbreak", "tab\there", "ends with \\"])
def test_what_has_no_spelling_in_one_line_is_refused(value: str) -> None:
    with pytest.raises(ConfigError) as info:
        render_env([EnvEntry("ONDECK_TOKEN", value)])
    assert "ONDECK_TOKEN" in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ConfigError):
        render_unit(Unit(scope=Scope.USER, command=("/x", "serve"), env_file=f"/e/{value}"))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("/home/나/ondeck data", "'/home/나/ondeck data'"),
        ("pa$$word", "'pa$$word'"),
        ("it's $x", '"it\'s \\$x"'),
        ("", ""),
    ],
)
def test_environment_values_are_quoted(value: str, expected: str) -> None:
    assert env_value(value) == expected


def test_secrets_are_not_shown_in_a_dry_run() -> None:
    entries = [EnvEntry("ONDECK_TOKEN", "s3cret", "<6 characters, not shown>")]
    assert "s3cret" in render_env(entries)
    shown = render_env(entries, shown=True)
    assert "s3cret" not in shown and "ONDECK_TOKEN=<6 characters, not shown>" in shown


@pytest.mark.skipif(not ENV_GENERATOR.exists(), reason="systemd's environment.d generator")
def test_systemd_reads_back_every_value_as_written(tmp_path: Path) -> None:
    values = {
        "A": "plain/x.y",
        "B": "sp ace 한글",
        "C": "it's",
        "D": 'q"uote',
        "E": "back\\slash",
        "F": "both ' and \" `y` \\z",
        "G": "%h #not a comment",
        "H": '{"work": ["~/w"]}',
        "I": "  lead and trail  ",
    }
    folder = tmp_path / "environment.d"
    folder.mkdir()
    (folder / "ondeck.conf").write_text(render_env([EnvEntry(k, v) for k, v in values.items()]))
    out = subprocess.run(
        [str(ENV_GENERATOR)],
        env={"XDG_CONFIG_HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    # It prints shell assignments: a shell reads them back.
    (tmp_path / "out.sh").write_text(out)
    dump = subprocess.run(
        ["sh", "-c", f"set -a; . {shlex.quote(str(tmp_path / 'out.sh'))}; env -0"],
        env={},
        capture_output=True,
        check=True,
        timeout=30,
    ).stdout.decode()
    read = dict(item.split("=", 1) for item in dump.split("\0") if "=" in item)
    assert {k: read.get(k) for k in values} == values


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze not installed")
@pytest.mark.parametrize("scope", list(Scope))
def test_the_units_pass_systemd_analyze_verify(tmp_path: Path, scope: Scope) -> None:
    """With a real executable at a path holding spaces, Korean, `%` and `$`."""
    folder = tmp_path / "my tools" / "한글 100% $x"
    folder.mkdir(parents=True)
    executable = folder / "ondeck"
    executable.write_text("#!/bin/sh\n")
    executable.chmod(0o755)
    env_file = tmp_path / "설정 %i.env"
    env_file.write_text("ONDECK_PORT=8787\n")
    unit = Unit(
        scope=scope, command=(str(executable), "serve", "$HOME"), env_file=str(env_file), user=ME
    )
    path = tmp_path / "ondeck.service"
    path.write_text(render_unit(unit))
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    flag = ["--user"] if scope is Scope.USER else []
    done = subprocess.run(
        ["systemd-analyze", *flag, "verify", "--man=no", str(path)],
        env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "ondeck.service" not in done.stderr, done.stderr
