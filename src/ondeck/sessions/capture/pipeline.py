"""One way in for a record made on this machine, whichever door made it (a settings hook,
the mod's hand-over to `ondeck hook`, a client-mode hook): the record is written to the
spool first, durably (`spool.append` syncs it), and only then is the store tried. A hook
Claude Code kills while the store makes it wait (a write-locked SQLite, a server across a
slow network) has lost nothing: the record waits in the spool for the next hook or jobs
tick. Once the store has it, the drain that follows takes it out of the spool with the
rest, without storing it again; a record the store refused for its own content is set
aside there (`rejected.jsonl`), once.

The other ways in keep the same promise by other means: this machine's server answers a
hook's or the mod's event only once it is stored or in its own spool (sessions/intake.py),
and `session import` reads files that stay where they are until it has stored them.

Standard library only at import (the hooks' wall, entrypoints/hooks/fast_path.py).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: see host/quick_settings
if TYPE_CHECKING:
    from typing import Any, Protocol

    from ondeck.sessions.capture.spool import Apply

    class Store(Protocol):
        """Where a door's records go: `put` stores one (raising Gone or Refused), `drain`
        sends what waits in the spool, answering at once for the records in `known`."""

        problem: str

        @property
        def spool_dir(self) -> str: ...

        def put(self, record: dict[str, Any]) -> dict[str, Any]: ...

        def drain(self, known: dict[str, str | None]) -> None: ...


def debug(message: str) -> None:
    """A line on stderr when ONDECK_DEBUG is set (a hook says nothing else there)."""
    if os.environ.get("ONDECK_DEBUG"):
        sys.stderr.write(f"ondeck: {message}\n")


class Gone(Exception):
    """The store cannot take the record now: it waits in the spool."""


class Refused(Exception):
    """The store refused the record for its own content: it is set aside, not retried."""


def deliver(
    store: Store, record: dict[str, Any], known: dict[str, str | None]
) -> dict[str, Any] | None:
    """`record` written to the spool, then stored: the store's answer, or None when it
    waits in the spool (`store.problem` says why). Refused (with where it was set aside)
    when the store refused it for its content. `known` gathers, over one process, the
    records stored (None) or refused (the reason): the drain does not send them again."""
    # Here, not at the top: a hook whose event this machine's server takes never loads the
    # spool's machinery.
    from ondeck.sessions.capture import spool

    try:
        spool.append(store.spool_dir, record)  # durable before anything waits on the store
    except OSError as exc:
        # A spool that cannot be written (a full disk, a folder made read-only) must not
        # keep the record from a store that takes it: it is tried all the same.
        unwritten: OSError | None = exc
        debug(f"spool: not written first ({exc})")
    else:
        unwritten = None
    fingerprint = str(record.get("fingerprint"))
    try:
        result = store.put(record)
    except Gone as exc:
        if unwritten is not None:  # neither took it: the hook says so
            raise OSError(f"{exc}; and the spool: {unwritten}") from None
        store.problem = str(exc)
        return None
    except Refused as exc:
        known[fingerprint] = str(exc)
        _drained(store, known)  # sets it aside now (else the next drain does)
        raise
    known[fingerprint] = None
    _drained(store, known)
    return result


def delivered(
    store: Store, record: dict[str, Any], known: dict[str, str | None], where: str
) -> dict[str, Any] | None:
    """`deliver`, as a hook's door says it: ValueError (its one line) when the store refused
    the record for its content, and a debug line of where it went (`where`: "in the
    database", "through <url>")."""
    try:
        result = deliver(store, record, known)
    except Refused as exc:
        raise ValueError(f"{exc}; it is set aside in {store.spool_dir}/rejected.jsonl") from None
    if result is None:
        debug(f"{record['kind']} kept in the spool: {store.problem}")
    else:
        debug(f"{record['kind']} stored {where}")
    return result


def _drained(store: Store, known: dict[str, str | None]) -> None:
    try:
        store.drain(known)
    except Exception as exc:  # what it stored stands: the spool waits for another drain
        debug(f"spool: not drained ({exc})")


def answering_known(known: dict[str, str | None], apply: Apply) -> Apply:
    """`apply` for a drain, answering for the records in `known` without sending them (this
    process stored them already, or the store refused them): a run of others in between
    goes to `apply` as one batch, in order."""
    from ondeck.sessions.capture import spool

    def wrapped(batch: list[dict[str, Any]]) -> list[str | None]:
        answers: list[str | None] = []
        i = 0
        while i < len(batch):
            fingerprint = str(batch[i].get("fingerprint"))
            if fingerprint in known:
                answers.append(known[fingerprint])
                i += 1
                continue
            j = i
            while j < len(batch) and str(batch[j].get("fingerprint")) not in known:
                j += 1
            try:
                got = apply(batch[i:j])
            except spool.StoreGone:
                if not answers:
                    raise
                return answers
            answers += got
            if len(got) < j - i:
                return answers
            i = j
        return answers

    return wrapped
