"""Memory in: applying a checked export (exchange_read.py) in the caller's transaction, all
or nothing: new notes get new ids and keep their links, notes already here are matched and
brought to the file's later state, and a chain that would contradict itself refuses the
whole file.

Which of two copies of one note is the later: the one whose status has gone further from
true (active, then expired or superseded, then wrong: a status only moves that way), and
between copies equally far, the one changed later. A status is never judged by the
instants it was stamped with: those are the writing machine's "now", which may have run
ahead (a note written then looks changed "since" every export made after the clock was put
right)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, insert, or_, select, update
from sqlalchemy.exc import DataError, IntegrityError, StatementError

from ondeck.core.clock import aware
from ondeck.core.errors import Conflict, InvalidInput
from ondeck.core.memory import NoteKind, NoteStatus
from ondeck.db.locks import one_import_at_a_time
from ondeck.db.tables import notes, sessions
from ondeck.memory.exchange_format import Bad, as_json
from ondeck.memory.exchange_read import read_file
from ondeck.system import events as event_log


@dataclass
class Imported:
    notes: int = 0
    sessions: int = 0
    skipped: int = 0  # already there, as the file has it (or changed here since)
    updated: int = 0  # already there, brought to the file's later state
    ids: dict[int, int] = field(default_factory=dict)  # old id → new id
    warnings: list[str] = field(default_factory=list)
    # The notes here the import changed, by what it did to them (CHANGES), and those the
    # file has otherwise but whose state here stands: their ids here.
    changed: dict[str, list[int]] = field(default_factory=dict)
    kept: list[int] = field(default_factory=list)


# What an import did to a note it already had: marked it as the file has it, or brought
# its other fields (text, pin, place, links, reason).
CHANGES = ("wrong", "superseded", "expired", "updated")

# How far from true each status is. Notes change only forward (notes_changes.py changes an
# active note; only marking wrong takes a retired one; nothing makes a note true again), so
# of two copies the one further along is the later. Expired and superseded are equally
# far: neither becomes the other.
_FURTHER = {
    NoteStatus.ACTIVE.value: 0,
    NoteStatus.EXPIRED.value: 1,
    NoteStatus.SUPERSEDED.value: 1,
    NoteStatus.WRONG.value: 2,
}


_CARRIED = (
    "text",
    "pinned",
    "status",
    "status_reason",
    "status_at",
    "expires_on",
    "side",
    "project",
    "git_root",
    "branch",
    "head",
    "redactions",
    "updated_at",
)


def import_jsonl(
    conn: Connection, now: datetime, lines: Iterable[str], *, sides: Any, actor: str
) -> Imported:
    """Import an export into this database, in the caller's transaction (all or nothing).

    A note already here (module doc) whose copy in the file is newer takes the file's
    state (status, text, pin, links, …) with an event; one changed here since is kept.
    Anything that would leave a chain contradicting itself refuses the whole file
    (`Conflict`, listing each)."""
    read = read_file(lines, sides)
    one_import_at_a_time(conn)  # another may be inserting the same notes and sessions
    result = Imported(warnings=read.warnings)
    session_ids: dict[int, int] = {}
    for number, values in read.sessions:
        values = dict(values)
        old = values.pop("_id")
        try:
            session_ids[old], created = _ensure_session(conn, values)
        except Bad as exc:
            raise InvalidInput(f"line {number}: {exc}") from None
        result.sessions += created
    inserted: list[tuple[int, int, dict[str, Any]]] = []
    matched: list[tuple[int, int, dict[str, Any]]] = []
    claimed: set[int] = set()
    conflicts: list[str] = []
    for number, values in sorted(read.notes, key=lambda item: item[1]["_id"]):
        values = dict(values)
        old_id = values["_id"]
        old_session = values["_session"]
        session_id = None
        if old_session is not None:
            if old_session not in session_ids:
                raise InvalidInput(f"line {number}: session {old_session} is not in the file")
            session_id = session_ids[old_session]
        if values["kind"] == NoteKind.HANDOFF.value and session_id is None:
            raise InvalidInput(f"line {number}: a handoff needs its session")
        existing, ambiguous = _same_note(conn, values, session_id, claimed)
        if ambiguous:
            conflicts.append(
                f"line {number}: note {old_id} matches several notes here "
                f"({', '.join(map(str, ambiguous))}): which one it is cannot be told"
            )
            continue
        if existing is not None:
            claimed.add(existing)
            result.ids[old_id] = existing
            matched.append((number, existing, values))
            continue
        row = {k: v for k, v in values.items() if not k.startswith("_")}
        new_id = int(
            conn.execute(
                insert(notes).values(**row, session_id=session_id).returning(notes.c.id)
            ).scalar_one()
        )
        result.ids[old_id] = new_id
        claimed.add(new_id)  # this import's own: never "already here" for a later line
        result.notes += 1
        inserted.append((number, new_id, values))
        event_log.record(
            conn,
            now,
            actor=actor,
            kind="note.imported",
            subject=f"note:{new_id}",
            details={"old_id": old_id, "line": number},
        )
    for number, new_id, values in inserted:
        _link(conn, new_id, values, result.ids, number, conflicts)
    recreated = {new_id for _, new_id, _ in inserted}
    for number, local_id, values in matched:
        _relink(conn, local_id, values, result.ids, recreated)
        outcome = _bring(conn, now, local_id, values, result.ids, number, conflicts, actor)
        if outcome in CHANGES:
            result.updated += 1
            result.changed.setdefault(outcome, []).append(local_id)
        else:
            result.skipped += 1
            if outcome == "kept":
                result.kept.append(local_id)
    touched = {new_id for _, new_id, _ in inserted} | {local for _, local, _ in matched}
    conflicts += _chain_faults(conn, touched)
    if conflicts:
        shown = "; ".join(conflicts[:10]) + (
            f"; and {len(conflicts) - 10} more" if len(conflicts) > 10 else ""
        )
        raise Conflict(f"the import conflicts with this database, nothing was imported: {shown}")
    return result


def _link(
    conn: Connection,
    note_id: int,
    values: dict[str, Any],
    ids: dict[int, int],
    number: int,
    conflicts: list[str],
) -> None:
    supersedes, superseded_by = values["_supersedes"], values["_superseded_by"]
    if supersedes is None and superseded_by is None:
        return
    try:
        with conn.begin_nested():  # uq_notes_supersedes: a note here already replaced
            conn.execute(
                update(notes)
                .where(notes.c.id == note_id)
                .values(
                    supersedes=ids.get(supersedes) if supersedes else None,
                    superseded_by=ids.get(superseded_by) if superseded_by else None,
                )
            )
    except IntegrityError:
        other = ids.get(supersedes) if supersedes else None
        conflicts.append(
            f"line {number}: the file's note {values['_id']} replaces note {other} here, "
            "which another note here already replaces"
        )


def _relink(
    conn: Connection,
    local_id: int,
    values: dict[str, Any],
    ids: dict[int, int],
    recreated: set[int],
) -> None:
    """A link this note lost when its partner was deleted here (SET NULL), back to the
    partner the import has just made again: the chain as it was, not a change."""
    here = conn.execute(
        select(notes.c.status, notes.c.supersedes, notes.c.superseded_by).where(
            notes.c.id == local_id
        )
    ).one()
    back = {}
    for link in ("supersedes", "superseded_by"):
        old = values[f"_{link}"]
        partner = ids.get(old) if old else None
        # A note here that is not superseded lost no replacement: that is a change.
        lost = link == "supersedes" or here.status == NoteStatus.SUPERSEDED.value
        if lost and getattr(here, link) is None and partner in recreated:
            back[link] = partner
    if back:
        conn.execute(update(notes).where(notes.c.id == local_id).values(**back))


def _bring(
    conn: Connection,
    now: datetime,
    local_id: int,
    values: dict[str, Any],
    ids: dict[int, int],
    number: int,
    conflicts: list[str],
    actor: str,
) -> str | None:
    """Bring the file's later state (module doc) of a note this database has. What it did:
    one of CHANGES; "kept" when the file has it otherwise but this database's state is the
    later; None when the two are the same (or conflict, in `conflicts`)."""
    here = conn.execute(select(notes).where(notes.c.id == local_id)).one()._mapping
    theirs: dict[str, Any] = {name: values[name] for name in _CARRIED}
    for link in ("supersedes", "superseded_by"):
        old = values[f"_{link}"]
        theirs[link] = ids.get(old) if old else None
    changes = {
        name: (here[name], value)
        for name, value in theirs.items()
        if name not in ("updated_at", "redactions") and not _same(here[name], value)
    }
    if not changes:
        return None
    further = _FURTHER[values["status"]] - _FURTHER[here["status"]]
    mine, file_time = aware(here["updated_at"]), aware(values["updated_at"])
    if further < 0 or (further == 0 and file_time < mine):
        return "kept"  # retired further here, or changed here since: this state stands
    if further == 0 and file_time == mine:
        conflicts.append(
            f"line {number}: note {local_id} here and note {values['_id']} in the file were "
            f"both changed at {mine.isoformat()}, differently ({', '.join(sorted(changes))})"
        )
        return None
    try:
        with conn.begin_nested():
            conn.execute(update(notes).where(notes.c.id == local_id).values(**theirs))
    except IntegrityError:
        conflicts.append(
            f"line {number}: note {local_id} cannot take the file's links "
            f"({', '.join(sorted(changes))}): another note here holds them"
        )
        return None
    event_log.record(
        conn,
        now,
        actor=actor,
        kind="note.import_updated",
        subject=f"note:{local_id}",
        details={
            "old_id": values["_id"],
            "line": number,
            "changed": {
                name: {"here": as_json(before), "file": as_json(after)}
                for name, (before, after) in changes.items()
            },
        },
    )
    return values["status"] if "status" in changes else "updated"


def _same(here: Any, theirs: Any) -> bool:
    if isinstance(here, datetime) and isinstance(theirs, datetime):
        return aware(here) == aware(theirs)
    return bool(here == theirs)


def _chain_faults(conn: Connection, touched: set[int]) -> list[str]:
    """What contradicts itself in the chains of the notes an import touched: a link one
    way that the other note does not return, a replaced note that is not superseded."""
    if not touched:
        return []
    rows = {
        r.id: r
        for r in conn.execute(
            select(notes.c.id, notes.c.status, notes.c.supersedes, notes.c.superseded_by).where(
                or_(
                    notes.c.id.in_(touched),
                    notes.c.supersedes.in_(touched),
                    notes.c.superseded_by.in_(touched),
                )
            )
        )
    }
    partners = {
        link for r in rows.values() for link in (r.supersedes, r.superseded_by) if link
    } - set(rows)
    if partners:
        for r in conn.execute(
            select(notes.c.id, notes.c.status, notes.c.supersedes, notes.c.superseded_by).where(
                notes.c.id.in_(partners)
            )
        ):
            rows[r.id] = r
    faults = []
    for r in sorted(rows.values(), key=lambda r: r.id):
        if r.superseded_by is not None:
            by = rows.get(r.superseded_by)
            if r.status != NoteStatus.SUPERSEDED.value:
                faults.append(
                    f"note {r.id} is {r.status} but names note {r.superseded_by} as its replacement"
                )
            elif by is not None and by.supersedes != r.id:
                faults.append(
                    f"note {r.id} is superseded by note {by.id}, which does not say it replaces it"
                )
        if r.supersedes is not None:
            old = rows.get(r.supersedes)
            if old is not None and old.superseded_by != r.id:
                what = (
                    f"superseded by note {old.superseded_by}" if old.superseded_by else old.status
                )
                faults.append(f"note {r.id} replaces note {old.id}, which is {what} here")
    return faults


def _ensure_session(conn: Connection, values: dict[str, Any]) -> tuple[int, int]:
    found = conn.execute(
        select(sessions.c.id).where(
            sessions.c.agent == values["agent"], sessions.c.external_id == values["external_id"]
        )
    ).scalar()
    if found is not None:
        return int(found), 0
    try:
        with conn.begin_nested():
            new_id = conn.execute(
                insert(sessions).values(**values).returning(sessions.c.id)
            ).scalar_one()
    except (IntegrityError, DataError, StatementError) as exc:  # a CHECK, a type: say which
        why = str(getattr(exc, "orig", exc)).splitlines()[0][:200]
        raise Bad(f"session {values['external_id'][:40]!r} refused by the store: {why}") from None
    return int(new_id), 1


def _same_note(
    conn: Connection, values: dict[str, Any], session_id: int | None, claimed: set[int]
) -> tuple[int | None, list[int]]:
    """The note here that a note of the file is, and the candidates when that cannot be
    told. Its session's handoff for a handoff; else the note of the same kind, origin and
    creation time: the one with the same place and text, or the only one changed since it
    was made, here or in the file."""
    if values["kind"] == NoteKind.HANDOFF.value and session_id is not None:
        # One handoff per session: the session's own.
        found = conn.execute(
            select(notes.c.id).where(
                notes.c.session_id == session_id, notes.c.kind == NoteKind.HANDOFF.value
            )
        ).scalar()
        return (None if found is None else int(found)), []
    candidates = [
        r
        for r in conn.execute(
            select(notes.c.id, notes.c.side, notes.c.text, notes.c.created_at, notes.c.updated_at)
            .where(
                notes.c.kind == values["kind"],
                notes.c.origin == values["origin"],
                notes.c.created_at == values["created_at"],
            )
            .order_by(notes.c.id)
        )
        if r.id not in claimed
    ]
    for r in candidates:
        if r.side == values["side"] and r.text == values["text"]:
            return int(r.id), []
    # Another text is the same note only where one of the two was changed since it was
    # made: a note never changed is known by its text.
    changed_there = values["updated_at"] != values["created_at"]
    changed = [r for r in candidates if changed_there or aware(r.updated_at) != aware(r.created_at)]
    if len(changed) == 1:
        return int(changed[0].id), []
    return None, [int(r.id) for r in changed]
