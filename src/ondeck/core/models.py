"""The records ondeck keeps, and the one spelling of each of their states.

    TaskStatus     READY | RUNNING | DONE | CANCELLED
    ScheduleKind   task | remind | backup
    MissedPolicy   latest | all | skip
    BackupStatus   running | ok | failed | abandoned

    Task, Schedule, Fire, Event   frozen, keyword-only records, each with its JSON shape

The enums are the only place these words are written: the schema's CHECK constraints are
built from them (rendering exactly what migration 0001 created), the API's and the MCP
server's models use them, and the services compare with them. A member *is* its value
(`TaskStatus.READY == "READY"`, `str(ScheduleKind.TASK) == "task"`), so JSON, templates
and messages show the same text as before.

A record's `to_json` is what the API, `--json` and the MCP tools show, keys in a fixed order
(a contract: scripts read it); instants in the configured zone with their offset, dates as
YYYY-MM-DD. `Backup` stays with the backup service until that service is split.

Only the standard library and ondeck's pure core are imported: the session hook loads this
module at every agent session start.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import date, datetime, tzinfo
from enum import StrEnum
from types import ModuleType
from typing import Any, TypeVar

from ondeck.core.clock import aware, iso
from ondeck.core.errors import InvalidInput

__all__ = [
    "OPEN",
    "TASK_JSON_FIELDS",
    "BackupStatus",
    "Event",
    "Fire",
    "MissedPolicy",
    "Schedule",
    "ScheduleKind",
    "Task",
    "TaskStatus",
    "choice",
]


# --- states -------------------------------------------------------------------------------


class TaskStatus(StrEnum):
    """Where a task is. RUNNING exactly when a lease has an owner and an end (a CHECK)."""

    READY = "READY"
    RUNNING = "RUNNING"
    DONE = "DONE"
    CANCELLED = "CANCELLED"


OPEN: tuple[TaskStatus, ...] = (TaskStatus.READY, TaskStatus.RUNNING)
"""Work not finished: what lists show by default and what can still be edited."""


class ScheduleKind(StrEnum):
    """What a schedule's fire makes: a task, a reminder (the fire alone), or a backup the
    server runs itself (its fire recorded only when the backup succeeded)."""

    TASK = "task"
    REMIND = "remind"
    BACKUP = "backup"


class MissedPolicy(StrEnum):
    """What the dates a schedule missed (the server was down) become: one fire for the
    latest, a fire for each (the oldest folded in past a limit), or none but today's."""

    LATEST = "latest"
    ALL = "all"
    SKIP = "skip"


class BackupStatus(StrEnum):
    """A backup run: `running` while it works, then `ok` or `failed`; a run whose process
    died is marked `abandoned` rather than left running forever."""

    RUNNING = "running"
    OK = "ok"
    FAILED = "failed"
    ABANDONED = "abandoned"


E = TypeVar("E", bound=StrEnum)


def choice(enum: type[E], value: Any, name: str) -> E:
    """`value` as a member of `enum`, or `InvalidInput` naming what is accepted
    ("kind 'nope': use one of task, remind, backup"). Exact spelling: the stored form."""
    try:
        return enum(value)
    except (ValueError, TypeError):  # TypeError: an unhashable value (a list from JSON)
        shown = repr(value)
        if len(shown) > _SHOWN_MAX:  # the refusal is one line, not the whole of a pasted file
            shown = shown[: _SHOWN_MAX - 1] + "…"
        raise InvalidInput(f"{name} {shown}: use one of {', '.join(enum)}") from None


_SHOWN_MAX = 40


# --- tasks --------------------------------------------------------------------------------

# A task object in the API and in `--json`, in this order (a contract: scripts read it).
TASK_JSON_FIELDS = (
    "id",
    "title",
    "body",
    "status",
    "priority",
    "due_on",
    "project",
    "side",
    "source",
    "lease_owner",
    "lease_until",
    "lease_token",
    "expired",
    "created_at",
    "updated_at",
    "done_at",
)


@dataclass(frozen=True, kw_only=True, slots=True)
class Task:
    id: int
    title: str
    body: str
    status: TaskStatus
    priority: int
    due_on: date | None
    project: str | None
    source: str | None
    lease_owner: str | None
    lease_until: datetime | None
    lease_token: int
    created_at: datetime
    updated_at: datetime
    done_at: datetime | None
    # NULL: no sides configured, or (while they are) the inbox (revision 0007).
    side: str | None = None

    @classmethod
    def from_values(cls, values: Mapping[Any, Any]) -> Task:
        """The task in a row's values (columns besides the record's are left out)."""
        status = TaskStatus(values["status"])
        found = {name: values[name] for name in _TASK_COLUMNS}
        return cls(**found, status=status, side=values.get("side"))

    def is_expired(self, now: datetime) -> bool:
        """RUNNING past its lease end: the holder went silent; the reaper will release it."""
        return (
            self.status is TaskStatus.RUNNING
            and self.lease_until is not None
            and self.lease_until <= aware(now)
        )

    def to_json(self, now: datetime, zone: tzinfo) -> dict[str, Any]:
        """The task as the API and `--json` show it: instants in `zone`, `expired` as of `now`."""
        return {
            "id": self.id,
            "title": self.title,
            "body": self.body,
            "status": self.status.value,
            "priority": self.priority,
            "due_on": _day(self.due_on),
            "project": self.project,
            "side": self.side,
            "source": self.source,
            "lease_owner": self.lease_owner,
            "lease_until": iso(self.lease_until, zone),
            "lease_token": self.lease_token,
            "expired": self.is_expired(now),
            "created_at": iso(self.created_at, zone),
            "updated_at": iso(self.updated_at, zone),
            "done_at": iso(self.done_at, zone),
        }


