"""Recall's query and answer: the grammar of what is asked (terms at white space, a "quoted
phrase" as one term), and the records a search gives back, as the API, the CLI and the MCP
tools show them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import Any

from ondeck.core.errors import InvalidInput
from ondeck.core.humanize import span
from ondeck.core.memory import Scope

QUERY_MAX = 200
TERMS_MAX = 16  # words of a query, as typed
DEFAULT_LIMIT = 20
MAX_LIMIT = 200
SNIPPET = 160

# What can be searched, by the name `--kind` takes.
KINDS = ("note", "decision", "handoff", "compaction", "last_word", "task")
_NOTE_KINDS = frozenset({"note", "decision", "handoff"})


# --- the query -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Word:
    """One word of a query (or a quoted phrase) and what recall looks for with it."""

    typed: str  # as typed; a phrase without its quotes
    terms: tuple[str, ...]  # its index terms (memory/recall_words.py), each once
    # Case folded text an item must hold as it is for the word to count: a quoted phrase's,
    # an identifier's (`src/ondeck/db`, `v2.1.332`); None for a plain word.
    exact: str | None
    required: bool  # a quoted phrase: an item without it is no match
    # The same word in the other language (memory/recall_glossary.py): each a set of terms
    # the word may match instead; the best of them counts.
    alternatives: tuple[tuple[str, ...], ...] = ()

    @property
    def choices(self) -> tuple[tuple[str, ...], ...]:
        return (self.terms, *self.alternatives)


@dataclass(frozen=True, slots=True)
class Query:
    text: str  # as typed, white space collapsed
    terms: tuple[str, ...]  # the words as typed (a phrase as one)
    words: tuple[Word, ...] = ()  # those that say something: what is looked for

    @property
    def phrase(self) -> str | None:
        """The whole query, when it is more than one term (`whole_query` says who holds it)."""
        return self.text if len(self.terms) > 1 and len(self.text) >= 2 else None


_TERM = re.compile(r'"([^"]*)"|(\S+)')
# Signs around a word that are not part of it (`deploy?`, `(v2.1)`).
_EDGE = "\"'`.,;:!?()[]{}<>"


def _word(token: str, quoted: bool) -> Word | None:
    from ondeck.memory.recall_glossary import alternatives
    from ondeck.memory.recall_words import runs, word_terms

    parts = list(runs(token))
    found: list[str] = []
    for part in parts:
        for term in word_terms(part):
            if term not in found:
                found.append(term)
    if not found:
        return None
    folded = " ".join(token.split()).casefold()
    if quoted:
        return Word(typed=token, terms=tuple(found), exact=folded, required=True)
    # An identifier: parts joined by signs (not a Korean particle glued to a Latin word).
    core = folded.strip(_EDGE)
    joined = len(parts) > 1 and any(not ch.isalnum() for ch in core)
    if joined:
        return Word(typed=token, terms=tuple(found), exact=core, required=False)
    held = tuple(found)
    return Word(
        typed=token, terms=held, exact=None, required=False, alternatives=alternatives(held)
    )


def _same(held: Word, word: Word) -> bool:
    """One thing asked twice: the same terms (`deploy deploying`), or one word and its other
    in the glossary (`배포 deploy`), which would otherwise count one concept twice."""
    if (held.terms, held.exact) == (word.terms, word.exact):
        return True
    plain = held.exact is None and word.exact is None
    return plain and bool(set(held.choices) & set(word.choices))


def parse_query(text: str | None) -> Query:
    raw = " ".join(str(text or "").split())
    if not raw:
        raise InvalidInput("give something to recall: one or more words")
    if len(raw) > QUERY_MAX:
        raise InvalidInput(f"the query is {len(raw)} characters long; at most {QUERY_MAX}")
    if "\x00" in raw:
        raise InvalidInput("the query must not contain NUL characters")
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput("the query is not valid text (lone surrogate characters)") from None
    terms: list[str] = []
    words: list[Word] = []
    for quoted, bare in _TERM.findall(raw):
        term = (quoted if quoted else bare).strip()
        if not term or term.casefold() in (t.casefold() for t in terms):
            continue
        terms.append(term)
        word = _word(term, bool(quoted))
        if word is not None and not any(_same(w, word) for w in words):
            words.append(word)
    if not terms:
        raise InvalidInput("give something to recall: one or more words")
    if len(terms) > TERMS_MAX:
        raise InvalidInput(f"the query has {len(terms)} words; at most {TERMS_MAX}")
    if not words:
        raise InvalidInput(
            f"nothing to look for in {raw[:60]!r}: its words are too common to search "
            "(the, how, 언제…); add a word that says what you look for"
        )
    return Query(
        text=" ".join(quoted or bare for quoted, bare in _TERM.findall(raw)),
        terms=tuple(terms),
        words=tuple(words),
    )


def parse_kinds(values: Sequence[str] | str | None) -> tuple[str, ...]:
    if values is None:
        return ()
    items = values.split(",") if isinstance(values, str) else list(values)
    found: list[str] = []
    for item in items:
        name = str(item).strip().lower().replace("-", "_")
        if not name:
            continue
        if name not in KINDS:
            raise InvalidInput(f"kind {str(item)[:30]!r} is not one of {', '.join(KINDS)}")
        if name not in found:
            found.append(name)
    return tuple(found)


# --- results ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Match:
    """Why an item matched one word of the query."""

    word: str  # the query's word as typed
    terms: tuple[str, ...]  # the index terms it matched (a stem, a Korean piece)
    forms: tuple[str, ...]  # the item's words that gave them, as written
    weight: float  # what the word added to the score

    def to_json(self) -> dict[str, Any]:
        return {
            "word": self.word,
            "terms": list(self.terms),
            "forms": list(self.forms),
            "weight": round(self.weight, 3),
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class Hit:
    kind: str  # one of KINDS
    id: int  # the note's, compaction's, session's or task's id
    session_id: int | None
    at: datetime  # when it was written (for a note: last changed)
    text: str  # the whole text searched
    side: str | None
    project: str | None
    status: str  # a note's status as true today; a task's; a session's
    origin: str
    true: bool  # may be taken as true (false: superseded, wrong or expired, labelled)
    label: str | None  # why it is not true, in words
    whole: bool = False  # holds the whole query as typed
    score: float = 0.0  # BM25 over the words it matched (memory/recall_rank.py)
    matched: tuple[Match, ...] = ()  # why: each word it matched

    @property
    def ref(self) -> str:
        if self.kind in _NOTE_KINDS:
            return f"note {self.id}"
        if self.kind == "compaction":
            return f"session {self.session_id} compaction {self.id}"
        if self.kind == "last_word":
            return f"session {self.id}"
        return f"task {self.id}"

    def snippet(self, terms: Sequence[str]) -> str:
        """One line around the first word it matched (or a word of the query)."""
        return snippet(self.text, [f for m in self.matched for f in m.forms] or terms)

    def to_json(self, zone: tzinfo, now: datetime, terms: Sequence[str]) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "id": self.id,
            "ref": self.ref,
            "session_id": self.session_id,
            "at": self.at.astimezone(zone).isoformat(),
            "age": age(self.at, now),
            "side": self.side,
            "project": self.project,
            "status": self.status,
            "true": self.true,
            "label": self.label,
            "origin": self.origin,
            "whole_query": self.whole,
            "snippet": self.snippet(terms),
            "score": round(self.score, 3),
            "matched": [m.to_json() for m in self.matched],
        }


@dataclass(kw_only=True)
class Recall:
    query: Query
    scope: Scope
    kinds: tuple[str, ...]
    include_all: bool
    limit: int
    hits: list[Hit] = field(default_factory=list)
    more: bool = False  # more matches than shown (a bigger --limit shows them)

    def to_json(self, zone: tzinfo, now: datetime) -> dict[str, Any]:
        return {
            "query": self.query.text,
            "terms": list(self.query.terms),
            "scope": {
                "side": self.scope.side,
                "project": self.scope.project,
                "unclassified": self.scope.inbox,
            },
            "kinds": list(self.kinds) or list(KINDS),
            "all": self.include_all,
            "limit": self.limit,
            "more": self.more,
            "results": [h.to_json(zone, now, self.query.terms) for h in self.hits],
        }


def age(at: datetime, now: datetime) -> str:
    return "now" if abs((now - at).total_seconds()) < 5 else f"{span(now - at)} ago"


def snippet(text: str, terms: Sequence[str], width: int = SNIPPET) -> str:
    """One line around the first term found (case folded), `…` where it was cut."""
    flat = " ".join(text.split())
    folded = flat.casefold()
    where = min((i for i in (folded.find(t.casefold()) for t in terms) if i >= 0), default=0)
    start = max(0, where - width // 3)
    end = min(len(flat), start + width)
    start = max(0, end - width)
    return ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")
