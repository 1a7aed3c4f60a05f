"""`ondeck export` and `ondeck import`: memory (notes, decisions, handoffs) out of and into
a database. Thin: parse, call memory/exchange.py, write or print."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from ondeck.core.humanize import counted
from ondeck.core.sides import configured
from ondeck.entrypoints.cli.common import Cli, cli_of, echo, print_json, write_json_lines


class Format(StrEnum):
    jsonl = "jsonl"
    markdown = "markdown"


def register(app: typer.Typer) -> None:
    @app.command("export")
    def export(
        ctx: typer.Context,
        fmt: Annotated[Format, typer.Option("--format", help="jsonl or markdown")],
        side: Annotated[
            str | None,
            typer.Option("--side", help="Only this side (default: the current directory's)."),
        ] = None,
        all_sides: Annotated[
            bool, typer.Option("--all-sides", help="Every side, the inbox included.")
        ] = False,
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

        cli = cli_of(ctx)
        settings = cli.settings
        if side is not None and all_sides:
            raise typer.BadParameter("give either --side or --all-sides")
        if side is not None:
            configured(settings.sides, side)
        if settings.sides and side is None and not all_sides:
            side = _directory_side(cli)
        if fmt is Format.markdown and out is None:
            raise InvalidInput("--format markdown writes one file per project: give --out DIR")
        if out is not None and fmt is Format.jsonl and out.exists():
            raise InvalidInput(f"{out} exists: give a new file name")
        if fmt is Format.markdown:
            assert out is not None

            def local() -> dict[str, Any]:
                from ondeck.memory import exchange

                with cli.read() as conn:
                    return exchange.markdown_files(conn, cli, side)

            params = {"format": "markdown", "side": side}
            files = cli.fetch("GET", "/export", local, params=params)["files"]
            _write_files(out, {Path(name): text for name, text in files.items()})
            echo(f"exported {counted(len(files), 'file')} to {out}")
            return
        with _jsonl(cli, side) as lines:
            if out is None:
                for line in lines:
                    write_json_lines(line)
                return
            # Written beside, then renamed: a file under the name given is always whole.
            partial = out.with_name(out.name + ".partial")
            target = _open_new(partial)
            written = 0
            try:
                with target:
                    for line in lines:
                        target.write(line)
                        written += 1
                partial.replace(out)
            finally:
                partial.unlink(missing_ok=True)
        # Not counted: the header and the end line.
        echo(f"exported {counted(written - 2, 'record')} to {out}", err=True)

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
        from ondeck.core.validation import EXPORT_FILE_MAX as FILE_MAX

        cli = cli_of(ctx)
        try:
            if not file.is_file():
                raise InvalidInput(f"{file}: not a file (give the .jsonl an export wrote)")
            if file.stat().st_size > FILE_MAX:
                raise InvalidInput(f"{file}: larger than {FILE_MAX // 2**20} MiB")
            handle = file.open(encoding="utf-8", errors="strict", newline="\n")
        except OSError as exc:
            raise InvalidInput(f"{file}: cannot be read ({exc.strerror})") from None

        def local() -> dict[str, Any]:
            from ondeck.memory import exchange

            with cli.write() as conn:
                return exchange.import_counts(conn, cli, handle)

        try:
            with handle:
                # The server takes the lines as read here: the service numbers them alike.
                body = {"lines": list(handle)} if cli.client_mode else None
                counts = cli.fetch("POST", "/import", local, body=body)
        except UnicodeDecodeError:
            raise InvalidInput(f"{file}: not UTF-8 text") from None
        for warning in counts.get("warnings", []):
            echo(f"ondeck: warning: {warning}", err=True)
        if as_json:
            print_json(counts)
            return
        updated = counts.get("updated", 0)
        echo(
            f"imported {counted(counts['notes'], 'note')} and "
            f"{counted(counts['sessions'], 'session record')}; "
            f"{counts['skipped']} already there"
            + (f"; {updated} brought to the export's newer state" if updated else "")
        )
        for line in _what_changed(counts):
            echo(line)


# One line per kind of change an import made to notes already here (and the notes it
# kept), in the order memory/exchange_import.py CHANGES lists them.
_CHANGE_LINES = {
    "wrong": "marked wrong as in the export",
    "superseded": "superseded as in the export",
    "expired": "expired as in the export",
    "updated": "brought to the export's text, pin, place or links",
    "kept": "kept as they are here (their state here is the later)",
}
_IDS_SHOWN = 20


def _what_changed(counts: dict[str, Any]) -> list[str]:
    """`marked wrong as in the export: 2 notes (4, 9)`: what the import did to the notes
    it already had, by kind, naming them by their ids here."""
    lines = []
    found = {**counts.get("changed", {}), "kept": counts.get("kept", [])}
    for kind, words in _CHANGE_LINES.items():
        ids = found.get(kind) or []
        if ids:
            shown = ", ".join(map(str, ids[:_IDS_SHOWN]))
            more = f" and {len(ids) - _IDS_SHOWN} more" if len(ids) > _IDS_SHOWN else ""
            lines.append(f"{words}: {counted(len(ids), 'note')} ({shown}{more})")
    return lines


def _directory_side(cli: Cli) -> str:
    """The side this directory belongs to (by this machine's rules): what an export from
    here holds, unless a side or every side is asked for by name."""
    from ondeck.core.errors import InvalidInput
    from ondeck.entrypoints.place import here

    found = here(cli.settings)
    if found.unclassified or not found.side:
        raise InvalidInput(
            f"this directory belongs to no side ({found.reason}): give --side "
            f"({', '.join(sorted(cli.settings.sides))}) or --all-sides"
        )
    return str(found.side)


@contextmanager
def _jsonl(cli: Cli, side: str | None) -> Iterator[Iterable[str]]:
    """The JSONL export's lines: read in one transaction here, or the server's answer."""
    if cli.client_mode:
        text = cli.remote.text("GET", "/export", params={"format": "jsonl", "side": side})
        # At "\n" only: splitlines() also breaks at U+2028, U+0085 and others, which JSON
        # leaves as they are inside a note's text.
        *whole, rest = text.split("\n")
        yield [line + "\n" for line in whole] + ([rest] if rest else [])
        return
    from ondeck.memory import exchange

    with cli.read() as conn:
        yield exchange.export_jsonl(conn, cli.now(), side=side)


def _open_new(path: Path):  # type: ignore[no-untyped-def]
    import os

    from ondeck.core.errors import InvalidInput
    from ondeck.host import private

    try:
        fd = private.open_file(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        return os.fdopen(fd, "w", encoding="utf-8", newline="\n")
    except FileExistsError:
        raise InvalidInput(f"{path} exists: give a new file name") from None
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot be written ({exc.strerror})") from None


def _write_files(folder: Path, files: dict[Path, str]) -> None:
    from ondeck.core.errors import InvalidInput
    from ondeck.host import private

    try:
        private.make_dirs(folder)
        if any(folder.iterdir()):
            raise InvalidInput(f"{folder} is not empty: give a new or empty directory")
        for relative, text in files.items():
            target = folder / relative
            private.make_dirs(target.parent)
            private.write_new_text(target, text)
    except OSError as exc:
        raise InvalidInput(f"{folder}: cannot be written ({exc.strerror})") from None
