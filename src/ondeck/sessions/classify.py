"""Which side and project a session belongs to, with the rule that decided and every signal
that disagreed. Pure: the hook gathers the facts (its working directory, the marker file,
git), the rules come from the settings, and the decision is a value.

Sides are a hard partition (`work`, `personal`); projects live within a side. Each is decided
by the first of these ranks that gives one, in this order:

    1. marker   `.ondeck.toml` in the working directory or a parent: project, capture
    2. path     the most specific configured path prefix (`projects`, `sides`)
    3. remote   a git remote URL matching a configured pattern (`remotes`)
    4. git      the project only: the name of the git top-level directory

The owner's settings decide sides, never a file in the directory: a marker travels with a
clone (committed in someone's repository, or left in a parent folder), and a side is a
privacy partition. A marker may name a project, and may only make capture stricter
(`capture = false`; `capture = true` overrides nothing). A marker that names a side the
owner's rules do not give makes the session unclassified, with both named; one that names
the same side agrees, and changes nothing.

Paths are compared where they really are: the working directory and each configured
prefix resolved through symlinks (`Facts.real_cwd`), so a link into `~/personal` from
under `~/work` is classified as personal (and the record keeps both paths).

Every signal of a lower rank that names another value is kept as a disagreement: shown, never
silently resolved. The session is **unclassified** (an inbox a person resolves, shown to no
other session) when sides are configured and no rule gives one, when signals of the same rank
disagree, or when a rule that exists cannot be read (a broken marker, an unknown side). The
git top-level's name is a fallback, not a rule: it decides only where no rule speaks, and
never counts as disagreeing with one. With no sides configured there is one pool and nothing
is unclassified.

`capture = false` (a marker, or a configured `no_capture` prefix) keeps the session's times,
side and project only; any rule saying so wins.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence

from ondeck.core.frozen import Frozen
from ondeck.host.quick_settings import is_name, join, posix_path

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: see host/quick_settings
if TYPE_CHECKING:
    from typing import Any

MARKER = ".ondeck.toml"
MARKER_MAX_BYTES = 64 * 1024
RANKS = ("marker", "path", "remote", "git")
FIELDS = ("side", "project")


class Marker(Frozen):
    path: str
    side: str | None = None
    project: str | None = None
    capture: bool | None = None
    problem: str | None = None  # unreadable, or a value that is not a name

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "side": self.side,
            "project": self.project,
            "capture": self.capture,
            "problem": self.problem,
        }


class Facts(Frozen):
    """What a hook sees from its working directory."""

    cwd: str | None = None
    real_cwd: str | None = None  # `cwd` through its symlinks, when that is another path
    marker: Marker | None = None
    git_root: str | None = None
    worktree_of: str | None = None  # the main checkout, when git_root is a linked worktree
    git_note: str | None = None  # why git said less than it should (it did not answer)
    branch: str | None = None
    head: str | None = None
    remotes: Mapping[str, str] = {}  # name → URL, credentials removed


class Rules(Frozen):
    projects: Mapping[str, str] = {}  # path prefix → project
    sides: Mapping[str, Sequence[str]] = {}  # side → path prefixes
    remotes: Mapping[str, Mapping[str, str]] = {}  # pattern → rule
    no_capture: Sequence[str] = ()  # path prefixes

    @classmethod
    def of(cls, config: Any) -> Rules:
        """The rules of a `HookConfig` or `Settings`."""
        return cls(
            projects=config.projects,
            sides=config.sides,
            remotes=config.remotes,
            no_capture=config.no_capture,
        )


class Signal(Frozen):
    rule: str  # one of RANKS
    field: str  # side, project or capture
    value: Any  # a name, or a bool for capture
    source: str  # where it came from: the marker's path, the prefix, the remote and pattern


class Decision(Frozen):
    value: Any = None
    rule: str = "none"
    source: str | None = None


class Disagreement(Frozen):
    field: str
    decided: Decision
    signals: tuple[Signal, ...]  # the signals that name another value (or, same rank, all)
    same_rank: bool


class Classification(Frozen):
    side: Decision
    project: Decision
    capture: Decision
    unclassified: bool
    reason: str
    signals: tuple[Signal, ...] = ()
    disagreements: tuple[Disagreement, ...] = ()
    problems: tuple[str, ...] = ()
    real_cwd: str | None = None  # the directory the rules were applied to, when not cwd

    def to_json(self, *, private: bool = False) -> dict[str, Any]:
        """As records and rows keep it; `private` (capture off) leaves out every place."""

        def decision(d: Decision) -> dict[str, Any]:
            return {"value": d.value, "rule": d.rule, "source": None if private else d.source}

        def signal(s: Signal) -> dict[str, Any]:
            return {
                "rule": s.rule,
                "field": s.field,
                "value": s.value,
                "source": None if private else s.source,
            }

        shown: dict[str, Any] = {
            "side": decision(self.side),
            "project": decision(self.project),
            "capture": decision(self.capture),
            "unclassified": self.unclassified,
            "reason": self.reason if not private else _private_reason(self),
            "signals": [signal(s) for s in self.signals],
            "disagreements": [
                {
                    "field": d.field,
                    "decided": decision(d.decided),
                    "signals": [signal(s) for s in d.signals],
                    "same_rank": d.same_rank,
                }
                for d in self.disagreements
            ],
            "problems": [] if private else list(self.problems),
        }
        if self.real_cwd and not private:
            shown["real_cwd"] = self.real_cwd
        return shown


def _private_reason(c: Classification) -> str:
    if c.unclassified:
        return "unclassified (capture off: the places that decided are not kept)"
    return (
        f"side {c.side.value or '-'} by {c.side.rule}, project {c.project.value or '-'} by "
        f"{c.project.rule} (capture off: the places that decided are not kept)"
    )


# --- facts -----------------------------------------------------------------------------


def read_marker(cwd: str | None) -> Marker | None:
    """The nearest `.ondeck.toml` in `cwd` or a parent, read; None when there is none."""
    if not cwd:
        return None
    for folder in _folders(cwd):
        path = join(folder, MARKER)
        try:
            with open(path, "rb") as handle:
                data = handle.read(MARKER_MAX_BYTES + 1)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:  # there, but not readable: a rule that cannot be read
            return Marker(path=str(path), problem=f"cannot be read ({exc.strerror or exc})")
        return _parse_marker(str(path), data)
    return None


def _folders(cwd: str) -> Iterator[str]:
    """`cwd` and its parents, as `(Path(cwd), *Path(cwd).parents)` gives them (no pathlib:
    a hook's whole process is measured against `python -c pass`)."""
    here = posix_path(cwd)
    while True:
        yield here
        up = os.path.dirname(here) or "."
        if up == here:
            return
        here = up


def _parse_marker(path: str, data: bytes) -> Marker:
    import tomllib

    if len(data) > MARKER_MAX_BYTES:
        return Marker(path=path, problem=f"larger than {MARKER_MAX_BYTES} bytes")
    try:
        document = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return Marker(path=path, problem=f"not valid TOML ({' '.join(str(exc).split())[:120]})")
    values: dict[str, Any] = {}
    for key in ("side", "project"):
        value = document.get(key)
        if value is None:
            continue
        if not is_name(value):
            return Marker(path=path, problem=f"{key} {str(value)[:60]!r} is not a {key} name")
        values[key] = value
    capture = document.get("capture")
    if capture is not None and not isinstance(capture, bool):
        return Marker(path=path, problem="capture must be true or false")
    return Marker(path=path, capture=capture, **values)


def project_name(folder: str) -> str | None:
    """A directory name as a project name (`[A-Za-z0-9._-]{1,64}`), or None."""
    cleaned = "".join(c if (c.isalnum() and c.isascii()) or c in "._-" else "-" for c in folder)
    cleaned = cleaned.strip("-")[:64]
    return cleaned or None


# --- rules -----------------------------------------------------------------------------


def _norm(path: str) -> str:
    return os.path.normpath(os.path.expanduser(path))


def _real(path: str) -> str:
    """A configured prefix where it really is (through its symlinks; as written if not)."""
    return os.path.realpath(_norm(path))


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _longest(path: str | None, prefixes: Sequence[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """The most specific prefixes holding `path` (several only when equally specific), each
    prefix taken where it really is, as `path` is (`Facts.real_cwd`)."""
    if not path:
        return []
    here = _norm(path)
    found = [(p, v, real) for p, v in prefixes if _under(here, real := _real(p))]
    if not found:
        return []
    depth = max(len(real) for _, _, real in found)
    return [(p, v) for p, v, real in found if len(real) == depth]


def remote_forms(url: str) -> tuple[str, ...]:
    """A remote URL as patterns may name it: as configured (without credentials) and as
    `host/owner/repo` (`git@github.com:acme/site.git` → `github.com/acme/site`)."""
    bare = strip_credentials(url)
    rest = bare
    _scheme, sep, after = rest.partition("://")
    if sep:
        rest = after
    elif ":" in rest and "@" in rest.split(":", 1)[0]:  # scp-like user@host:path
        host, _, path = rest.partition(":")
        rest = f"{host}/{path}"
    rest = rest.split("@", 1)[-1] if "@" in rest.split("/", 1)[0] else rest
    host, _, path = rest.partition("/")
    host = host.split(":", 1)[0].lower()  # a port is not part of the name
    path = path.removesuffix("/").removesuffix(".git")
    short = f"{host}/{path}" if path else host
    return (bare, short) if short != bare else (bare,)


def strip_credentials(url: str) -> str:
    """`https://user:token@host/x` → `https://host/x`: a token never leaves the machine."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = authority.rsplit("@", 1)[1]
    return f"{scheme}://{authority}{slash}{path}"


def signals_of(facts: Facts, rules: Rules) -> tuple[list[Signal], list[str]]:
    """Every signal the facts give under the rules, in rank order, and what could not be read."""
    found: list[Signal] = []
    problems: list[str] = []
    marker = facts.marker
    if marker is not None:
        if marker.problem:
            problems.append(f"marker {marker.path}: {marker.problem}")
        for name in ("side", "project"):
            value = getattr(marker, name)
            if value is not None:
                found.append(Signal(rule="marker", field=name, value=value, source=marker.path))
        if marker.capture is not None:
            found.append(
                Signal(rule="marker", field="capture", value=marker.capture, source=marker.path)
            )
    place = facts.real_cwd or facts.cwd
    for prefix, project in _longest(place, list(rules.projects.items())):
        found.append(Signal(rule="path", field="project", value=project, source=prefix))
    side_prefixes = [(p, side) for side, prefixes in rules.sides.items() for p in prefixes]
    for prefix, side in _longest(place, side_prefixes):
        found.append(Signal(rule="path", field="side", value=side, source=prefix))
    for prefix, _ in _longest(place, [(p, False) for p in rules.no_capture]):
        found.append(Signal(rule="path", field="capture", value=False, source=prefix))
    if rules.remotes and facts.remotes:
        from fnmatch import fnmatchcase

        for name, url in sorted(facts.remotes.items()):
            forms = remote_forms(url)
            for pattern, rule in rules.remotes.items():
                if any(fnmatchcase(form, pattern) for form in forms):
                    for key in FIELDS:
                        if key in rule:
                            source = f"{name} {forms[-1]} ~ {pattern}"
                            found.append(
                                Signal(rule="remote", field=key, value=rule[key], source=source)
                            )
    if facts.git_root:
        # A worktree is its repository's: named by the main checkout (a bare `site.git`
        # by `site`), so it shares the project, its handoff and its memory.
        main = facts.worktree_of or facts.git_root
        folder = project_name(os.path.basename(posix_path(main)).removesuffix(".git"))
        source = facts.git_root
        if facts.worktree_of:
            source = f"{facts.worktree_of} (worktree {facts.git_root})"
        if folder:
            found.append(Signal(rule="git", field="project", value=folder, source=source))
    return found, problems


def classify(facts: Facts, rules: Rules) -> Classification:
    """The side and project of a session, with the rule that decided and every disagreement."""
    signals, problems = signals_of(facts, rules)
    sides_on = bool(rules.sides)
    undecided: list[str] = []
    disagreements: list[Disagreement] = []
    decisions: dict[str, Decision] = {}
    for name in FIELDS:
        mine = [s for s in signals if s.field == name]
        if name == "side" and not sides_on:
            decisions[name] = Decision()
            continue
        marked: list[Signal] = []
        if name == "side":
            unknown = [s for s in mine if s.value not in rules.sides]
            for s in unknown:
                problems.append(
                    f"{s.rule} {s.source} names side {s.value!r}, which is not configured "
                    f"(sides: {', '.join(sorted(rules.sides))})"
                )
            mine = [s for s in mine if s.value in rules.sides]
            marked = [s for s in mine if s.rule == "marker"]
            mine = [s for s in mine if s.rule != "marker"]  # only the owner's rules decide
        decision, found, conflict = _decide(mine)
        decisions[name] = decision
        disagreements += found
        if conflict:
            undecided.append(f"{conflict} disagree on the {name}")
        contrary = tuple(s for s in marked if s.value != decision.value)
        if contrary:
            disagreements.append(
                Disagreement(field=name, decided=decision, signals=contrary, same_rank=False)
            )
            undecided.append(_marker_side_words(contrary, decision))
    capture_off = [s for s in signals if s.field == "capture" and s.value is False]
    capture = (
        Decision(value=False, rule=capture_off[0].rule, source=capture_off[0].source)
        if capture_off
        else Decision(value=True)
    )
    if sides_on and decisions["side"].value is None and not undecided:
        undecided.append(
            f"no rule gives a side (sides configured: {', '.join(sorted(rules.sides))})"
        )
    if problems and sides_on:
        undecided += problems
    unclassified = sides_on and bool(undecided)
    if unclassified:
        decisions = {name: Decision() for name in FIELDS}
        reason = "unclassified: " + "; ".join([*undecided, *_git_words(facts)])
    else:
        reason = _reason(decisions, undecided, problems, _git_words(facts))
    return Classification(
        side=decisions["side"],
        project=decisions["project"],
        capture=capture,
        unclassified=unclassified,
        reason=reason,
        signals=tuple(signals),
        disagreements=tuple(disagreements),
        problems=tuple(problems),
        real_cwd=facts.real_cwd if facts.real_cwd != facts.cwd else None,
    )


def _marker_side_words(contrary: tuple[Signal, ...], decided: Decision) -> str:
    """Why a marker's side leaves the session unclassified, naming both sides."""
    said = ", ".join(f"the marker {s.source} names side {s.value}" for s in contrary)
    if decided.value is None:
        owner = "no rule of the owner's settings gives a side"
    else:
        owner = f"the owner's settings give side {decided.value} by {_rule_words(decided)}"
    return f"{said}, but {owner} (only the owner's settings decide a side)"


def _decide(signals: list[Signal]) -> tuple[Decision, list[Disagreement], str | None]:
    """The first rank that speaks decides; lower ranks that name another value disagree.
    Returns the decision, the disagreements, and which rule disagreed with itself (if any)."""
    for rank in RANKS:
        here = [s for s in signals if s.rule == rank]
        if not here:
            continue
        values = {s.value for s in here}
        if len(values) > 1:
            field_ = here[0].field
            return (
                Decision(),
                [
                    Disagreement(
                        field=field_, decided=Decision(), signals=tuple(here), same_rank=True
                    )
                ],
                f"{rank} rules",
            )
        chosen = here[0]
        decided = Decision(value=chosen.value, rule=rank, source=chosen.source)
        below = RANKS[RANKS.index(rank) + 1 :]
        # The git top-level's name is a fallback, not a rule: it never disagrees with one.
        other = tuple(
            s for s in signals if s.rule in below and s.rule != "git" and s.value != chosen.value
        )
        found = []
        if other:
            found.append(
                Disagreement(field=chosen.field, decided=decided, signals=other, same_rank=False)
            )
        return decided, found, None
    return Decision(), [], None


def _reason(
    decisions: dict[str, Decision],
    undecided: list[str],
    problems: list[str],
    git: list[str] | None = None,
) -> str:
    parts = []
    for name in FIELDS:
        d = decisions[name]
        if d.value is None:
            continue
        parts.append(f"{name} {d.value} by {_rule_words(d)}")
    git = git or []
    if parts:
        text = "; ".join(parts)
    elif git:  # not "no rule applies": the rule that would have applied could not be read
        text = "no side or project"
    else:
        text = "no side or project: no rule applies"
    if undecided or problems or git:
        text += " (" + "; ".join([*undecided, *problems, *git]) + ")"
    return text


def _git_words(facts: Facts) -> list[str]:
    """What a reason says when git did not answer: not "no rule applies"."""
    if not facts.git_note:
        return []
    if facts.git_root:
        return [f"{facts.git_note}; the repository {facts.git_root} was found by its files"]
    return [facts.git_note]


def _rule_words(d: Decision) -> str:
    return {
        "marker": f"the marker {d.source}",
        "path": f"the path prefix {d.source}",
        "remote": f"the remote {d.source}",
        "git": f"the git top-level {d.source}",
        "moved": "a person (moved)",
    }.get(d.rule, d.rule)


def from_json(data: Any) -> dict[str, Any]:
    """A classification as records carry it, checked: raises ValueError with the reason."""
    if not isinstance(data, dict):
        raise ValueError("classification must be an object")
    out: dict[str, Any] = {}
    for name in ("side", "project", "capture"):
        d = data.get(name)
        if not isinstance(d, dict):
            raise ValueError(f"classification.{name} must be an object")
        value, rule, source = d.get("value"), d.get("rule"), d.get("source")
        if name == "capture":
            if not isinstance(value, bool):
                raise ValueError("classification.capture.value must be true or false")
        elif value is not None and not is_name(value):
            raise ValueError(f"classification.{name}.value is not a {name} name")
        if rule not in (*RANKS, "none", "moved"):
            raise ValueError(f"classification.{name}.rule {str(rule)[:20]!r} is not a rule")
        if source is not None and (not isinstance(source, str) or len(source) > 4000):
            raise ValueError(f"classification.{name}.source must be text")
        out[name] = {"value": value, "rule": rule, "source": source}
    unclassified = data.get("unclassified")
    if not isinstance(unclassified, bool):
        raise ValueError("classification.unclassified must be true or false")
    if unclassified and (out["side"]["value"] or out["project"]["value"]):
        raise ValueError("an unclassified session has no side or project")
    reason = data.get("reason")
    if not isinstance(reason, str) or len(reason) > 4000:
        raise ValueError("classification.reason must be text")
    out["unclassified"] = unclassified
    out["reason"] = reason
    real = data.get("real_cwd")
    if real is not None and (not isinstance(real, str) or len(real) > 4000 or "\x00" in real):
        raise ValueError("classification.real_cwd must be a path")
    if real is not None:
        out["real_cwd"] = real
    for name in ("signals", "disagreements", "problems"):
        items = data.get(name, [])
        if not isinstance(items, list) or len(items) > 200:
            raise ValueError(f"classification.{name} must be a list")
        wanted = str if name == "problems" else dict
        if not all(isinstance(item, wanted) for item in items):
            raise ValueError(f"classification.{name} holds an item of the wrong kind")
        out[name] = items
    import json

    if len(json.dumps(out, ensure_ascii=False)) > 64_000:
        raise ValueError("classification is too large")
    return out
