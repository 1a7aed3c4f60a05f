"""`ondeck note …` and `ondeck handoff`: memory a session can trust. Thin: parse, call one
service (services/notes.py), print.

Every command reads and writes one side: `--side`, else the side of the current directory
(the rules the session hooks use), or `--unclassified` for the inbox; without configured
sides there is one pool. `--json` prints the same objects as the HTTP API.
"""

from __future__ import annotations

import sys
from datetime import date, datetime
from typing import Annotated, Any

import typer

from ondeck.core.memory import Note, Scope
from ondeck.entrypoints.cli.common import Cli, cli_of, print_json, print_table

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


def _expires(text: str | None) -> Any:
    from ondeck.services.notes import UNSET

    if text is None:
        return UNSET
    if text.strip().lower() in ("none", "never", ""):
        return None
    return _day(text, "--expires date")


def _kinds(text: str | None) -> list[Any]:
    from ondeck.services.notes import check_kind

    if not text:
        return []
    return [check_kind(part, handoff_ok=True) for part in text.split(",") if part.strip()]


def _session_id(cli: Cli, ref: str | None) -> int | None:
    if ref is None:
        return None
    from ondeck.services.sessions import find_session

    with cli.read() as conn:
        return find_session(conn, ref).id


def _age(now: datetime, instant: datetime) -> str:
    from ondeck.core.humanize import span

    return f"{span(now - instant)} ago"


def _one_line(text: str, limit: int = PREVIEW) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _show(cli: Cli, note: Note, as_json: bool, line: str) -> None:
    if as_json:
        print_json(note.to_json(cli.settings.zone, cli.today()))
    else:
        typer.echo(line)


