"""`ondeck token create|list|revoke`: device tokens for the API (system/tokens.py).

Run on the server's machine (they change its database). `create` prints the token once, on
stdout alone (so `$(ondeck token create laptop)` captures it), and what it is on stderr.
"""

from __future__ import annotations

from typing import Annotated

import typer

from ondeck.entrypoints.cli.common import cli_of, echo, print_json, print_table

app = typer.Typer(help="Device tokens for the API: one per machine, revocable.")

NameArg = Annotated[str, typer.Argument(help="The token's name, such as the device's: laptop.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]


@app.command("create")
def create(
    ctx: typer.Context,
    name: NameArg,
    scope: Annotated[
        str, typer.Option("--scope", help="read (context, recall, lists) or write (also changes).")
    ] = "write",
    expires: Annotated[
        str | None, typer.Option("--expires", help="Expires after this long, such as 90d.")
    ] = None,
    side: Annotated[
        str | None,
        typer.Option("--side", help="The one side it sees and writes (default: every side)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Make a token; it is printed once and stored only as a hash."""
    from ondeck.core.durations import parse_duration
    from ondeck.core.sides import side_to_write
    from ondeck.system import tokens

    cli = cli_of(ctx)
    lifetime = None if expires is None else parse_duration(expires, name="--expires")
    limited = side_to_write(cli.settings.sides, side)
    with cli.write() as conn:
        made = tokens.create(conn, cli.now(), name, scope, lifetime, actor=cli.actor, side=limited)
    if as_json:
        print_json({**made.token.to_json(cli.now(), cli.settings.zone), "token": made.secret})
    else:
        until = cli.local(made.token.expires_at) or "never"
        sees = f", side {limited} only" if limited else ""
        echo(
            f"token {name!r} ({made.token.scope.value}{sees}, expires: {until}); shown only now, "
            "give it to the device as ONDECK_TOKEN or as the bearer:",
            err=True,
        )
        echo(made.secret)
    if cli.settings.token_value is None:
        echo(
            "note: ONDECK_TOKEN is not set here: a server without it asks for no token at all",
            err=True,
        )


@app.command("list")
def list_(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Every token (revoked ones too): name, scope, made, last used, expires. Never the token."""
    from ondeck.system import tokens

    cli = cli_of(ctx)
    with cli.read() as conn:
        found = tokens.list_tokens(conn)
    now, zone = cli.now(), cli.settings.zone
    if as_json:
        print_json([t.to_json(now, zone) for t in found])
        return
    if not found:
        echo("no tokens (`ondeck token create NAME` makes one)")
        return
    rows = [
        [
            t.name,
            t.scope.value,
            t.state(now),
            cli.local(t.created_at),
            cli.local(t.last_used_at) or "never",
            cli.local(t.expires_at) or "never",
            t.side or "every",
        ]
        for t in found
    ]
    print_table(["name", "scope", "state", "created", "last used", "expires", "side"], rows)


@app.command("revoke")
def revoke(ctx: typer.Context, name: NameArg, as_json: JsonOpt = False) -> None:
    """Revoke a token: refused from the next request on."""
    from ondeck.system import tokens

    cli = cli_of(ctx)
    with cli.write() as conn:
        gone = tokens.revoke(conn, cli.now(), name, actor=cli.actor)
    if as_json:
        print_json(gone.to_json(cli.now(), cli.settings.zone))
    else:
        echo(f"revoked token {name!r}")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="token")
