"""`ondeck backup` and `ondeck restore FILE --yes`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ondeck.entrypoints.cli.common import cli_of, echo, print_json

JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]


def register(app: typer.Typer) -> None:
    @app.command("backup")
    def backup(ctx: typer.Context, as_json: JsonOpt = False) -> None:
        """Back up the database now (into ONDECK_BACKUP_DIR), verified, old files pruned."""
        from ondeck.backups import runs as backup_runs
        from ondeck.core.errors import OndeckError
        from ondeck.core.models import BackupStatus

        cli = cli_of(ctx)
        ran = backup_runs.run_backup(cli.engine, cli.settings, cli.now(), actor=cli.actor)
        result = ran.backup
        if as_json:
            print_json({**result.to_json(cli.settings.zone), "warnings": ran.warnings})
        if result.status != BackupStatus.OK:
            raise OndeckError(f"backup {result.id} failed: {result.error}", code="backup_failed")
        if not as_json:
            echo(f"backup {result.id}: {result.file} ({result.bytes} bytes)")
        for warning in ran.warnings:
            # The backup is good (exit 0); what it could not tidy is said, one line each.
            echo(f"ondeck: warning: {' '.join(warning.split())}", err=True)

    @app.command("restore")
    def restore(
        ctx: typer.Context,
        file: Annotated[Path, typer.Argument(help="A backup file written by `ondeck backup`.")],
        yes: Annotated[
            bool, typer.Option("--yes", help="Confirm: every row in the database is replaced.")
        ] = False,
        as_json: JsonOpt = False,
    ) -> None:
        """Replace the configured database's contents with a backup (stop the server first).

        The current database is kept first as a safety copy in ONDECK_BACKUP_DIR.
        """
        from ondeck.backups import restore as restoring
        from ondeck.core.clock import iso
        from ondeck.core.errors import InvalidInput
        from ondeck.db.engine import describe, make_engine, translate_errors

        cli = cli_of(ctx)
        engine = make_engine(cli.database_url)
        if not yes:
            raise InvalidInput(
                f"restore replaces every row in {describe(engine)}: run it again with --yes"
            )
        zone = cli.settings.zone
        try:
            with translate_errors():
                result = restoring.restore(engine, cli.settings, file, cli.now(), actor=cli.actor)
        finally:
            engine.dispose()
        if as_json:
            print_json(result.to_json(zone))
            return
        if result.taken_at is not None:
            when = f"a backup taken {iso(result.taken_at, zone)}"
        elif result.last_event_at is not None:
            when = f"a backup whose last change was {iso(result.last_event_at, zone)}"
        else:
            when = "a backup with no recorded change"
        echo(f"restored {describe(engine)} from {result.file} ({when})")
        replaced = result.replaced
        if result.safety_copy is None:
            echo("the database it replaced was empty: no safety copy was needed")
        else:
            last = replaced.get("last_event_at")
            echo(
                f"the database it replaced ({replaced['tasks']} tasks, {replaced['schedules']} "
                f"schedules, {replaced['events']} events, last change "
                f"{iso(last, zone) if last else 'none'}) is kept in {result.safety_copy}: "
                f"`ondeck restore {result.safety_copy} --yes` undoes this"
            )
