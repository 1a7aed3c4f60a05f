"""`ondeck handoff TEXT --session ID`: a session's own words for the next session of its
project. Thin: read this machine's git, call one service (memory/notes_calls.py), print."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ondeck.entrypoints.cli.common import cli_of
from ondeck.entrypoints.cli.notes import JsonOpt, print_note


def register(root: typer.Typer) -> None:
    @root.command("handoff")
    def handoff(
        ctx: typer.Context,
        text: Annotated[str, typer.Argument(help="Your words for the next session.")],
        session: Annotated[str, typer.Option("--session", help="Your session: its id or number.")],
        as_json: JsonOpt = False,
    ) -> None:
        """Write (or write again) this session's handoff for the next session of its project."""
        from ondeck.entrypoints.place import here

        cli = cli_of(ctx)
        # The git of this machine's directory: the server never reads it.
        found = here(cli.settings)

        def local() -> dict[str, Any]:
            from ondeck.memory import notes_calls

            with cli.write() as conn:
                return notes_calls.write_handoff(
                    conn,
                    cli,
                    session,
                    text,
                    git_root=found.git_root,
                    branch=found.branch,
                    head=found.head,
                )

        body = {
            "session": session,
            "text": text,
            "git_root": found.git_root,
            "branch": found.branch,
            "head": found.head,
        }
        written = cli.fetch("POST", "/handoffs", local, body=body)
        note = written["note"]
        verb = "replaced" if written["replaced"] else "wrote"
        line = f"{verb} the handoff of session {note['session_id']} (note {note['id']})"
        print_note(note, as_json, line)
