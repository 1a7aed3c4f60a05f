"""`ondeck db upgrade|status`."""

from __future__ import annotations

import typer

from ondeck.entrypoints.cli.common import cli_of, echo, print_json

app = typer.Typer(help="The database schema.", no_args_is_help=True)


@app.command("upgrade")
def upgrade(ctx: typer.Context) -> None:
    """Bring the schema to the latest version (ondeck also does this whenever it opens one)."""
    from ondeck.db.engine import describe, make_engine
    from ondeck.db.migrate import upgrade as run_upgrade
    from ondeck.memory.recall_index import recall_step

    cli = cli_of(ctx)
    engine = make_engine(cli.database_url)
    try:
        before, after = run_upgrade(engine)
        # What the upgrade queued for recall's index (all rows, the first time), indexed now
        # rather than by the first recall or jobs tick.
        indexed = recall_step(engine, cli.now(), cli.settings)["indexed"]
    finally:
        engine.dispose()
    also = f"; {indexed} items indexed for recall" if indexed else ""
    if before == after:
        echo(f"{describe(engine)}: schema already at {after}{also}")
    else:
        echo(f"{describe(engine)}: schema {before or 'empty'} -> {after}{also}")


@app.command("status")
def status(ctx: typer.Context, as_json: bool = typer.Option(False, "--json")) -> None:
    """Show the database kind and schema version."""
    from ondeck.db.engine import describe, make_engine
    from ondeck.db.migrate import HEAD, read_revision

    cli = cli_of(ctx)
    engine = make_engine(cli.database_url)
    try:
        revision = read_revision(engine)
    finally:
        engine.dispose()
    data = {
        "database": describe(engine),
        "kind": engine.dialect.name,
        "schema_version": revision,
        "latest": HEAD,
        "current": revision == HEAD,
    }
    if as_json:
        print_json(data)
    else:
        for key, value in data.items():
            echo(f"{key}: {value}")