_TASK_COLUMNS = tuple(f.name for f in fields(Task) if f.name not in ("status", "side"))


# --- schedules ----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class Schedule:
    id: int
    title: str
    body: str
    kind: ScheduleKind
    rule: str
    project: str | None
    start_on: date
    next_due: date | None
    missed: MissedPolicy
    last_fired_on: date | None
    last_fired_at: datetime | None
    enabled: bool
    priority: int
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None
    # Its tasks and reminders take it; NULL as a task's (revision 0007).
    side: str | None = None

    @classmethod
    def from_values(cls, values: Mapping[Any, Any]) -> Schedule:
        """The schedule in a row's values (every column of `schedules`)."""
        found: dict[str, Any] = {name: values[name] for name in _SCHEDULE_COLUMNS}
        found["side"] = values.get("side")
        found["kind"] = ScheduleKind(values["kind"])
        found["missed"] = MissedPolicy(values["missed"])
        found["enabled"] = bool(values["enabled"])
        return cls(**found)

    @property
    def rule_text(self) -> str:
        try:
            return str(_rules().parse(self.rule).describe())
        except InvalidInput:
            return f"unreadable rule {self.rule!r}"

    def upcoming(self, day: date, count: int = 5) -> list[date]:
        """The next `count` dates it will fire on, from `day` (today) on."""
        begin = max(day, self.start_on)
        if self.next_due is not None and self.next_due > begin:
            begin = self.next_due  # already fired today: the next one is next_due
        return list(_rules().parse(self.rule).occurrences(self.start_on, begin, count))

    def to_json(self, now: datetime, zone: tzinfo) -> dict[str, Any]:
        """The schedule as the API and `--json` show it, in the API model's order (so a
        client's `--json` is the same text); a removed schedule is never shown, so
        `deleted_at` is not part of it."""
        return {
            "id": self.id,
            "title": self.title,
            "body": self.body,
            "kind": self.kind.value,
            "rule": self.rule,
            "rule_text": self.rule_text,
            "project": self.project,
            "side": self.side,
            "start_on": _day(self.start_on),
            "next_due": _day(self.next_due),
            "missed": self.missed.value,
            "last_fired_on": _day(self.last_fired_on),
            "last_fired_at": iso(self.last_fired_at, zone),
            "enabled": self.enabled,
            "priority": self.priority,
            "created_at": iso(self.created_at, zone),
            "updated_at": iso(self.updated_at, zone),
        }


_SCHEDULE_COLUMNS = tuple(f.name for f in fields(Schedule) if f.name != "side")


@dataclass(frozen=True, kw_only=True, slots=True)
class Fire:
    """A schedule processed for one date: when, the task it made, the dates folded into it."""

    id: int
    schedule_id: int
    fire_date: date
    fired_at: datetime
    task_id: int | None
    skipped: int

    def to_json(self, zone: tzinfo) -> dict[str, Any]:
        return {
            "id": self.id,
            "schedule_id": self.schedule_id,
            "fire_date": self.fire_date.isoformat(),
            "fired_at": iso(self.fired_at, zone),
            "task_id": self.task_id,
            "skipped": self.skipped,
        }


# --- events -------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class Backup:
    """One backup run, as its `backups` row says (backups/runs.py runs them)."""

    id: int
    started_at: datetime
    finished_at: datetime | None
    status: BackupStatus
    worker: str | None
    file: str | None
    bytes: int | None
    error: str | None
    schedule_id: int | None

    @classmethod
    def from_values(cls, values: Mapping[Any, Any]) -> Backup:
        found = {name: values[name] for name in _BACKUP_COLUMNS}
        found["status"] = BackupStatus(values["status"])
        return cls(**found)

    def to_json(self, zone: tzinfo) -> dict[str, Any]:
        return {
            "id": self.id,
            "started_at": iso(self.started_at, zone),
            "finished_at": iso(self.finished_at, zone),
            "status": self.status.value,
            "worker": self.worker,
            "file": self.file,
            "bytes": self.bytes,
            "error": self.error,
            "schedule_id": self.schedule_id,
        }


_BACKUP_COLUMNS = tuple(f.name for f in fields(Backup))


@dataclass(frozen=True, kw_only=True, slots=True)
class Event:
    """One change: when, who (`cli`, `api`, `jobs`, `mcp:<client>` …), what (`task:12`)."""

    id: int
    at: datetime
    actor: str
    kind: str
    subject: str
    details: dict[str, Any]

    def to_json(self, zone: tzinfo) -> dict[str, Any]:
        """The event as the API and `--json` show it: `at` in the configured zone."""
        return {
            "id": self.id,
            "at": iso(self.at, zone),
            "actor": self.actor,
            "kind": self.kind,
            "subject": self.subject,
            "details": details_in_zone(self.details, zone),
        }


def details_in_zone(details: Mapping[str, Any], zone: tzinfo) -> dict[str, Any]:
    """Details as shown: the instants among them (stored in UTC, such as `lease_until`) in
    the configured zone with its offset, like every other instant ondeck shows."""
    return {key: _shown(key, value, zone) for key, value in details.items()}


def _shown(key: str, value: Any, zone: tzinfo) -> Any:
    if not (isinstance(value, str) and key.endswith(("_until", "_at"))):
        return value
    try:
        instant = datetime.fromisoformat(value)
    except ValueError:
        return value
    return iso(instant, zone) if instant.tzinfo is not None else value


def _day(value: date | None) -> str | None:
    return None if value is None else value.isoformat()


def _rules() -> ModuleType:
    """The rules module, imported on first use: the session hook never reads a rule."""
    from ondeck.core import rules

    return rules
