"""`ondeck note …` and `ondeck handoff`: memory a session can trust. Thin: parse, call one
service (memory/notes_calls.py), print.

Every command reads and writes one side: `--side`, else the side of the current directory
(the rules the session hooks use), or `--unclassified` for the inbox; without configured
sides there is one pool. `--json` prints the same objects as the HTTP API.
"""

from __future__ import annotations

import sys
from datetime import date, datetime
from typing import Annotated, Any

import typer

from ondeck.core.humanize import counted
from ondeck.core.memory import NoteKind, Scope, check_kind, check_note_id
from ondeck.entrypoints.cli.common import (
    Cli,
    cli_of,
    echo,
    parse_instant,
    print_json,
    print_table,
)

app = typer.Typer(help="Notes, decisions and handoffs: what a session should know.")

IdArg = Annotated[str, typer.Argument(metavar="ID", help="The note's id.", show_default=False)]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the objects as JSON.")]
SideOpt = Annotated[
    str | None,
    typer.Option("--side", help="The side (default: the current directory's side)."),
]
InboxOpt = Annotated[
    bool,
    typer.Option("--unclassified", help="The inbox: notes of unclassified sessions."),
]
ProjectOpt = Annotated[str | None, typer.Option("--project", help="Project name.")]
PREVIEW = 80


def _scope(cli: Cli, side: str | None, project: str | None = None, inbox: bool = False) -> Scope:
    from ondeck.entrypoints.place import scope_for

    return scope_for(cli.settings, side=side, project=project, inbox=inbox)


def _day(text: str | None, name: str) -> date | None:
    from ondeck.core.validation import parse_date

    return None if text is None else parse_date(text, name)


_KEEP: Any = object()  # --expires not given: the date stays


def _expires(text: str | None) -> Any:
    if text is None:
        return _KEEP
    if text.strip().lower() in ("none", "never", ""):
        return None
    return _day(text, "--expires date")


def _kinds(text: str | None) -> list[NoteKind]:
    if not text:
        return []
    return [check_kind(part, handoff_ok=True) for part in text.split(",") if part.strip()]


def _age(now: datetime, instant: str) -> str:
    from ondeck.core.humanize import span

    return f"{span(now - parse_instant(instant))} ago"


def _local(instant: str) -> str:
    return parse_instant(instant).isoformat(timespec="seconds")


def _one_line(text: str, limit: int = PREVIEW) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _where(scope: Scope) -> dict[str, Any]:
    """The scope as the API's parameters."""
    return {"side": scope.side, "unclassified": scope.inbox}


def print_note(note: dict[str, Any], as_json: bool, line: str) -> None:
    if as_json:
        print_json(note)
    else:
        echo(line)


def _label(note: dict[str, Any]) -> str:
    status = note["status"]
    bits = [note["kind"]]
    if status != "active":
        bits.append(status.upper())
    if note["pinned"]:
        bits.append("pinned")
    return ", ".join(bits)


