"""`ondeck up`, `ondeck serve`, `ondeck jobs`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from ondeck.entrypoints.cli.common import cli_of, echo

HostOpt = Annotated[str | None, typer.Option("--host", help="Address to bind (ONDECK_HOST).")]
PortOpt = Annotated[
    int | None, typer.Option("--port", help="Port (ONDECK_PORT).", min=0, max=65535)
]
NoJobsOpt = Annotated[bool, typer.Option("--no-jobs", help="Do not run the jobs loop in-process.")]
CertOpt = Annotated[
    Path | None,
    typer.Option(
        "--ssl-certfile", help="Serve HTTPS with this PEM certificate (ONDECK_SSL_CERTFILE)."
    ),
]
KeyOpt = Annotated[
    Path | None,
    typer.Option("--ssl-keyfile", help="The certificate's PEM key (ONDECK_SSL_KEYFILE)."),
]


def _serve(
    ctx: typer.Context,
    host: str | None,
    port: int | None,
    no_jobs: bool,
    announce: bool,
    certfile: Path | None = None,
    keyfile: Path | None = None,
) -> None:
    from ondeck.core import logs
    from ondeck.entrypoints.server.serve import check_bind, check_tls, owner_socket, serve

    cli = cli_of(ctx)
    settings = cli.settings
    cli.needs_database()  # a server serves its own database
    logs.setup(settings.zone)
    host = host or settings.host
    port = settings.port if port is None else port
    # An option names a file as a shell does: relative to where the command runs.
    tls = check_tls(
        certfile.expanduser().absolute() if certfile else settings.ssl_certfile,
        keyfile.expanduser().absolute() if keyfile else settings.ssl_keyfile,
    )
    check_bind(settings, host, port)
    if announce:
        from ondeck.core.urls import shown

        where = f"[{host}]" if ":" in host else host
        scheme = "http" if tls is None else "https"
        echo(f"ondeck serving {scheme}://{where}:{port}/  (API /api/v1, health /api/v1/health)")
        echo(f"database: {shown(settings.url)}")
        echo(f"this machine's hooks: {owner_socket(settings, port)} (owner only)")
        echo(
            "jobs loop: " + ("off (--no-jobs)" if no_jobs else f"every {settings.tick_seconds:g}s")
        )
    serve(settings, host=host, port=port, jobs=not no_jobs, tls=tls)


def _server_command(announce: bool, doc: str) -> Callable[..., None]:
    """`up` and `serve`: the same options; `up` also says where it serves."""

    def command(
        ctx: typer.Context,
        host: HostOpt = None,
        port: PortOpt = None,
        no_jobs: NoJobsOpt = False,
        ssl_certfile: CertOpt = None,
        ssl_keyfile: KeyOpt = None,
    ) -> None:
        _serve(ctx, host, port, no_jobs, announce, ssl_certfile, ssl_keyfile)

    command.__doc__ = doc
    return command


def register(app: typer.Typer) -> None:
    app.command("up")(
        _server_command(True, "Start the server and its jobs loop, and print where it is.")
    )
    app.command("serve")(
        _server_command(
            False, "Start the HTTP server (API, dashboard) with the jobs loop in-process."
        )
    )

    @app.command("jobs")
    def jobs(
        ctx: typer.Context,
        once: Annotated[bool, typer.Option("--once", help="Run a single tick and exit.")] = False,
    ) -> int:
        """Run the jobs loop alone: fire due schedules, reap stale leases, back up, heartbeat."""
        from ondeck.core import logs
        from ondeck.entrypoints.jobs.loop import Jobs

        cli = cli_of(ctx)
        cli.needs_database()
        logs.setup(cli.settings.zone)
        runner = Jobs(engine=cli.engine, settings=cli.settings)
        if not once:
            runner.install_signal_handlers()
        return runner.run(once=once)
