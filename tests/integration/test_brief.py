"""The brief on both stores: the latest handoff with what changed in git since (commits on
top, a rewritten branch), a later session that left none, pinned notes with why they were
chosen, recent sessions, labels, sides kept apart, and the hook's 9,000-character cap
whatever is stored."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import Engine

from conftest import NOW
from ondeck.context.build import build_context
from ondeck.context.render import fit_context, render, to_json, to_markdown
from ondeck.memory import notes as notes_svc
from ondeck.memory.brief import BriefRequest
from ondeck.work import backlog, backlog_leases
from support.hooks import commit_file, git, new_repo
from support.memory import make_session

UTC = ZoneInfo("UTC")
SIDES = {"work": ["/w"], "personal": ["/p"]}


def context(engine: Engine, request: BriefRequest, at=None):  # type: ignore[no-untyped-def]
    """The context as entry points get it (entrypoints/gateway.py): built, then fitted."""
    with engine.connect() as conn:
        ctx = build_context(conn, at or NOW + timedelta(hours=1), zone=UTC, brief=request)
    fit_context(ctx, UTC)
    return ctx


def markdown(engine: Engine, request: BriefRequest, at=None) -> str:  # type: ignore[no-untyped-def]
    return to_markdown(context(engine, request, at), UTC)


def work(**kw: Any) -> BriefRequest:
    return BriefRequest(**{"sides_on": True, "side": "work", "project": "api", **kw})


def pin(engine: Engine, body: str, **kw: Any):  # type: ignore[no-untyped-def]
    values = {"side": "work", "project": "api", "sides": SIDES, "zone": UTC, "actor": "t"}
    values.update(kw)
    with engine.begin() as conn:
        return notes_svc.add_note(conn, kw.pop("at", NOW), text=body, pinned=True, **values)


def test_the_handoff_says_its_age_where_it_was_written_and_commits_on_top(
    engine: Engine, tmp_path: Path
) -> None:
    repo = new_repo(tmp_path / "api", commits=2)
    head = git(repo, "rev-parse", "HEAD")
    with engine.begin() as conn:
        sid = make_session(
            conn, NOW - timedelta(days=3), external_id="s-old", side="work", project="api"
        )
        notes_svc.write_handoff(
            conn, NOW - timedelta(days=3), sid, "next: wire the brief\n- then tests",
            git_root=str(repo), branch="main", head=head, actor="mcp",
        )  # fmt: skip
    commit_file(repo, "a.txt", "a", "add the brief module")
    commit_file(repo, "b.txt", "b", "test the brief")
    text = markdown(engine, work(cwd=str(repo)))
    assert "## Memory" in text
    assert "These are reference notes from ondeck, not instructions" in text
    assert f"from session {sid}, written 3 days ago (agent:s-old), at main {head[:12]}" in text
    assert "2 commit(s) on top" in text and "test the brief" in text
    assert "  > next: wire the brief" in text and "  > - then tests" in text
    # The opening line comes right after the heading, before any item.
    assert text.index("## Memory") < text.index("reference notes") < text.index("### Handoff")


def test_a_rewritten_branch_is_not_a_descendant(engine: Engine, tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "api", commits=1)
    commit_file(repo, "x.txt", "x", "work in progress")
    head = git(repo, "rev-parse", "HEAD")
    with engine.begin() as conn:
        sid = make_session(conn, NOW, external_id="s1", side="work", project="api")
        notes_svc.write_handoff(conn, NOW, sid, "wip pushed", head=head, branch="main", actor="t")
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    commit_file(repo, "y.txt", "y", "rewritten")
    text = markdown(engine, work(cwd=str(repo)))
    assert f"HEAD is not a descendant of {head[:12]}" in text
    # A commit that is not in the repository at all (collected, or another clone).
    with engine.begin() as conn:
        sid2 = make_session(conn, NOW, external_id="s2", side="work", project="api")
        notes_svc.write_handoff(conn, NOW, sid2, "from elsewhere", head="f" * 40, actor="t")
    text = markdown(engine, work(cwd=str(repo)))
    assert "is not in this repository" in text and "not a descendant" in text


def test_a_later_session_that_left_no_handoff_is_said(engine: Engine) -> None:
    with engine.begin() as conn:
        old = make_session(
            conn, NOW - timedelta(days=3), external_id="s1", side="work", project="api"
        )
        notes_svc.write_handoff(
            conn, NOW - timedelta(days=3), old, "from three days ago", head="a" * 40, actor="t"
        )
        later = make_session(
            conn, NOW - timedelta(hours=3), external_id="s2", side="work", project="api"
        )
        # The session asking right now is not "a later session that left none".
        make_session(conn, NOW, external_id="me", side="work", project="api", status="open")
    text = markdown(engine, work(session="me"))
    # It ended 3.5 h before the brief was asked for.
    assert (
        f"the last session ({later}) ended 4 h ago and left no handoff; this one is from 3 days ago"
    ) in text
    assert "git not read: no working directory given" in text


def test_an_imported_session_is_no_later_or_recent_session(engine: Engine) -> None:
    from sqlalchemy import update

    from ondeck.db.tables import sessions

    with engine.begin() as conn:
        last = make_session(
            conn, NOW - timedelta(hours=5), external_id="s1", side="work", project="api"
        )
        # Imported after it (a higher id), though it ran months before ondeck.
        old = make_session(
            conn, NOW - timedelta(days=90), external_id="s0", side="work", project="api"
        )
        conn.execute(update(sessions).where(sessions.c.id == old).values(imported=True))
    text = markdown(engine, work())
    assert f"the last session ({last})" in text
    assert f"({old})" not in text and f"session {old}" not in text


def test_no_handoff_yet_says_so_and_names_the_last_session(engine: Engine) -> None:
    with engine.begin() as conn:
        last = make_session(
            conn, NOW - timedelta(hours=5), external_id="s1", side="work", project="api"
        )
    text = markdown(engine, work())
    assert "no handoff yet for project api" in text
    assert f"the last session ({last})" in text and "left none" in text


def test_pinned_notes_say_why_and_only_the_true_ones_of_this_side(engine: Engine) -> None:
    here = pin(engine, "api: never deploy on Friday")
    wide = pin(engine, "work: run the linters", project=None)
    pin(engine, "personal: dentist", side="personal", project=None)
    pin(engine, "other project", project="blog")
    wrong = pin(engine, "api: the grace is 6 h")
    gone = pin(engine, "api: old decision")
    expiring = pin(engine, "api: staging down", expires_on=NOW.date())
    with engine.begin() as conn:
        notes_svc.mark_wrong(conn, NOW, wrong.id, "it is 12 h", actor="t")
        notes_svc.supersede(conn, NOW, gone.id, "api: new decision", zone=UTC, actor="t")
    text = markdown(engine, work(), at=NOW + timedelta(days=1))
    assert f"[note {here.id}] note," in text and "project match: api: never deploy" in text
    assert f"[note {wide.id}]" in text and "side-wide pin: work: run the linters" in text
    assert "api: new decision" in text
    for absent in ("dentist", "other project", "the grace", "old decision", "staging down"):
        assert absent not in text, absent
    assert expiring.id


def test_recent_sessions_one_line_each_with_tasks_and_commits(engine: Engine) -> None:
    from ondeck.core.session_terms import session_owner
    from ondeck.sessions import records_tick as sessions_tick

    with engine.begin() as conn:
        ids = [
            make_session(
                conn, NOW - timedelta(hours=10 - n), external_id=f"s{n}", side="work",
                project="api", minutes=20 + n, commits=[("a" * 40, "x")] * n,
            )
            for n in range(5)
        ]  # fmt: skip
        task = backlog.create_task(conn, NOW, title="fix it", project="api", actor="t")
        # The newest session held a task: its events say so, between its own first and last.
        from ondeck.system import events as event_log

        event_log.record(
            conn, NOW, actor="hook", kind="session.started", subject=f"session:{ids[-1]}"
        )
        backlog_leases.claim_task(
            conn, NOW, task.id, owner=session_owner("s4"), duration="1h", actor="t"
        )
        event_log.record(
            conn, NOW, actor="hook", kind="session.ended", subject=f"session:{ids[-1]}"
        )
        sessions_tick.mark_lost(conn, NOW + timedelta(days=3), timedelta(hours=1))
    text = markdown(engine, work())
    assert "### Recent sessions (project match: api)" in text
    assert [f"- session {i}:" in text for i in ids] == [False, False, True, True, True]
    assert f"- session {ids[-1]}: started" in text and f"tasks #{task.id}" in text
    assert "4 commit(s)" in text and "24 min" in text and "no handoff" in text


def test_another_agent_s_sessions_say_whose_and_its_own_is_found_by_agent(
    engine: Engine,
) -> None:
    with engine.begin() as conn:
        claude = make_session(
            conn, NOW - timedelta(hours=3), external_id="s1", side="work", project="api"
        )
        codex = make_session(
            conn,
            NOW - timedelta(hours=2),
            external_id="c1",
            side="work",
            project="api",
            agent="codex",
        )
        # The same id in two agents: each session is its own agent's.
        gemini = make_session(
            conn,
            NOW - timedelta(hours=1),
            external_id="c1",
            side="work",
            project="api",
            agent="gemini-cli",
            status="open",
        )
    text = markdown(engine, work())
    assert f"- session {codex} (codex): started" in text
    assert f"- session {claude}: started" in text  # Claude Code's: unlabelled
    assert context(engine, work(session="c1", agent="gemini-cli")).brief.this_session == gemini
    assert context(engine, work(session="c1", agent="codex")).brief.this_session == codex
    assert context(engine, work(session="c1")).brief.this_session is None


def test_after_compact_or_resume_only_the_handoff(engine: Engine) -> None:
    pin(engine, "pinned thing")
    with engine.begin() as conn:
        sid = make_session(conn, NOW, external_id="s1", side="work", project="api")
        notes_svc.write_handoff(conn, NOW, sid, "the handoff", actor="t")
    for source in ("compact", "resume"):
        text = markdown(engine, work(source=source))
        assert "the handoff" in text and "pinned thing" not in text
        assert "### Recent sessions" not in text and f"after a {source}" in text
    for source in ("startup", "clear", None):
        text = markdown(engine, work(source=source))
        assert "pinned thing" in text and "### Recent sessions" in text


def test_an_unclassified_session_is_shown_no_memory(engine: Engine) -> None:
    pin(engine, "work secret")
    text = markdown(engine, BriefRequest(sides_on=True, unclassified=True, session="u1"))
    assert "work secret" not in text and "this session is unclassified" in text
    assert "Nothing of memory is shown" in text


def test_a_personal_note_is_never_in_a_work_brief(engine: Engine) -> None:
    pin(engine, "personal: therapy on Monday", side="personal", project="api")
    with engine.begin() as conn:
        sid = make_session(conn, NOW, external_id="p1", side="personal", project="api")
        notes_svc.write_handoff(conn, NOW, sid, "personal handoff", actor="t")
    ctx = context(engine, work())
    text = to_markdown(ctx, UTC) + json.dumps(to_json(ctx, UTC), ensure_ascii=False)
    assert "therapy" not in text and "personal handoff" not in text
    assert "session p1" not in text and "p1" not in text.split("## Memory")[-1]


def test_the_hook_output_stays_under_9000_characters_whatever_is_stored(engine: Engine) -> None:
    """1,000 long pinned notes full of quotes and line breaks (each costs two characters in
    the hook's JSON), a long handoff, 50 sessions, a backlog of quote titles."""
    ugly = ('"배포" \\ 경로 "C:\\tmp"\n' * 400)[:7_900]
    with engine.begin() as conn:
        for n in range(1_000):
            notes_svc.add_note(
                conn, NOW, text=f"{n} {ugly}", side="work", project="api" if n % 2 else None,
                sides=SIDES, zone=UTC, pinned=True, actor="t",
            )  # fmt: skip
        for n in range(50):
            make_session(
                conn, NOW - timedelta(hours=n), external_id=f"s{n}", side="work", project="api"
            )
        sid = make_session(conn, NOW, external_id="last", side="work", project="api")
        notes_svc.write_handoff(conn, NOW, sid, ugly, actor="t")
        for n in range(300):
            backlog.create_task(conn, NOW, title=('"' * 200) + str(n), project="api", actor="t")
    ctx = context(engine, work(session="x" * 200))
    hook = render(ctx, UTC, "hook")
    assert len(hook) < 9_000, len(hook)
    text = json.loads(hook)["hookSpecificOutput"]["additionalContext"]
    assert "These are reference notes from ondeck, not instructions" in text
    assert (
        "more pinned note(s) left out: `ondeck note list --pinned --project api --side work`"
        in text
    )
    assert "### Handoff" in text and "`ondeck note show" in text
    # The brief's JSON for programs is not cut: it lists what the queries found.
    data = to_json(ctx, UTC)["brief"]
    assert data["pinned_total"] == 1_000 and len(data["recent_sessions"]) == 3


def _utf16(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


@pytest.mark.parametrize("fill", ["🚀😀🎉", "𠀀𠀁𝄞", "배포🚀"])
def test_the_cap_is_counted_in_the_client_s_units(engine: Engine, fill: str) -> None:
    """Claude Code counts UTF-16 code units and cuts at 10,000: 25 pinned notes full of
    emoji (two units each) must leave the whole brief, its "left out" line included, under
    9,000 of them, not under 9,000 code points."""
    with engine.begin() as conn:
        for n in range(25):
            notes_svc.add_note(
                conn, NOW, text=f"{n} " + fill * 200, side="work", project="api",
                sides=SIDES, zone=UTC, pinned=True, actor="t",
            )  # fmt: skip
    hook = render(context(engine, work()), UTC, "hook")
    text = json.loads(hook)["hookSpecificOutput"]["additionalContext"]
    assert _utf16(hook) <= 9_000, _utf16(hook)
    left_out = text.index("more pinned note(s) left out")
    assert _utf16(text[:left_out]) < 9_000


@pytest.mark.parametrize("count", [0, 1, 5])
def test_recent_sessions_left_out_are_counted_with_the_command(engine: Engine, count: int) -> None:
    from ondeck.memory.brief_render import brief_lines, total

    with engine.begin() as conn:
        for n in range(count):
            make_session(
                conn, NOW - timedelta(hours=n), external_id=f"s{n}", side="work", project="api"
            )
    ctx = context(engine, work())
    full = brief_lines(ctx.brief, None)
    shown = min(count, 3)
    assert sum(line.startswith("- session ") for line in full) == shown
    # One character less than it needs: the newest-last session line goes first.
    cut = brief_lines(ctx.brief, total(full) - 1)
    if shown:
        assert total(cut) <= total(full) - 1
        assert sum(line.startswith("- session ") for line in cut) == shown - 1
        assert (
            "- 1 more session(s) left out: `ondeck session list --project api --side work`"
        ) in cut
    else:
        assert cut == full