def _label(note: Note, day: date) -> str:
    status = note.shown_status(day).value
    bits = [note.kind.value]
    if status != "active":
        bits.append(status.upper())
    if note.pinned:
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
    from ondeck.core.errors import InvalidInput
    from ondeck.entrypoints.place import here
    from ondeck.services import notes

    cli = cli_of(ctx)
    settings = cli.settings
    if whole_side and project:
        raise typer.BadParameter("give either --project or --whole-side")
    session_id = _session_id(cli, session)
    if session_id is not None and (side or whole_side):
        raise typer.BadParameter("a session's note lives where the session does: no --side")
    place_side, place_project = side, project
    if session_id is None:
        sides_asked = bool(settings.sides) and not side
        found = here(settings) if sides_asked or (project is None and not whole_side) else None
        if sides_asked:
            assert found is not None
            if found.unclassified or not found.side:
                raise InvalidInput(
                    f"this directory belongs to no side ({found.reason}): give --side "
                    f"({', '.join(sorted(settings.sides))})"
                )
            place_side = found.side
        # The directory's project, if the note goes to the directory's side.
        same_side = found is not None and (not settings.sides or place_side == found.side)
        if found is not None and same_side and project is None and not whole_side:
            place_project = found.project
    with cli.write() as conn:
        note = notes.add_note(
            conn,
            cli.now(),
            text=text,
            kind=kind,
            side=place_side,
            project=place_project,
            sides=settings.sides,
            zone=settings.zone,
            pinned=pin,
            expires_on=_day(expires, "--expires date"),
            session_id=session_id,
            actor=cli.actor,
        )
    where = f"project {note.project}" if note.project else "no project"
    if note.side:
        where = f"side {note.side}, " + (where if note.project else "the whole side")
    _show(cli, note, as_json, f"added {note.kind.value} {note.id} ({where})")


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
    from ondeck.services import notes

    cli = cli_of(ctx)
    scope = _scope(cli, side, project, unclassified)
    day = cli.today()
    with cli.read() as conn:
        found = notes.list_notes(
            conn,
            scope,
            day,
            kinds=_kinds(kind),
            include_all=show_all,
            pinned=True if pinned else None,
            limit=limit,
        )
    if as_json:
        print_json([n.to_json(cli.settings.zone, day) for n in found])
        return
    if not found:
        typer.echo(f"no notes in {scope.describe()}" + ("" if show_all else " (--all: any status)"))
        return
    now = cli.now()
    print_table(
        ["id", "what", "project", "age", "origin", "text"],
        [
            [
                n.id,
                _label(n, day),
                n.project or "(side-wide)",
                _age(now, n.updated_at),
                n.origin,
                _one_line(n.text),
            ]
            for n in found
        ],
        title=f"notes: {scope.describe()}",
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
    from ondeck.services import notes

    cli = cli_of(ctx)
    scope = _scope(cli, side, None, unclassified)
    zone, day, now = cli.settings.zone, cli.today(), cli.now()
    with cli.read() as conn:
        note = notes.get_note(conn, note_id, scope)
        events = notes.history(conn, note.id)
    if as_json:
        print_json({**note.to_json(zone, day), "history": [e.to_json(zone) for e in events]})
        return
    status = note.shown_status(day).value
    typer.echo(f"note {note.id}: {_label(note, day)}")
    typer.echo(f"  side {note.side or '-'}, project {note.project or '(side-wide)'}")
    typer.echo(
        f"  origin {note.origin}" + (f", session {note.session_id}" if note.session_id else "")
    )
    typer.echo(f"  written {cli.local(note.created_at)} ({_age(now, note.created_at)})")
    if note.updated_at != note.created_at:
        typer.echo(f"  changed {cli.local(note.updated_at)} ({_age(now, note.updated_at)})")
    if status != "active":
        reason = f": {note.status_reason}" if note.status_reason else ""
        by = f" by note {note.superseded_by}" if note.superseded_by else ""
        typer.echo(f"  {status.upper()}{by}{reason}: not true any more")
    if note.supersedes:
        typer.echo(f"  replaces note {note.supersedes}")
    if note.expires_on:
        typer.echo(f"  expires after {note.expires_on.isoformat()}")
    if note.head:
        typer.echo(f"  written at {note.branch or 'detached HEAD'} {note.head[:12]}")
    if note.redactions:
        typer.echo(f"  {note.redactions} secret(s) or private span(s) taken out before storing")
    typer.echo("")
    typer.echo(note.text)
    typer.echo("")
    for event in events:
        typer.echo(f"  {cli.local(event.at)}  {event.kind}  by {event.actor}")


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
    from ondeck.services import notes

    cli = cli_of(ctx)
    if whole_side and project:
        raise typer.BadParameter("give either --project or --whole-side")
    scope = _scope(cli, side, None, unclassified)
    new_project: Any = notes.UNSET
    if project is not None:
        new_project = project
    elif whole_side:
        new_project = None
    with cli.write() as conn:
        note = notes.edit_note(
            conn,
            cli.now(),
            note_id,
            scope=scope,
            text=text,
            kind=kind,
            project=new_project,
            side=to_side if to_side is not None else notes.UNSET,
            sides=cli.settings.sides,
            expires_on=_expires(expires),
            zone=cli.settings.zone,
            actor=cli.actor,
        )
    _show(cli, note, as_json, f"changed note {note.id}")


def _pin(
    ctx: typer.Context, note_id: str, pinned: bool, side: str | None, inbox: bool, as_json: bool
) -> None:
    from ondeck.services import notes

    cli = cli_of(ctx)
    scope = _scope(cli, side, None, inbox)
    with cli.write() as conn:
        note = notes.set_pinned(conn, cli.now(), note_id, pinned, scope=scope, actor=cli.actor)
    _show(cli, note, as_json, f"{'pinned' if pinned else 'unpinned'} note {note.id}")


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
    from ondeck.core.memory import agent_origin
    from ondeck.services import notes

    cli = cli_of(ctx)
    scope = _scope(cli, side, None, unclassified)
    session_id = _session_id(cli, session)
    origin = "person"
    if session_id is not None:
        from ondeck.services.sessions import find_session

        with cli.read() as conn:
            origin = agent_origin(find_session(conn, session_id).external_id)
    with cli.write() as conn:
        old, new = notes.supersede(
            conn,
            cli.now(),
            note_id,
            text,
            scope=scope,
            zone=cli.settings.zone,
            origin=origin,
            session_id=session_id,
            actor=cli.actor,
        )
    if as_json:
        zone, day = cli.settings.zone, cli.today()
        print_json({"superseded": old.to_json(zone, day), "note": new.to_json(zone, day)})
    else:
        typer.echo(f"note {new.id} replaces note {old.id} (kept as superseded)")


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
    from ondeck.services import notes

    cli = cli_of(ctx)
    scope = _scope(cli, side, None, unclassified)
    with cli.write() as conn:
        note = notes.mark_wrong(
            conn, cli.now(), note_id, reason or "", scope=scope, actor=cli.actor
        )
    _show(cli, note, as_json, f"note {note.id} marked wrong: {note.status_reason}")


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
    from ondeck.services import notes

    cli = cli_of(ctx)
    scope = _scope(cli, side, None, unclassified)
    if not yes:
        with cli.read() as conn:
            note = notes.get_note(conn, note_id, scope)
        if not sys.stdin.isatty():
            raise InvalidInput(
                f"delete note {note.id} ({_one_line(note.text, 40)}): run again with --yes"
            )
        typer.confirm(f"delete note {note.id} ({_one_line(note.text, 60)})?", abort=True)
    with cli.write() as conn:
        gone = notes.delete_note(conn, cli.now(), note_id, scope=scope, actor=cli.actor)
    _show(cli, gone, as_json, f"deleted note {gone.id} (its history stays in the events)")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="note")

    @root.command("handoff")
    def handoff(
        ctx: typer.Context,
        text: Annotated[str, typer.Argument(help="Your words for the next session.")],
        session: Annotated[str, typer.Option("--session", help="Your session: its id or number.")],
        as_json: JsonOpt = False,
    ) -> None:
        """Write (or write again) this session's handoff for the next session of its project."""
        from ondeck.entrypoints.place import here
        from ondeck.services import notes
        from ondeck.services.sessions import find_session

        cli = cli_of(ctx)
        found = here(cli.settings)
        with cli.write() as conn:
            session_id = find_session(conn, session).id
            note, replaced = notes.write_handoff(
                conn,
                cli.now(),
                session_id,
                text,
                git_root=found.git_root,
                branch=found.branch,
                head=found.head,
                actor=cli.actor,
            )
        verb = "replaced" if replaced else "wrote"
        _show(cli, note, as_json, f"{verb} the handoff of session {session_id} (note {note.id})")
