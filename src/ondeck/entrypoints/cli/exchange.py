"""`ondeck export` and `ondeck import`: memory (notes, decisions, handoffs) out of and into
a database. Thin: parse, call services/exchange.py, write or print."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from ondeck.entrypoints.cli.common import cli_of, print_json


class Format(StrEnum):
    jsonl = "jsonl"
    markdown = "markdown"


def register(app: typer.Typer) -> None:
    @app.command("export")
    def export(
        ctx: typer.Context,
        fmt: Annotated[Format, typer.Option("--format", help="jsonl or markdown")],
        side: Annotated[
            str | None, typer.Option("--side", help="Only this side (default: all).")
        ] = None,
        out: Annotated[
            Path | None,
            typer.Option(
                "--out", help="jsonl: a file (default stdout); markdown: a directory (required)."
            ),
        ] = None,
    ) -> None:
        """Export memory: every note as JSONL, or Markdown files per project (decisions,
        pinned notes, latest handoff)."""
        from ondeck.core.errors import InvalidInput
        from ondeck.services import exchange

        cli = cli_of(ctx)
        settings = cli.settings
        if side is not None and side not in settings.sides:
            raise InvalidInput(f"side {side[:64]!r} is not configured")
        now = cli.now()
        if fmt is Format.jsonl:
            if out is None:
                with cli.read() as conn:
                    for line in exchange.export_jsonl(conn, now, side=side):
                        sys.stdout.write(line)
                return
            # Written beside, then renamed: a file under the name given is always whole.
            partial = out.with_name(out.name + ".partial")
            if out.exists():
                raise InvalidInput(f"{out} exists: give a new file name")
            target = _open_new(partial)
            written = 0
            try:
                with target, cli.read() as conn:
                    for line in exchange.export_jsonl(conn, now, side=side):
                        target.write(line)
                        written += 1
                partial.replace(out)
            finally:
                partial.unlink(missing_ok=True)
            typer.echo(f"exported {written - 1} record(s) to {out}", err=True)
            return
        if out is None:
            raise InvalidInput("--format markdown writes one file per project: give --out DIR")
        with cli.read() as conn:
            files = exchange.export_markdown(conn, now, settings.zone, side=side)
        _write_files(out, files)
        typer.echo(f"exported {len(files)} file(s) to {out}")

    @app.command("import")
    def import_(
        ctx: typer.Context,
        file: Annotated[
            Path, typer.Argument(help="An export made by `ondeck export --format jsonl`.")
        ],
        as_json: Annotated[bool, typer.Option("--json", help="Print the counts as JSON.")] = False,
    ) -> None:
        """Import memory from a JSONL export (all or nothing; notes already there are kept)."""
        from ondeck.core.errors import InvalidInput
        from ondeck.services import exchange

        cli = cli_of(ctx)
        try:
            if not file.is_file():
                raise InvalidInput(f"{file}: not a file (give the .jsonl an export wrote)")
            if file.stat().st_size > exchange.FILE_MAX:
                raise InvalidInput(f"{file}: larger than {exchange.FILE_MAX // 2**20} MiB")
            handle = file.open(encoding="utf-8", errors="strict", newline="\n")
        except OSError as exc:
            raise InvalidInput(f"{file}: cannot be read ({exc.strerror})") from None
        try:
            with handle, cli.write() as conn:
                result = exchange.import_jsonl(
                    conn, cli.now(), handle, sides=cli.settings.sides, actor=cli.actor
                )
        except UnicodeDecodeError:
            raise InvalidInput(f"{file}: not UTF-8 text") from None
        counts = {"notes": result.notes, "sessions": result.sessions, "skipped": result.skipped}
        if as_json:
            print_json(counts)
            return
        typer.echo(
            f"imported {result.notes} note(s) and {result.sessions} session record(s); "
            f"{result.skipped} already there"
        )


def _open_new(path: Path):  # type: ignore[no-untyped-def]
    from ondeck.core.errors import InvalidInput

    try:
        return path.open("x", encoding="utf-8")
    except FileExistsError:
        raise InvalidInput(f"{path} exists: give a new file name") from None
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot be written ({exc.strerror})") from None


def _write_files(folder: Path, files: dict[Path, str]) -> None:
    from ondeck.core.errors import InvalidInput

    try:
        folder.mkdir(parents=True, exist_ok=True)
        if any(folder.iterdir()):
            raise InvalidInput(f"{folder} is not empty: give a new or empty directory")
        for relative, text in files.items():
            target = folder / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"{folder}: cannot be written ({exc.strerror})") from None
