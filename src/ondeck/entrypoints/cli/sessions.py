"""`ondeck session list|show|move|import`: the records of agent sessions. Thin: parse, call one
service, print. Human lines and tables by default; `--json` prints what the API gives."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ondeck.entrypoints.cli.common import Cli, cli_of, echo, print_json, print_table, segment

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


def _when(instant: str | None) -> str:
    """An instant of the JSON (ISO-8601 in the zone) as `YYYY-MM-DD HH:MM`."""
    return instant.replace("T", " ")[:16] if instant else ""


def _place(s: dict[str, Any]) -> str:
    if s["unclassified"]:
        return "(unclassified)"
    return "/".join(part for part in (s["side"], s["project"]) if part) or "-"


def _badges(s: dict[str, Any]) -> str:
    """Status, then inbox and capture: as the service gave them (Session.badges)."""
    return ", ".join(s["badges"])


@app.command("list")
def list_(
    ctx: typer.Context,
    status: Annotated[
        str | None,
        typer.Option(
            "--status",
            help="open, ended, lost, unclassified (the inbox), or imported (session import).",
        ),
    ] = None,
    side: Annotated[str | None, typer.Option("--side", help="Only this side.")] = None,
    project: Annotated[str | None, typer.Option("--project", help="Only this project.")] = None,
    agent: Annotated[
        str | None,
        typer.Option("--agent", help="Only this agent's: claude-code, codex or gemini-cli."),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=500, help="At most this many.")] = 50,
    as_json: JsonOpt = False,
) -> None:
    """Session records, newest first."""
    cli = cli_of(ctx)

    def local() -> list[dict[str, Any]]:
        from ondeck.sessions import session_calls

        with cli.read() as conn:
            return session_calls.list_sessions(
                conn, cli, status=status, side=side, project=project, agent=agent, limit=limit
            )

    params = {"status": status, "side": side, "project": project, "agent": agent, "limit": limit}
    found = cli.fetch("GET", "/sessions", local, params=params)
    if as_json:
        print_json(found)
        return
    if not found:
        echo("no session records match")
        return
    rows = [
        [
            s["id"],
            _badges(s),
            _place(s),
            _when(s["started_at"]),
            _when(s["last_seen_at"]),
            (s["last_word_preview"] or "").replace("\n", " ")[:60],
        ]
        for s in found
    ]
    print_table(
        ["#", "status", "side/project", "started", "last heard", "last word"],
        rows,
        cut=("last word",),
    )


def _detail(cli: Cli, ref: str) -> dict[str, Any]:
    def local() -> dict[str, Any]:
        from ondeck.sessions import session_calls

        with cli.read() as conn:
            return session_calls.get_session(conn, cli, ref)

    found: dict[str, Any] = cli.fetch("GET", f"/sessions/{segment(ref)}", local)
    return found


@app.command("show")
def show(ctx: typer.Context, ref: RefArg, as_json: JsonOpt = False) -> None:
    """Everything a session's record holds: times, classification and its reason,
    disagreements, compactions, tasks it touched, commits, files, last word."""
    detail = _detail(cli_of(ctx), ref)
    if as_json:
        print_json(detail)
        return
    echo("\n".join(_detail_lines(detail)))


def _detail_lines(s: dict[str, Any]) -> list[str]:
    c = s["classification"]
    lines = [
        f"session {s['id']}  {s['agent']} {s['external_id']}",
        f"status      {_badges(s)}",
        f"started     {_when(s['started_at'])} ({s['start_source'] or 'start not heard'})"
        + (f", resumed {s['resumes']}x" if s["resumes"] else ""),
        f"last heard  {_when(s['last_seen_at'])}",
    ]
    if s["ended_at"]:
        lines.append(f"ended       {_when(s['ended_at'])} ({s['end_reason'] or 'no reason'})")
    lines.append(f"side        {s['side'] or '-'} (by {s['side_rule']})")
    lines.append(f"project     {s['project'] or '-'} (by {s['project_rule']})")
    lines.append(f"reason      {c.get('reason', '')}")
    if s["cwd"]:
        lines.append(
            f"place       {s['cwd']}"
            + (f"  (git {s['git_root']}, {s['branch'] or 'detached'})" if s["git_root"] else "")
        )
    if s["imported"]:
        lines.append(
            f"imported    from {s['imported_from'] or '(its file: not kept, capture off)'}"
        )
    if s["agent_version"]:
        lines.append(f"version     {s['agent']} {s['agent_version']}")
    if s["disagreements"]:
        lines.append("disagreements")
        lines += [f"  - {_disagreement(d)}" for d in s["disagreements"]]
    if s["compaction_summaries"]:
        lines.append("compactions")
        for comp in s["compaction_summaries"]:
            summary = (comp["summary"] or "(not captured)").replace("\n", " ")
            lines.append(f"  - {_when(comp['at'])} {comp['trigger'] or ''}: {summary[:300]}")
    if s["tasks"]:
        lines.append("tasks")
        for t in s["tasks"]:
            actions = ", ".join(a["kind"].removeprefix("task.") for a in t["actions"])
            lines.append(
                f"  - task {t['task_id']} {t['title'] or '(gone)'} [{t['status'] or '-'}]: "
                f"{actions}"
            )
    commits, files = s["commits"], s["files"]
    if commits is not None:
        lines.append(f"commits     {commits.get('total', 0)}")
        lines += [f"  - {sha[:10]} {subject}" for sha, subject in commits.get("items", [])]
    if files is not None:
        private = files.get("private", 0)
        lines.append(
            f"files       {files.get('total', 0)}"
            + (f" ({private} private, not listed)" if private else "")
        )
        lines += [f"  - {path}" for path in files.get("paths", [])]
    if s["git_note"]:
        lines.append(f"git         {s['git_note']}")
    if s["redactions"]:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(s["redaction_kinds"].items()))
        lines.append(f"redacted    {s['redactions']} ({kinds})")
    if s["last_word"]:
        lines += ["last word", *(f"  {line}" for line in s["last_word"].splitlines())]
    elif not s["capture"]:
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
    cli = cli_of(ctx)

    def local() -> dict[str, Any]:
        from ondeck.sessions import session_calls

        with cli.write() as conn:
            before = session_calls.get_session(conn, cli, ref)
            moved = session_calls.move_session(conn, cli, before["id"], side=side, project=project)
        return {"before": before, "moved": moved}

    def remote() -> dict[str, Any]:
        # Where it was, for the line a person reads: the record as the server has it now.
        before = _detail(cli, ref)
        path = f"/sessions/{before['id']}/move"
        moved = cli.remote.json("POST", path, body={"side": side, "project": project})
        return {"before": before, "moved": moved}

    done = remote() if cli.client_mode else local()
    moved = done["moved"]
    if as_json:
        print_json(moved)
        return
    echo(f"session {moved['id']} moved: {_place(done['before'])} -> {_place(moved)}")


@app.command("import")
def import_(
    ctx: typer.Context,
    agent: Annotated[str, typer.Argument(metavar="AGENT", help="claude-code or codex.")],
    since: Annotated[
        str | None,
        typer.Option("--since", metavar="DATE", help="Only sessions active on or after it."),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Read and count; store nothing.")
    ] = False,
    folder: Annotated[
        str | None,
        typer.Option(
            "--dir",
            metavar="DIR",
            help="The transcripts' folder (default ~/.claude/projects or ~/.codex/sessions).",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Make a record of each past session the agent's transcripts on this machine tell of:
    classified, scrubbed, marked imported. Twice changes nothing; a session hooks already
    recorded only takes what it lacks. On a client machine, the records go to its server."""
    import os

    from ondeck.core.errors import InvalidInput
    from ondeck.core.humanize import counted
    from ondeck.core.validation import parse_date
    from ondeck.host.quick_settings_read import hook_config_of
    from ondeck.sessions.session_import import AGENTS, default_folder, import_sessions

    cli = cli_of(ctx)
    if agent not in AGENTS:
        raise InvalidInput(f"agent {agent[:40]!r} is not one of {', '.join(AGENTS)}")
    day = parse_date(since, "--since") if since is not None else None
    if folder is not None and not os.path.isdir(folder):
        raise InvalidInput(f"--dir {folder[:200]!r} is not a folder")
    send = None
    config = hook_config_of(cli.settings)
    if cli.client_mode:
        # This machine's transcripts, read and classified here by its own rules (as its
        # hooks classify its sessions); stored by the server through the hooks' intake, in
        # the database this machine's hooks capture for (a server serving another refuses:
        # a session is never split between two stores).
        store = config.server_store_id

        def send(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
            body = {"records": records}
            answer = cli.remote.json("POST", "/sessions/records", body=body, store=store)
            return list(answer["results"])

    report = import_sessions(
        None if cli.client_mode else cli.engine,
        cli.now(),
        agent=agent,
        folder=folder or default_folder(agent),
        config=config,
        zone=cli.settings.zone,
        since=day,
        dry_run=dry_run,
        send=send,
    )
    _print_import(report.to_json(), as_json=as_json)
    if report.read_nothing:
        raise InvalidInput(f"nothing could be read: {counted(len(report.refused), 'file')} refused")


def _print_import(found: dict[str, Any], *, as_json: bool) -> None:
    """The counts of an import (session_import.ImportReport.to_json), here or a server's."""
    from ondeck.core.humanize import counted

    if as_json:
        print_json(found)
        return
    verb = "would record" if found["dry_run"] else "recorded"
    echo(
        f"{found['agent']} sessions in {found['folder']}: {verb} {found['sessions']}, completed "
        f"{found['completed']}, unchanged {found['unchanged']}, skipped {found['skipped']}, "
        f"refused {found['refused']}; {found['redactions']} redactions; "
        f"{found['unknown_records']} unknown records skipped"
    )
    for refused in found["refused_files"]:
        echo(f"  refused {refused['file']}: {refused['reason']}")
    for refused in found["refused_lines_in"]:
        echo(
            f"  refused: {counted(refused['lines'], 'line')} of {refused['file']} "
            f"({refused['reason']}); the rest of it read"
        )
