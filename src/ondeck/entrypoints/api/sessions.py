"""Session records over HTTP: `/api/v1/sessions…`. Thin: parse, call one service, render.

`POST /sessions/records` is where the Claude Code hooks send what they recorded when a
server of their database runs (entrypoints/hooks/verbs.py); people and scripts read and move.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, BackgroundTasks, Depends, Path, Query, Request
from pydantic import AwareDatetime, BaseModel, Field

from ondeck.context.render import Format
from ondeck.core.errors import OndeckError, Unavailable
from ondeck.core.validation import BIGINT_MAX, PROJECT_PATTERN
from ondeck.entrypoints.api.access import from_loopback
from ondeck.entrypoints.api.context import ContextQuestion, context_text
from ondeck.entrypoints.api.deps import StoreDep
from ondeck.entrypoints.api.models import Project, SideRule, StrictBody, errors, sided
from ondeck.sessions import intake, session_calls
from ondeck.sessions import records as sessions
from ondeck.sessions.capture.agents import AGENT_PATTERN

router = APIRouter(tags=["sessions"])

MAX_RECORDS = 500

SessionRef = Annotated[
    str,
    Path(
        min_length=1,
        max_length=200,
        description="The session's number, its agent's session id, or 8+ first characters of it.",
    ),
]
Name = Annotated[str, Field(pattern=PROJECT_PATTERN, max_length=64)]


class SessionOut(BaseModel):
    id: int
    agent: str
    external_id: str = Field(description="The agent's own session id (Claude Code's).")
    status: Literal["open", "ended", "lost"]
    unclassified: bool = Field(description="In the inbox: shown to no other session.")
    capture: bool = Field(description="False: only times, side and project are kept.")
    badges: list[str] = Field(
        description="The status, then `unclassified`, `capture off` and `imported` where "
        "they apply: as the lists and the dashboard show a session."
    )
    side: str | None
    project: str | None
    side_rule: str = Field(description="marker, path, remote, moved or none.")
    project_rule: str = Field(description="marker, path, remote, git, moved or none.")
    started_at: str = Field(description="ISO-8601 with the configured zone's offset.")
    last_seen_at: str
    ended_at: str | None
    end_reason: str | None
    start_source: str | None
    cwd: str | None
    git_root: str | None
    branch: str | None
    compactions: int
    disagreements: int = Field(description="How many disagreements the record holds.")
    redactions: int = Field(description="Secrets and private spans taken out before storing.")
    last_word_preview: str | None
    presumed_lost: bool = Field(
        False,
        description="Shown lost (silent past ONDECK_SESSION_GRACE) while no jobs tick has "
        "recorded it yet.",
    )
    imported: bool = Field(
        False,
        description="Made by `ondeck session import` from a transcript, not by hooks.",
    )


class SessionDetailOut(BaseModel):
    """Everything the record holds (the classification, its signals and disagreements, the
    compaction summaries, the tasks it touched, commits, files, last word, history)."""

    model_config = {"extra": "allow"}

    id: int
    status: Literal["open", "ended", "lost"]
    classification: dict[str, Any]


class MoveIn(StrictBody):
    side: Name | None = Field(None, description="Required when sides are configured.")
    project: Project | None = None


class RecordsIn(BaseModel):
    records: list[dict[str, Any]] = Field(
        max_length=MAX_RECORDS,
        description="Hook records (sessions/capture/events.py), applied in order, each checked; "
        'or import records (`"kind": "import"`, a client\'s `session import`).',
    )
    sent_at: AwareDatetime | None = Field(
        None,
        description="The sender's clock as it sent them (ISO-8601 with offset): one far "
        "from the server's is warned about, and the records are ordered by the server's.",
    )


class HookEventsIn(BaseModel):
    events: list[dict[str, Any]] = Field(
        max_length=50,
        description="Hook events as the hook received them: hook (session-start, stop, "
        "post-compact, session-end), payload (Claude Code's JSON), at (ISO-8601 instant), "
        "transcript_size, context (true: answer with the session context too).",
    )
    rules: dict[str, Any] | None = Field(
        None,
        description="The hook's classification rules: projects, sides, remotes, "
        "no_capture, private_globs (as in the config file); absent, the server's own (the "
        "Claude Code mod, which runs on the server's machine under its owner's settings).",
    )


class Forbidden(OndeckError):
    """Only a hook on this machine may send its events: the server reads its files."""

    code = "forbidden"
    exit_code = 2
    http_status = 403


class RecordResult(BaseModel):
    warning: str | None = Field(
        None, description="Something the hook is to tell (its clock far from the server's)."
    )
    fingerprint: str | None
    outcome: Literal["applied", "duplicate", "rejected", "declined", "spooled"] = Field(
        description="declined: the hook is to make and store the record itself; spooled: "
        "the database could not take it now, so the server wrote it in this machine's spool "
        "(the next hook or jobs tick stores it)."
    )
    reason: str | None = None
    session: dict[str, Any] | None = None
    released: list[int] = []
    imported: Literal["sessions", "completed", "unchanged"] | None = Field(
        None,
        description="An import record's (a client's `session import`): recorded now, an "
        "existing record completed with what it lacked, or unchanged.",
    )
    redactions: int | None = Field(None, description="An import record's redactions stored.")


class RecordsOut(BaseModel):
    results: list[RecordResult]
    context: str | None = Field(
        None,
        description="With `?context=true`: the session context asked for by the query (as "
        "`GET /context` takes it), made once the records are stored; none when it could not "
        "be made (the asker then asks `GET /context`, which says why).",
    )


class HookEventResult(RecordResult):
    classification: dict[str, Any] | None = None
    context: str | None = Field(
        None, description="The session context (Markdown), when the event asked for it."
    )


class HookEventsOut(BaseModel):
    results: list[HookEventResult]


ERRORS = errors(e404="No such session.", e422="Invalid input; nothing was written.")


@router.get(
    "/sessions",
    openapi_extra=sided(SideRule.ONE_SIDE),
    response_model=list[SessionOut],
    responses=ERRORS,
)
def list_sessions(
    store: StoreDep,
    status: Annotated[
        Literal["open", "ended", "lost", "unclassified", "imported"] | None,
        Query(description="unclassified: the inbox; imported: made by `session import`."),
    ] = None,
    side: Annotated[str | None, Query(pattern=PROJECT_PATTERN, max_length=64)] = None,
    project: Annotated[str | None, Query(pattern=PROJECT_PATTERN, max_length=64)] = None,
    agent: Annotated[
        str | None, Query(pattern=AGENT_PATTERN, description="claude-code, codex or gemini-cli.")
    ] = None,
    before_id: Annotated[int | None, Query(ge=1, le=BIGINT_MAX)] = None,
    limit: Annotated[int, Query(ge=1, le=sessions.MAX_LIMIT)] = 50,
) -> list[dict[str, Any]]:
    with store.read() as conn:
        return session_calls.list_sessions(
            conn,
            store,
            status=status,
            side=side,
            project=project,
            agent=agent,
            before_id=before_id,
            limit=limit,
        )


@router.get(
    "/sessions/{ref}",
    openapi_extra=sided(SideRule.BY_ID),
    response_model=SessionDetailOut,
    responses=ERRORS,
)
def get_session(store: StoreDep, ref: SessionRef) -> dict[str, Any]:
    with store.read() as conn:
        return session_calls.get_session(conn, store, ref)


@router.post(
    "/sessions/{ref}/move",
    openapi_extra=sided(SideRule.BY_ID),
    response_model=SessionOut,
    responses={**ERRORS, **errors(e409="The session changed meanwhile.")},
)
def move_session(store: StoreDep, ref: SessionRef, body: MoveIn) -> dict[str, Any]:
    with store.write() as conn:
        return session_calls.move_session(conn, store, ref, side=body.side, project=body.project)


@router.post(
    "/sessions/records",
    openapi_extra=sided(SideRule.CAPTURE),
    response_model=RecordsOut,
    responses=errors(
        e409="The hook expects another database than this server's.",
        e422="Invalid input; nothing was written.",
    ),
)
def post_records(
    store: StoreDep,
    http: Request,
    body: RecordsIn,
    asked: Annotated[ContextQuestion, Depends()],
    context: Annotated[
        bool,
        Query(
            description="Answer with the session context too (a session start in client "
            "mode: one request, and the context knows the session just stored)."
        ),
    ] = False,
) -> dict[str, Any]:
    results = intake.apply_records(
        store.engine,
        store.now(),
        body.records,
        grace=store.settings.session_grace,
        sides=store.settings.sides,
        sent_at=body.sent_at,
        access=store.access,
    )
    if not context:
        return {"results": results}
    stored = (results[-1].get("session") or {}) if results else {}
    if stored.get("unclassified") and not asked.unclassified:
        asked.as_unclassified()  # the server's inbox, not the side the client gave
    try:
        text: str | None = context_text(store, http, asked)
    except OndeckError:  # stored all the same: `GET /context` says what is wrong
        text = None
    return {"results": results, "context": text}


@router.post(
    "/sessions/hook-events",
    openapi_extra=sided(SideRule.OWNER),
    response_model=HookEventsOut,
    responses=errors(
        e403="Only from this machine (the server reads git and the marker file in cwd).",
        e409="The hook expects another database than this server's.",
        e422="Invalid input; nothing was written.",
    ),
)
def post_hook_events(
    request: Request,
    store: StoreDep,
    body: HookEventsIn,
    background: BackgroundTasks,
) -> dict[str, Any]:
    """The hooks' warm path: the server reads the event's place (git, `.ondeck.toml`),
    classifies it by the hook's rules, scrubs and stores it; a session's commits and files
    are read once the answer is sent."""
    if not from_loopback(request):
        raise Forbidden()
    store.access.owner_only(
        "hook events", "are classified by the rules they carry, which may name any side"
    )
    now = store.now()
    rules = body.rules
    if rules is None:
        from ondeck.host.quick_settings_read import hook_config_of

        rules = hook_config_of(store.settings).rules()
    results = intake.record_hook_events(
        store.engine,
        now,
        body.events,
        rules,
        grace=store.settings.session_grace,
        sides=store.settings.sides,
        later=background.add_task,
        data_dir=str(store.settings.data_dir.expanduser()),
    )
    # A session-start asks for its context in the same answer (the hook saves a request).
    for event, result in zip(body.events, results, strict=True):
        facts = result.pop("facts", None)  # the place the record read: the brief's git
        if event.get("context") is True and result.get("classification"):
            project = result["classification"]["project"]["value"]
            brief = _brief_of(event, result["classification"], rules, facts)
            try:
                result["context"] = store.context_text(Format.markdown, project, brief=brief)
            except Unavailable:  # the event is kept (spooled); the hook renders none
                result["context"] = None
    return {"results": results}


def _brief_of(
    event: dict[str, Any], classification: dict[str, Any], rules: Any, facts: Any = None
) -> Any:
    """The brief a starting session is given (memory/brief.py): its side and project as
    the hook's rules classified it, how it started, its id, its directory (this machine's:
    the route is loopback only) and its repository as the record just read it."""
    from ondeck.memory.brief import BriefRequest
    from ondeck.sessions.capture.events import brief_fields, repo_of

    fields = brief_fields(
        event.get("payload") or {},
        classification,
        sides_on=bool(isinstance(rules, dict) and rules.get("sides")),
        unclassified=bool(classification.get("unclassified")),
    )
    return BriefRequest(**fields, repo=repo_of(facts, fields["cwd"]))
