"""`ondeck session list|show|move`: the records of agent sessions. Thin: parse, call one
service, print. Human lines and tables by default; `--json` prints what the API gives."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ondeck.entrypoints.cli.common import Cli, cli_of, print_json, print_table

if TYPE_CHECKING:
    from ondeck.services.sessions import Session, SessionDetail

app = typer.Typer(
    help="Session records: every agent session, classified with its reason.",
    no_args_is_help=True,
)

RefArg = Annotated[
    str,
    typer.Argument(
        metavar="ID", help="The session's number, or its session id (or 8+ first characters)."
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the objects as JSON.")]


def _when(cli: Cli, instant: Any) -> str:
    shown = cli.local(instant)
    return shown.replace("T", " ")[:16] if shown else ""


def _place(s: Session) -> str:
    if s.unclassified:
        return "(unclassified)"
    return "/".join(part for part in (s.side, s.project) if part) or "-"


@app.command("list")
def list_(
    ctx: typer.Context,
    status: Annotated[
        str | None,
        typer.Option("--status", help="open, ended, lost, or unclassified (the inbox)."),
    ] = None,
    side: Annotated[str | None, typer.Option("--side", help="Only this side.")] = None,
    project: Annotated[str | None, typer.Option("--project", help="Only this project.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=500, help="At most this many.")] = 50,
    as_json: JsonOpt = False,
) -> None:
    """Session records, newest first."""
    from ondeck.services import sessions

    cli = cli_of(ctx)
    with cli.read() as conn:
        found = sessions.list_sessions(conn, status=status, side=side, project=project, limit=limit)
    if as_json:
        print_json([s.summary_json(cli.settings.zone) for s in found])
        return
    if not found:
        typer.echo("no session records match")
        return
    rows = [
        [
            s.id,
            ", ".join(s.badges()),
            _place(s),
            _when(cli, s.started_at),
            _when(cli, s.last_seen_at),
            (s.last_word or "").replace("\n", " ")[:60],
        ]
        for s in found
    ]
    print_table(["#", "status", "side/project", "started", "last heard", "last word"], rows)


@app.command("show")
def show(ctx: typer.Context, ref: RefArg, as_json: JsonOpt = False) -> None:
    """Everything a session's record holds: times, classification and its reason,
    disagreements, compactions, tasks it touched, commits, files, last word."""
    from ondeck.services import sessions

    cli = cli_of(ctx)
    with cli.read() as conn:
        detail = sessions.session_detail(conn, ref)
    if as_json:
        print_json(detail.to_json(cli.settings.zone))
        return
    typer.echo("\n".join(_detail_lines(cli, detail)))


def _detail_lines(cli: Cli, detail: SessionDetail) -> list[str]:
    s = detail.session
    c = s.classification
    lines = [
        f"session {s.id}  {s.agent} {s.external_id}",
        f"status      {', '.join(s.badges())}",
        f"started     {_when(cli, s.started_at)} ({s.start_source or 'start not heard'})"
        + (f", resumed {s.resumes}x" if s.resumes else ""),
        f"last heard  {_when(cli, s.last_seen_at)}",
    ]
    if s.ended_at:
        lines.append(f"ended       {_when(cli, s.ended_at)} ({s.end_reason or 'no reason'})")
    lines.append(f"side        {s.side or '-'} (by {s.side_rule})")
    lines.append(f"project     {s.project or '-'} (by {s.project_rule})")
    lines.append(f"reason      {c.get('reason', '')}")
    if s.cwd:
        lines.append(
            f"place       {s.cwd}"
            + (f"  (git {s.git_root}, {s.branch or 'detached'})" if s.git_root else "")
        )
    if s.disagreements:
        lines.append("disagreements")
        lines += [f"  - {_disagreement(d)}" for d in s.disagreements]
    if detail.compactions:
        lines.append("compactions")
        for comp in detail.compactions:
            summary = (comp.summary or "(not captured)").replace("\n", " ")
            lines.append(f"  - {_when(cli, comp.at)} {comp.trigger or ''}: {summary[:300]}")
    if detail.tasks:
        lines.append("tasks")
        for t in detail.tasks:
            actions = ", ".join(kind.removeprefix("task.") for kind, _ in t.actions)
            lines.append(
                f"  - task {t.task_id} {t.title or '(gone)'} [{t.status or '-'}]: {actions}"
            )
    if s.commits is not None:
        lines.append(f"commits     {s.commits.get('total', 0)}")
        lines += [f"  - {sha[:10]} {subject}" for sha, subject in s.commits.get("items", [])]
    if s.files is not None:
        private = s.files.get("private", 0)
        lines.append(
            f"files       {s.files.get('total', 0)}"
            + (f" ({private} private, not listed)" if private else "")
        )
        lines += [f"  - {path}" for path in s.files.get("paths", [])]
    if s.git_note:
        lines.append(f"git         {s.git_note}")
    if s.redactions:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(s.redaction_kinds.items()))
        lines.append(f"redacted    {s.redactions} ({kinds})")
    if s.last_word:
        lines += ["last word", *(f"  {line}" for line in s.last_word.splitlines())]
    elif not s.capture:
        lines.append("capture off: only times, side and project are kept")
    return lines


def _disagreement(d: dict[str, Any]) -> str:
    if d.get("kind") == "place":
        where = d.get("cwd") or "another place"
        said = (
            "unclassified"
            if d.get("unclassified")
            else f"{d.get('side') or '-'}/{d.get('project') or '-'}"
        )
        return f"{d.get('hook')} in {where} classified as {said}"
    signals = ", ".join(
        f"{x.get('rule')} {x.get('source') or ''} says {x.get('value')}".replace("  ", " ")
        for x in d.get("signals", [])
    )
    decided = (d.get("decided") or {}).get("value")
    if d.get("same_rank"):
        return f"{d.get('field')}: undecided, {signals}"
    return f"{d.get('field')} {decided}, but {signals}"


@app.command("move")
def move(
    ctx: typer.Context,
    ref: RefArg,
    side: Annotated[str | None, typer.Option("--side", help="The side it belongs to.")] = None,
    project: Annotated[str | None, typer.Option("--project", help="Its project.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Reclassify a session by hand (the inbox's way out); recorded as `session.moved`."""
    from ondeck.services import sessions

    cli = cli_of(ctx)
    with cli.write() as conn:
        before = sessions.find_session(conn, ref)
        moved = sessions.move_session(
            conn,
            cli.now(),
            before.id,
            side=side,
            project=project,
            sides=cli.settings.sides,
            actor=cli.actor,
        )
    if as_json:
        print_json(moved.summary_json(cli.settings.zone))
        return
    typer.echo(f"session {moved.id} moved: {_place(before)} -> {_place(moved)}")
