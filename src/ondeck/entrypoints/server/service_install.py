"""`ondeck serve` as a systemd service: the unit and its environment file written, enabled
and started; and removed again, exactly those two files and nothing else.

The environment file freezes the settings in effect where `install` runs (the database,
the data directory, the zone, where to listen, the token, TLS, the config file, and every
other `ONDECK_*` variable set there): a service does not see the shell it was installed
from. It is mode 0600 because it may hold the token.

When systemctl cannot be used (no systemd running, as in a container), the files stay
written and `Unavailable` (exit 5) says so in one line with the commands to run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ondeck.core.errors import InvalidInput, Unavailable
from ondeck.entrypoints.server.serve import check_exposure, check_tls
from ondeck.entrypoints.server.systemd_unit import (
    MARKER,
    UNIT_NAME,
    EnvEntry,
    Scope,
    Unit,
    render_env,
    render_unit,
    systemctl_commands,
)
from ondeck.host.launch import ondeck_argv
from ondeck.host.quick_settings_rules import config_file, config_home
from ondeck.host.settings import Settings, hide_password

SYSTEM_UNIT_DIR = Path("/etc/systemd/system")
SYSTEM_ENV_DIR = Path("/etc/ondeck")
ENV_NAME = "ondeck.env"
SYSTEMCTL_TIMEOUT_S = 120
# Written from the settings in effect, not from the environment as it is spelled.
_RESOLVED = {
    "database_url",
    "data_dir",
    "tz",
    "host",
    "port",
    "token",
    "ssl_certfile",
    "ssl_keyfile",
}

Echo = Callable[[str], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    scope: Scope
    unit_path: Path
    env_path: Path
    unit_text: str
    env_text: str
    env_shown: str


def paths(scope: Scope) -> tuple[Path, Path]:
    """The unit file and the environment file."""
    if scope is Scope.SYSTEM:
        return SYSTEM_UNIT_DIR / UNIT_NAME, SYSTEM_ENV_DIR / ENV_NAME
    try:
        home = Path(config_home())
    except ValueError as exc:
        raise InvalidInput(f"no place for a user unit: {exc}") from None
    return home / "systemd" / "user" / UNIT_NAME, home / "ondeck" / ENV_NAME


def check_root(scope: Scope, verb: str) -> None:
    if scope is Scope.SYSTEM and os.geteuid() != 0:
        raise InvalidInput(
            f"--system writes {SYSTEM_UNIT_DIR / UNIT_NAME}: run it as root "
            f"(sudo ondeck service {verb} --system), or use --user"
        )


def service_user() -> str:
    """Who a system unit runs as: the user who ran sudo, else whoever runs this."""
    import pwd

    name = os.environ.get("SUDO_USER") or pwd.getpwuid(os.geteuid()).pw_name
    try:
        pwd.getpwnam(name)
    except KeyError:
        raise InvalidInput(f"SUDO_USER={name:.40}: no such user") from None
    return name


def environment(settings: Settings, environ: Mapping[str, str]) -> list[EnvEntry]:
    url, hidden = settings.url, hide_password(settings.url)
    entries = [
        EnvEntry("ONDECK_DATABASE_URL", url, None if hidden == url else hidden),
        EnvEntry("ONDECK_DATA_DIR", str(settings.data_dir)),
        EnvEntry("ONDECK_TZ", settings.tz),
        EnvEntry("ONDECK_HOST", settings.host),
        EnvEntry("ONDECK_PORT", str(settings.port)),
    ]
    token = settings.token_value
    if token:
        entries.append(EnvEntry("ONDECK_TOKEN", token, f"<{len(token)} characters, not shown>"))
    for name in ("ssl_certfile", "ssl_keyfile"):
        path = getattr(settings, name)
        if path is not None:
            entries.append(EnvEntry(f"ONDECK_{name.upper()}", str(path)))
    # The file the service reads, named: its HOME and XDG_CONFIG_HOME may not be these.
    found = config_file()
    if found is not None:
        entries.append(EnvEntry("ONDECK_CONFIG", found))
    for name in type(settings).model_fields:
        key = f"ONDECK_{name.upper()}"
        if name in _RESOLVED or key not in environ:
            continue
        value = environ[key]
        given = getattr(settings, name)
        if isinstance(given, dict | list):
            value = json.dumps(given, ensure_ascii=False)  # one line
        entries.append(EnvEntry(key, value))
    return entries


def _check_reachable(settings: Settings, user: str) -> None:
    """A system unit runs as `user`: a path in root's home (where sudo's HOME puts every
    default on some systems) is one it cannot open, and would fail only once started."""
    import pwd

    if user == "root":
        return
    root_home = Path(pwd.getpwuid(0).pw_dir)
    found = config_file()
    named = {
        "ONDECK_DATA_DIR": settings.data_dir,
        "ONDECK_BACKUP_DIR": settings.backups_path,
        "ONDECK_SSL_CERTFILE": settings.ssl_certfile,
        "ONDECK_SSL_KEYFILE": settings.ssl_keyfile,
        "ONDECK_CONFIG": None if found is None else Path(found),
    }
    for name, path in named.items():
        if path is not None and (path == root_home or root_home in path.parents):
            raise InvalidInput(
                f"{name}={path}: in root's home, which the service's user {user} cannot "
                f"open: give {user}'s own (sudo env {name}=… ondeck service install --system)"
            )


def plan(settings: Settings, scope: Scope, environ: Mapping[str, str]) -> Plan:
    check_exposure(settings, settings.host)
    check_tls(settings.ssl_certfile, settings.ssl_keyfile)
    unit_path, env_path = paths(scope)
    user = None
    if scope is Scope.SYSTEM:
        user = service_user()
        _check_reachable(settings, user)
    unit = Unit(scope=scope, command=(*ondeck_argv(), "serve"), env_file=str(env_path), user=user)
    entries = environment(settings, environ)
    return Plan(
        scope=scope,
        unit_path=unit_path,
        env_path=env_path,
        unit_text=render_unit(unit),
        env_text=render_env(entries),
        env_shown=render_env(entries, shown=True),
    )


def _ours(path: Path) -> bool:
    """Whether the file there was written by install; False when there is none. A file
    that is someone else's is refused before anything changes."""
    if not path.exists() and not path.is_symlink():
        return False
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            first = handle.readline().rstrip("\n")
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read it: {exc.strerror}; nothing changed") from None
    if first != MARKER or path.is_symlink():
        raise InvalidInput(f"{path} was not written by `ondeck service install`; nothing changed")
    return True


