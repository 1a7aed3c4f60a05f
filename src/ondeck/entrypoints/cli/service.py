"""`ondeck service install|uninstall`: `ondeck serve` as a systemd service."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated

import typer

from ondeck.entrypoints.cli.common import cli_of, echo

if TYPE_CHECKING:
    from ondeck.entrypoints.server.systemd_unit import Scope

app = typer.Typer(
    help="Run `ondeck serve` as a systemd service (a user or a system unit).",
    no_args_is_help=True,
)

UserOpt = Annotated[
    bool, typer.Option("--user", help="A user unit in ~/.config/systemd/user (the default).")
]
SystemOpt = Annotated[
    bool, typer.Option("--system", help="A system unit in /etc/systemd/system (as root).")
]
DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="Print the files and commands, change nothing.")
]


def _scope(user: bool, system: bool, verb: str) -> Scope:
    from ondeck.core.errors import InvalidInput
    from ondeck.entrypoints.server.service_install import check_root
    from ondeck.entrypoints.server.systemd_unit import Scope

    if user and system:
        raise InvalidInput("--user and --system: choose one")
    scope = Scope.SYSTEM if system else Scope.USER
    check_root(scope, verb)
    return scope


@app.command("install")
def install(
    ctx: typer.Context, user: UserOpt = False, system: SystemOpt = False, dry_run: DryRunOpt = False
) -> None:
    """Write a systemd unit for `ondeck serve` (jobs loop in-process) and an environment file
    with the settings in effect (mode 0600), then enable and start it."""
    from ondeck.entrypoints.server.service_install import install as run
    from ondeck.entrypoints.server.service_install import plan

    scope = _scope(user, system, "install")
    run(plan(cli_of(ctx).settings, scope, os.environ), dry_run=dry_run, echo=echo)


@app.command("uninstall")
def uninstall(user: UserOpt = False, system: SystemOpt = False, dry_run: DryRunOpt = False) -> None:
    """Stop and disable the service, remove the unit and environment file `install` wrote."""
    from ondeck.entrypoints.server.service_install import uninstall as run

    run(_scope(user, system, "uninstall"), dry_run=dry_run, echo=echo)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="service")