@app.command("add")
def add(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(help="The note (at most 8,000 characters).")],
    kind: Annotated[str, typer.Option("--kind", help="note or decision.")] = "note",
    project: ProjectOpt = None,
    whole_side: Annotated[
        bool, typer.Option("--whole-side", help="For the whole side, not one project.")
    ] = False,
    side: SideOpt = None,
    pin: Annotated[bool, typer.Option("--pin", help="Shown in every brief of its scope.")] = False,
    expires: Annotated[
        str | None, typer.Option("--expires", help="Expired after this date, YYYY-MM-DD.")
    ] = None,
    session: Annotated[
        str | None,
        typer.Option("--session", help="Written by this session (its side, its project)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Add a note (default: to the current directory's side and project)."""
    cli = cli_of(ctx)
    settings = cli.settings
    if whole_side and project:
        raise typer.BadParameter("give either --project or --whole-side")
    if session is not None and (side or whole_side):
        raise typer.BadParameter("a session's note lives where the session does: no --side")
    place_side, place_project = side, project
    if session is None:
        from ondeck.entrypoints.place import here
        from ondeck.memory.notes_calls import new_note_place

        # This machine's directory, by this machine's rules (a server never reads it).
        place_side, place_project = new_note_place(
            settings.sides,
            side=side,
            project=project,
            whole_side=whole_side,
            here=lambda: here(settings),
        )
    expires_on = _day(expires, "--expires date")

    def local() -> dict[str, Any]:
        from ondeck.memory import notes_calls

        with cli.write() as conn:
            return notes_calls.add_note(
                conn,
                cli,
                text=text,
                kind=kind,
                side=place_side,
                project=place_project,
                pinned=pin,
                expires_on=expires_on,
                session=session,
            )

    body = {
        "text": text,
        "kind": kind,
        "side": place_side,
        "project": place_project,
        "pinned": pin,
        "expires_on": expires_on.isoformat() if expires_on else None,
        "session": session,
    }
    note = cli.fetch("POST", "/notes", local, body=body)
    where = f"project {note['project']}" if note["project"] else "no project"
    if note["side"]:
        where = f"side {note['side']}, " + (where if note["project"] else "the whole side")
    print_note(note, as_json, f"added {note['kind']} {note['id']} ({where})")


@app.command("list")
def list_(
    ctx: typer.Context,
    project: Annotated[
        str | None, typer.Option("--project", help="This project's notes and side-wide ones.")
    ] = None,
    side: SideOpt = None,
    unclassified: InboxOpt = False,
    kind: Annotated[
        str | None, typer.Option("--kind", help="note, decision, handoff; comma-separated.")
    ] = None,
    show_all: Annotated[
        bool, typer.Option("--all", help="Also superseded, wrong and expired notes.")
    ] = False,
    pinned: Annotated[bool, typer.Option("--pinned", help="Only pinned notes.")] = False,
    limit: Annotated[int, typer.Option("--limit", min=1, max=500)] = 50,
    as_json: JsonOpt = False,
) -> None:
    """Notes newest first; by default only those that are true today."""
    cli = cli_of(ctx)
    scope = _scope(cli, side, project, unclassified)
    kinds = _kinds(kind)

    def local() -> dict[str, Any]:
        from ondeck.memory import notes_calls

        with cli.read() as conn:
            return notes_calls.list_notes(
                conn,
                cli,
                scope,
                kinds=kinds,
                include_all=show_all,
                pinned=True if pinned else None,
                limit=limit,
            )

    params = {
        **_where(scope),
        "project": scope.project,
        "kind": [k.value for k in kinds] or None,
        "all": show_all,
        "pinned": True if pinned else None,
        "limit": limit,
    }
    found = cli.fetch("GET", "/notes", local, params=params)["notes"]
    if as_json:
        print_json(found)
        return
    if not found:
        echo(f"no notes in {scope.describe()}" + ("" if show_all else " (--all: any status)"))
        return
    now = cli.now()
    print_table(
        ["id", "what", "project", "age", "origin", "text"],
        [
            [
                n["id"],
                _label(n),
                n["project"] or "(side-wide)",
                _age(now, n["updated_at"]),
                n["origin"],
                _one_line(n["text"]),
            ]
            for n in found
        ],
        title=f"notes: {scope.describe()}",
        cut=("text",),
    )


@app.command("show")
def show(
    ctx: typer.Context,
    note_id: IdArg,
    side: SideOpt = None,
    unclassified: InboxOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """One note in full, with its history."""
    cli = cli_of(ctx)
    scope = _scope(cli, side, None, unclassified)

    def local() -> dict[str, Any]:
        from ondeck.memory import notes_calls

        with cli.read() as conn:
            return notes_calls.show_note(conn, cli, note_id, scope, history=True)

    note = cli.fetch("GET", f"/notes/{check_note_id(note_id)}/history", local, params=_where(scope))
    if as_json:
        print_json(note)
        return
    now = cli.now()
    status = note["status"]
    echo(f"note {note['id']}: {_label(note)}")
    echo(f"  side {note['side'] or '-'}, project {note['project'] or '(side-wide)'}")
    echo(
        f"  origin {note['origin']}"
        + (f", session {note['session_id']}" if note["session_id"] else "")
    )
    echo(f"  written {_local(note['created_at'])} ({_age(now, note['created_at'])})")
    if note["updated_at"] != note["created_at"]:
        echo(f"  changed {_local(note['updated_at'])} ({_age(now, note['updated_at'])})")
    if status != "active":
        reason = f": {note['status_reason']}" if note["status_reason"] else ""
        by = f" by note {note['superseded_by']}" if note["superseded_by"] else ""
        echo(f"  {status.upper()}{by}{reason}: not true any more")
    if note["supersedes"]:
        echo(f"  replaces note {note['supersedes']}")
    if note["expires_on"]:
        echo(f"  expires after {note['expires_on']}")
    if note["head"]:
        echo(f"  written at {note['branch'] or 'detached HEAD'} {note['head'][:12]}")
    if note["redactions"]:
        found = counted(note["redactions"], "secret or private span", "secrets or private spans")
        echo(f"  {found} taken out before storing")
    echo("")
    echo(note["text"])
    echo("")
    for event in note["history"]:
        echo(f"  {_local(event['at'])}  {event['kind']}  by {event['actor']}")


@app.command("edit")
def edit(
    ctx: typer.Context,
    note_id: IdArg,
    text: Annotated[str | None, typer.Option("--text", help="The new text.")] = None,
    kind: Annotated[str | None, typer.Option("--kind", help="note or decision.")] = None,
    project: ProjectOpt = None,
    whole_side: Annotated[
        bool, typer.Option("--whole-side", help="Make it side-wide (no project).")
    ] = False,
    to_side: Annotated[str | None, typer.Option("--to-side", help="Move it to this side.")] = None,
    expires: Annotated[
        str | None, typer.Option("--expires", help="YYYY-MM-DD, or 'none' to clear.")
    ] = None,
    side: SideOpt = None,
    unclassified: InboxOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Change an active note; its history keeps what was replaced."""
    cli = cli_of(ctx)
    if whole_side and project:
        raise typer.BadParameter("give either --project or --whole-side")
    scope = _scope(cli, side, None, unclassified)
    expires_on = _expires(expires)

    day = expires_on if isinstance(expires_on, date) else None

    def local() -> dict[str, Any]:
        from ondeck.memory import notes_calls

        with cli.write() as conn:
            return notes_calls.edit_note(
                conn,
                cli,
                note_id,
                scope=scope,
                text=text,
                kind=kind,
                project=project,
                whole_side=whole_side,
                to_side=to_side,
                expires_on=day,
                clear_expiry=expires_on is None,
            )

    body = {
        "text": text,
        "kind": kind,
        "project": project,
        "whole_side": whole_side,
        "to_side": to_side,
        "expires_on": day.isoformat() if day else None,
        "clear_expiry": expires_on is None,
    }
    note = cli.fetch(
        "PATCH", f"/notes/{check_note_id(note_id)}", local, params=_where(scope), body=body
    )
    print_note(note, as_json, f"changed note {note['id']}")


def _change(
    ctx: typer.Context,
    note_id: str,
    side: str | None,
    inbox: bool,
    action: str,
    local: Any,
    body: Any = None,
) -> dict[str, Any]:
    """POST /notes/{id}/{action} in the note's scope; `local(cli, conn, scope)` is the
    service call the route makes."""
    cli = cli_of(ctx)
    scope = _scope(cli, side, None, inbox)

    def made() -> dict[str, Any]:
        with cli.write() as conn:
            found: dict[str, Any] = local(cli, conn, scope)
        return found

    path = f"/notes/{check_note_id(note_id)}/{action}"
    result: dict[str, Any] = cli.fetch("POST", path, made, params=_where(scope), body=body)
    return result


def _pin(
    ctx: typer.Context, note_id: str, pinned: bool, side: str | None, inbox: bool, as_json: bool
) -> None:

    def local(cli: Cli, conn: Any, scope: Scope) -> dict[str, Any]:
        from ondeck.memory import notes_calls

        return notes_calls.pin_note(conn, cli, note_id, pinned, scope=scope)

    action = "pin" if pinned else "unpin"
    note = _change(ctx, note_id, side, inbox, action, local)
    print_note(note, as_json, f"{action}ned note {note['id']}")


@app.command("pin")
def pin(
    ctx: typer.Context,
    note_id: IdArg,
    side: SideOpt = None,
    unclassified: InboxOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Pin a note: every brief of its project (or side, if side-wide) shows it."""
    _pin(ctx, note_id, True, side, unclassified, as_json)


@app.command("unpin")
def unpin(
    ctx: typer.Context,
    note_id: IdArg,
    side: SideOpt = None,
    unclassified: InboxOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Unpin a note."""
    _pin(ctx, note_id, False, side, unclassified, as_json)


@app.command("supersede")
def supersede(
    ctx: typer.Context,
    note_id: IdArg,
    text: Annotated[str, typer.Argument(help="The note that replaces it.")],
    session: Annotated[
        str | None, typer.Option("--session", help="Written by this session.")
    ] = None,
    side: SideOpt = None,
    unclassified: InboxOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Replace a note with a new one; the old one is kept as superseded, linked to it."""

    def local(cli: Cli, conn: Any, scope: Scope) -> dict[str, Any]:
        from ondeck.memory import notes_calls

        return notes_calls.supersede_note(conn, cli, note_id, text, scope=scope, session=session)

    body = {"text": text, "session": session}
    result = _change(ctx, note_id, side, unclassified, "supersede", local, body)
    if as_json:
        print_json(result)
    else:
        old, new = result["superseded"], result["note"]
        echo(f"note {new['id']} replaces note {old['id']} (kept as superseded)")


@app.command("wrong")
def wrong(
    ctx: typer.Context,
    note_id: IdArg,
    reason: Annotated[str | None, typer.Option("--reason", help="What is wrong with it.")] = None,
    side: SideOpt = None,
    unclassified: InboxOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Mark a note wrong: kept with the reason, never shown as true again."""

    def local(cli: Cli, conn: Any, scope: Scope) -> dict[str, Any]:
        from ondeck.memory import notes_calls

        return notes_calls.mark_wrong(conn, cli, note_id, reason or "", scope=scope)

    body = {"reason": reason or ""}
    note = _change(ctx, note_id, side, unclassified, "wrong", local, body)
    print_note(note, as_json, f"note {note['id']} marked wrong: {note['status_reason']}")


@app.command("delete")
def delete(
    ctx: typer.Context,
    note_id: IdArg,
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask.")] = False,
    side: SideOpt = None,
    unclassified: InboxOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Delete a note (asks first). Its events stay; marking it wrong keeps it visible."""
    from ondeck.core.errors import InvalidInput

    cli = cli_of(ctx)
    scope = _scope(cli, side, None, unclassified)
    path = f"/notes/{check_note_id(note_id)}"
    if not yes:

        def found() -> dict[str, Any]:
            from ondeck.memory import notes_calls

            with cli.read() as conn:
                return notes_calls.show_note(conn, cli, note_id, scope)

        note = cli.fetch("GET", path, found, params=_where(scope))
        if not sys.stdin.isatty():
            raise InvalidInput(
                f"delete note {note['id']} ({_one_line(note['text'], 40)}): run again with --yes"
            )
        typer.confirm(f"delete note {note['id']} ({_one_line(note['text'], 60)})?", abort=True)

    def local() -> dict[str, Any]:
        from ondeck.memory import notes_calls

        with cli.write() as conn:
            return notes_calls.delete_note(conn, cli, note_id, scope=scope)

    gone = cli.fetch("DELETE", path, local, params=_where(scope))
    print_note(gone, as_json, f"deleted note {gone['id']} (its history stays in the events)")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="note")
