"""`ondeck backup` and `ondeck restore FILE --yes`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ondeck.entrypoints.cli.common import cli_of, print_json

JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]


def register(app: typer.Typer) -> None:
    @app.command("backup")
    def backup(ctx: typer.Context, as_json: JsonOpt = False) -> None:
        """Back up the database now (into ONDECK_BACKUP_DIR), verified, old files pruned."""
        from ondeck.core.errors import OndeckError
        from ondeck.core.models import BackupStatus
        from ondeck.services import maintenance

        cli = cli_of(ctx)
        result = maintenance.run_backup(cli.engine, cli.settings, cli.now(), actor=cli.actor)
        if as_json:
            print_json(result.to_json(cli.settings.zone))
        if result.status != BackupStatus.OK:
            raise OndeckError(f"backup {result.id} failed: {result.error}", code="backup_failed")
        if not as_json:
            typer.echo(f"backup {result.id}: {result.file} ({result.bytes} bytes)")

    @app.command("restore")
    def restore(
        ctx: typer.Context,
        file: Annotated[Path, typer.Argument(help="A backup file written by `ondeck backup`.")],
        yes: Annotated[
            bool, typer.Option("--yes", help="Confirm: every row in the database is replaced.")
        ] = False,
        as_json: JsonOpt = False,
    ) -> None:
        """Replace the configured database's contents with a backup (stop the server first)."""
        from ondeck.core.errors import InvalidInput
        from ondeck.db.engine import describe, make_engine
        from ondeck.services import maintenance

        cli = cli_of(ctx)
        engine = make_engine(cli.settings.url)
        if not yes:
            raise InvalidInput(
                f"restore replaces every row in {describe(engine)}: run it again with --yes"
            )
        result = maintenance.restore(engine, file, cli.now(), actor=cli.actor)
        engine.dispose()
        if as_json:
            print_json(result)
        else:
            typer.echo(f"restored {describe(engine)} from {result['file']}")