def _write(path: Path, text: str, mode: int) -> None:
    """Atomically, with its mode from the start (the token is never readable by others)."""
    from ondeck.host import private

    private.make_dirs(path.parent)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _systemctl(argv: list[str]) -> str | None:
    """Run one `systemctl …`; None when it worked, else why not, in one line."""
    found = shutil.which("systemctl")
    if found is None:
        return "systemctl not found"
    try:
        done = subprocess.run(
            [found, *argv[1:]],
            capture_output=True,
            text=True,
            timeout=SYSTEMCTL_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"no answer in {SYSTEMCTL_TIMEOUT_S} s"
    except OSError as exc:
        return exc.strerror or str(exc)
    if done.returncode == 0:
        return None
    said = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    return said[-1] if said else f"exit status {done.returncode}"


def _shown(commands: list[list[str]]) -> str:
    return " && ".join(" ".join(command) for command in commands)


def _run_all(commands: list[list[str]]) -> tuple[list[str], str] | None:
    """Each command in turn until one fails: None, or the one that failed and why."""
    for command in commands:
        why = _systemctl(command)
        if why is not None:
            return command, why
    return None


def install(plan: Plan, *, dry_run: bool, echo: Echo) -> None:
    commands = systemctl_commands(plan.scope, ("daemon-reload",), ("enable", "--now", UNIT_NAME))
    _ours(plan.unit_path)
    env_existed = _ours(plan.env_path)
    if dry_run:
        echo(f"unit file: {plan.unit_path}")
        echo(plan.unit_text)
        echo(f"environment file: {plan.env_path} (mode 0600)")
        echo(plan.env_shown)
        for command in commands:
            echo(f"would run: {' '.join(command)}")
        echo("nothing changed (--dry-run)")
        return
    try:
        _write(plan.env_path, plan.env_text, 0o600)
        try:
            _write(plan.unit_path, plan.unit_text, 0o644)
        except OSError:
            if not env_existed:
                plan.env_path.unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise InvalidInput(
            f"cannot write {exc.filename or plan.unit_path}: {exc.strerror}; nothing changed"
        ) from None
    echo(f"wrote {plan.unit_path}")
    echo(f"wrote {plan.env_path} (mode 0600)")
    failed = _run_all(commands)
    if failed is not None:
        command, why = failed
        raise Unavailable(
            f"could not enable and start {UNIT_NAME} ({' '.join(command)}: {why}); "
            f"the files are written: run {_shown(commands)}",
            code="systemd_unavailable",
        )
    flag = " --user" if plan.scope is Scope.USER else ""
    echo(f"enabled and started {UNIT_NAME}: systemctl{flag} status {UNIT_NAME}")
    if plan.scope is Scope.USER and not _lingering():
        echo("it stops when you log out: `loginctl enable-linger` keeps it running")


def _lingering() -> bool:
    import getpass

    return Path("/var/lib/systemd/linger", getpass.getuser()).exists()


def uninstall(scope: Scope, *, dry_run: bool, echo: Echo) -> None:
    unit_path, env_path = paths(scope)
    mine = [path for path in (unit_path, env_path) if _ours(path)]
    if not mine:
        echo(f"nothing to remove: no {unit_path} or {env_path} written by ondeck")
        return
    stop = systemctl_commands(scope, ("disable", "--now", UNIT_NAME))
    reload = systemctl_commands(scope, ("daemon-reload",))
    if dry_run:
        for command in stop if unit_path in mine else []:
            echo(f"would run: {' '.join(command)}")
        for path in mine:
            echo(f"would remove {path}")
        for command in reload:
            echo(f"would run: {' '.join(command)}")
        echo("nothing changed (--dry-run)")
        return
    # Stopped before its files go: a running service keeps its unit until daemon-reload.
    failed = _run_all(stop) if unit_path in mine else None
    if failed is not None:
        mine += _enabled_link(scope, unit_path)
    for path in mine:
        try:
            path.unlink()
        except OSError as exc:
            raise InvalidInput(f"cannot remove {path}: {exc.strerror}") from None
        echo(f"removed {path}")
    failed = failed or _run_all(reload)
    if failed is not None:
        command, why = failed
        after = systemctl_commands(scope, ("stop", UNIT_NAME), ("daemon-reload",))
        raise Unavailable(
            f"removed the files, but {' '.join(command)} failed ({why}): if it still runs, "
            f"run {_shown(after)}",
            code="systemd_unavailable",
        )
    echo(f"stopped and disabled {UNIT_NAME}")


def _enabled_link(scope: Scope, unit_path: Path) -> list[Path]:
    """The link `enable` made, when `disable` could not remove it: it points at our unit."""
    target = "multi-user.target" if scope is Scope.SYSTEM else "default.target"
    link = unit_path.parent / f"{target}.wants" / UNIT_NAME
    if link.is_symlink() and Path(os.path.realpath(link)) == Path(os.path.realpath(unit_path)):
        return [link]
    return []
