"""Memory over HTTP: `/api/v1/recall`, `/api/v1/notes…`, `/api/v1/handoffs`. Thin: parse,
call one service (memory/notes_calls.py, memory/recall.py `recall_json`), render.

The API has no working directory: with sides configured every call names its `side`, or
asks for the inbox (`unclassified=true`); a note of another side is "not found".
The result models are shared with the MCP server (entrypoints/mcp/tools.py).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel, Field, Strict

from ondeck.core.memory import TEXT_MAX, NoteKind, NoteStatus
from ondeck.core.validation import BIGINT_MAX, PROJECT_PATTERN
from ondeck.entrypoints.api.deps import StoreDep
from ondeck.entrypoints.api.models import Day, Project, SideRule, StrictBody, errors, sided
from ondeck.entrypoints.gateway import Call
from ondeck.memory import notes
from ondeck.memory import notes_calls as calls
from ondeck.memory.recall import DEFAULT_LIMIT, KINDS, MAX_LIMIT, recall_json

router = APIRouter(tags=["memory"])


# Strict(False): the JSON words "note", "active" must still be the members they name.
Kind = Annotated[NoteKind, Strict(False)]
Status = Annotated[NoteStatus, Strict(False)]
NoteId = Annotated[int, Path(ge=1, le=BIGINT_MAX, description="The note's id.")]
Side = Annotated[str | None, Query(pattern=PROJECT_PATTERN, max_length=64)]
Inbox = Annotated[
    bool, Query(description="The inbox: items of unclassified sessions, seen by no side.")
]
ProjectQuery = Annotated[str | None, Query(pattern=PROJECT_PATTERN, max_length=64)]
Text = Annotated[str, Field(min_length=1, max_length=TEXT_MAX)]


class NoteOut(BaseModel):
    id: int
    kind: Kind
    side: str | None = Field(description="Null: no sides configured, or in the inbox.")
    project: str | None = Field(description="Null: the whole side.")
    text: str = Field(description="As stored: private spans and secrets already taken out.")
    pinned: bool
    status: Status = Field(description="As true today: an active note past its date is expired.")
    stored_status: Status = Field(description="As stored (the jobs tick marks expiry).")
    status_reason: str | None = Field(description="Why it is wrong, or when it expired.")
    status_at: str | None
    supersedes: int | None = Field(description="The note this one replaced.")
    superseded_by: int | None = Field(description="The note that replaced this one.")
    expires_on: str | None = Field(description="YYYY-MM-DD: expired from the day after.")
    origin: str = Field(description="person, agent:<session id> or hook.")
    session_id: int | None
    git_root: str | None
    branch: str | None
    head: str | None = Field(description="A handoff: the commit it was written at.")
    redactions: int = Field(description="Secrets and private spans taken out before storing.")
    created_at: str
    updated_at: str


class NoteList(BaseModel):
    notes: list[NoteOut]


class Superseded(BaseModel):
    superseded: NoteOut = Field(description="The old note, now superseded, linked to the new.")
    note: NoteOut = Field(description="The note that replaces it.")


class HandoffOut(BaseModel):
    note: NoteOut
    replaced: bool = Field(description="True: the session's earlier handoff was replaced.")


class RecallMatch(BaseModel):
    word: str = Field(description="The query's word, as typed.")
    terms: list[str] = Field(description="The index terms it matched (a stem, a Korean piece).")
    forms: list[str] = Field(description="The item's words that gave them, as written.")
    weight: float = Field(description="What this word added to the score.")


class RecallHit(BaseModel):
    kind: Literal["note", "decision", "handoff", "compaction", "last_word", "task"]
    id: int
    ref: str = Field(description="note 12, session 3, session 3 compaction 7, task 9.")
    session_id: int | None
    at: str = Field(description="When it was written (a note: last changed).")
    age: str = Field(description="How old it is, in words.")
    side: str | None
    project: str | None
    status: str = Field(description="A note's status as true today; a task's; a session's.")
    true: bool = Field(description="False: superseded, wrong or expired (see label).")
    label: str | None = Field(description="Why it is not true any more, in words.")
    origin: str
    whole_query: bool = Field(description="It holds the whole query as typed.")
    snippet: str
    score: float = Field(description="BM25 over the words it matched: rarer and more weigh more.")
    matched: list[RecallMatch] = Field(
        description="Why it matched: each word of the query it holds."
    )


class RecallScope(BaseModel):
    side: str | None
    project: str | None
    unclassified: bool


class RecallOut(BaseModel):
    query: str
    terms: list[str]
    scope: RecallScope
    kinds: list[str]
    all: bool = Field(description="Superseded, wrong and expired notes were searched too.")
    limit: int
    more: bool = Field(description="There are more results than shown.")
    results: list[RecallHit]


class NoteIn(StrictBody):
    text: Text
    kind: Literal["note", "decision"] = "note"
    side: Annotated[str, Field(pattern=PROJECT_PATTERN, max_length=64)] | None = Field(
        None, description="Required when sides are configured."
    )
    project: Project | None = Field(None, description="Null: the whole side.")
    pinned: bool = False
    expires_on: Day | None = None
    session: Annotated[str, Field(min_length=1, max_length=200)] | None = Field(
        None, description="Written by this session: its side and project, origin agent."
    )


class NoteEdit(StrictBody):
    text: Text | None = None
    kind: Literal["note", "decision", "handoff"] | None = None
    project: Project | None = Field(None, description="Give null with whole_side to clear.")
    whole_side: bool = False
    expires_on: Day | None = None
    clear_expiry: bool = False
    to_side: Annotated[str, Field(pattern=PROJECT_PATTERN, max_length=64)] | None = Field(
        None, description="Move the note to this side."
    )


class NoteShown(NoteOut):
    history: list[dict[str, Any]] = Field(description="The note's events, oldest first.")


class SupersedeIn(StrictBody):
    text: Text
    session: Annotated[str, Field(min_length=1, max_length=200)] | None = Field(
        None, description="Written by this session (origin agent)."
    )


class WrongIn(StrictBody):
    # Empty is the service's to refuse (memory/notes.py check_reason), in its words.
    reason: Annotated[str, Field(max_length=500)] = ""


class HandoffIn(StrictBody):
    session: Annotated[str, Field(min_length=1, max_length=200)] = Field(
        description="The session's number, its agent's id, or 8+ first characters of it."
    )
    text: Text
    branch: Annotated[str, Field(max_length=255)] | None = None
    head: Annotated[str, Field(pattern=r"^[0-9a-f]{4,64}$")] | None = None
    git_root: Annotated[str, Field(max_length=4000)] | None = None


ERRORS = errors(
    e404="No such note in this side.",
    e409="The note is not active, or changed meanwhile.",
    e422="Invalid input; nothing was written.",
)


@router.get(
    "/recall", openapi_extra=sided(SideRule.ONE_SIDE), response_model=RecallOut, responses=ERRORS
)
def get_recall(
    store: StoreDep,
    q: Annotated[str, Query(min_length=1, max_length=200, description="Words to find.")],
    side: Side = None,
    project: ProjectQuery = None,
    unclassified: Inbox = False,
    kind: Annotated[
        list[str] | None, Query(description=f"Any of {', '.join(KINDS)} (repeat).")
    ] = None,
    all: Annotated[bool, Query(description="Also superseded, wrong and expired notes.")] = False,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
) -> dict[str, Any]:
    scope = store.scope(side, project, inbox=unclassified)
    with store.write() as conn:  # the index is brought up to date first
        return recall_json(
            conn, store, q, scope, kinds=",".join(kind or []), include_all=all, limit=limit
        )


@router.get(
    "/notes", openapi_extra=sided(SideRule.ONE_SIDE), response_model=NoteList, responses=ERRORS
)
def list_notes(
    store: StoreDep,
    side: Side = None,
    project: ProjectQuery = None,
    unclassified: Inbox = False,
    kind: Annotated[list[Kind] | None, Query()] = None,
    all: Annotated[bool, Query(description="Also superseded, wrong and expired notes.")] = False,
    pinned: Annotated[bool | None, Query()] = None,
    before_id: Annotated[int | None, Query(ge=1, le=BIGINT_MAX)] = None,
    limit: Annotated[int, Query(ge=1, le=notes.MAX_LIMIT)] = 50,
) -> dict[str, Any]:
    scope = store.scope(side, project, inbox=unclassified)
    with store.read() as conn:
        return calls.list_notes(
            conn,
            store,
            scope,
            kinds=kind or (),
            include_all=all,
            pinned=pinned,
            before_id=before_id,
            limit=limit,
        )


@router.post(
    "/notes",
    openapi_extra=sided(SideRule.NEW),
    response_model=NoteOut,
    status_code=201,
    responses=ERRORS,
)
def add_note(store: StoreDep, body: NoteIn) -> dict[str, Any]:
    with store.write() as conn:
        return calls.add_note(
            conn,
            store,
            text=body.text,
            kind=body.kind,
            side=body.side,
            project=body.project,
            pinned=body.pinned,
            expires_on=body.expires_on,
            session=body.session,
        )


@router.get(
    "/notes/{note_id}",
    openapi_extra=sided(SideRule.BY_ID),
    response_model=NoteOut,
    responses=ERRORS,
)
def get_note(
    store: StoreDep, note_id: NoteId, side: Side = None, unclassified: Inbox = False
) -> dict[str, Any]:
    scope = store.scope(side, None, inbox=unclassified)
    with store.read() as conn:
        return calls.show_note(conn, store, note_id, scope)


@router.get(
    "/notes/{note_id}/history",
    openapi_extra=sided(SideRule.BY_ID),
    response_model=NoteShown,
    responses=ERRORS,
)
def get_note_history(
    store: StoreDep, note_id: NoteId, side: Side = None, unclassified: Inbox = False
) -> dict[str, Any]:
    """The note with its events (`ondeck note show`)."""
    scope = store.scope(side, None, inbox=unclassified)
    with store.read() as conn:
        return calls.show_note(conn, store, note_id, scope, history=True)


@router.patch(
    "/notes/{note_id}",
    openapi_extra=sided(SideRule.BY_ID),
    response_model=NoteOut,
    responses=ERRORS,
)
def edit_note(
    store: StoreDep,
    note_id: NoteId,
    body: NoteEdit,
    side: Side = None,
    unclassified: Inbox = False,
) -> dict[str, Any]:
    scope = store.scope(side, None, inbox=unclassified)
    with store.write() as conn:
        return calls.edit_note(
            conn,
            store,
            note_id,
            scope=scope,
            text=body.text,
            kind=body.kind,
            project=body.project,
            whole_side=body.whole_side,
            to_side=body.to_side,
            expires_on=body.expires_on,
            clear_expiry=body.clear_expiry,
        )


def _pin(store: Call, note_id: int, pinned: bool, side: str | None, inbox: bool) -> Any:
    scope = store.scope(side, None, inbox=inbox)
    with store.write() as conn:
        return calls.pin_note(conn, store, note_id, pinned, scope=scope)


@router.post(
    "/notes/{note_id}/pin",
    openapi_extra=sided(SideRule.BY_ID),
    response_model=NoteOut,
    responses=ERRORS,
)
def pin_note(
    store: StoreDep, note_id: NoteId, side: Side = None, unclassified: Inbox = False
) -> dict[str, Any]:
    return _pin(store, note_id, True, side, unclassified)  # type: ignore[no-any-return]


@router.post(
    "/notes/{note_id}/unpin",
    openapi_extra=sided(SideRule.BY_ID),
    response_model=NoteOut,
    responses=ERRORS,
)
def unpin_note(
    store: StoreDep, note_id: NoteId, side: Side = None, unclassified: Inbox = False
) -> dict[str, Any]:
    return _pin(store, note_id, False, side, unclassified)  # type: ignore[no-any-return]


@router.post(
    "/notes/{note_id}/supersede",
    openapi_extra=sided(SideRule.BY_ID),
    response_model=Superseded,
    responses=ERRORS,
)
def supersede_note(
    store: StoreDep,
    note_id: NoteId,
    body: SupersedeIn,
    side: Side = None,
    unclassified: Inbox = False,
) -> dict[str, Any]:
    scope = store.scope(side, None, inbox=unclassified)
    with store.write() as conn:
        return calls.supersede_note(
            conn, store, note_id, body.text, scope=scope, session=body.session or None
        )


@router.post(
    "/notes/{note_id}/wrong",
    openapi_extra=sided(SideRule.BY_ID),
    response_model=NoteOut,
    responses=ERRORS,
)
def mark_wrong(
    store: StoreDep,
    note_id: NoteId,
    body: WrongIn,
    side: Side = None,
    unclassified: Inbox = False,
) -> dict[str, Any]:
    scope = store.scope(side, None, inbox=unclassified)
    with store.write() as conn:
        return calls.mark_wrong(conn, store, note_id, body.reason, scope=scope)


@router.delete(
    "/notes/{note_id}",
    openapi_extra=sided(SideRule.BY_ID),
    response_model=NoteOut,
    responses=ERRORS,
)
def delete_note(
    store: StoreDep, note_id: NoteId, side: Side = None, unclassified: Inbox = False
) -> dict[str, Any]:
    scope = store.scope(side, None, inbox=unclassified)
    with store.write() as conn:
        return calls.delete_note(conn, store, note_id, scope=scope)


@router.post(
    "/handoffs", openapi_extra=sided(SideRule.BY_ID), response_model=HandoffOut, responses=ERRORS
)
def write_handoff(store: StoreDep, body: HandoffIn) -> dict[str, Any]:
    with store.write() as conn:
        return calls.write_handoff(
            conn,
            store,
            body.session,
            body.text,
            git_root=body.git_root,
            branch=body.branch,
            head=body.head,
        )
