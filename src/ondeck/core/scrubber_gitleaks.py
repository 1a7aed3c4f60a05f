"""gitleaks' rule set, run by the scrubber: some 220 kinds of provider tokens and keys found
by a maintained list rather than ondeck's own (core/gitleaks.toml, MIT, from
github.com/gitleaks/gitleaks at the commit its header names).

The scrubber runs in every session hook, a new process each time, so the rules cost what a
text needs of them:
- the file is read and cut into its rules once per process, by their `[[rules]]` headers;
  only each rule's id and `keywords` are read then (parsing the whole file with `tomllib`
  takes about 40 ms, more than a hook's whole run);
- a rule runs only when one of its keywords is in the text in lower case (gitleaks' own
  prefilter); only then is its block parsed with `tomllib` and its regex compiled, once.
A match is judged as gitleaks judges it: the secret is the first group that took part (or
the rule's `secretGroup`), too little entropy drops it (`entropy`), and so do the global
allowlist's regexes and stop words and the rule's own allowlists (`regexTarget` secret,
match or line). Allowlists by path or commit never apply: a text has neither.

gitleaks' regexes are Go RE2. What Python's `re` reads differently is translated at load:
a flag group in the middle (`(?i)`) becomes a scoped one (`(?i:…)`) to the end of its
group, `\\z` is `\\Z`, a `[` inside a class is escaped, and the whole is read with
`re.ASCII` (RE2's `\\b`, `\\w`, `\\d` and `\\s` are ASCII: `토큰abc` has a word boundary).

Left out, each for its reason (`SKIPPED`): the generic API key rule, whose place ondeck's
own keyed rows take with checks made for an agent's prose and code (its stop-word list alone
costs 12 ms to parse in every hook), the two curl rules, whose regexes cost the square of a
line's length in Python's backtracking engine (ondeck's authorization and cli_password rows
find what they find), and the five rules that apply only to a file's path
(`.tf`, `.php`, `.yaml`, `nuget.config`, `.p12`).
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Iterator, Sequence

from ondeck.core.frozen import Frozen
from ondeck.core.scrubber_checks import lazy

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: see core/frozen.py
if TYPE_CHECKING:
    from typing import Any

RULES_FILE = os.path.join(os.path.dirname(__file__), "gitleaks.toml")
_RULE_HEADER = "\n[[rules]]\n"
SKIPPED = {
    "generic-api-key": "ondeck's own keyed rows (password, secret, api_key, token) take its "
    "place, with checks for code, placeholders and prose",
    # `\bcurl\b(?:.*?|.*?(?:[\r\n]{1,2}.*?){1,5})[ \t\n\r](?:-H|--header)…`: each `curl`
    # reads on to its line's end and five more, so a line of many costs the square of its
    # length in a backtracking engine (14 s for 40,000 characters of `curl `).
    "curl-auth-header": "ondeck's authorization row finds the header wherever it stands",
    "curl-auth-user": "ondeck's cli_password row finds `curl -u user:password`",
}
# A rule with a `path` applies only to files whose path matches it (`.tf`, `nuget.config`,
# `.p12`): a text has no path, so these are left out too (`hashicorp-tf-password` would take
# every `password = "…"`, placeholders included, where the path tells it Terraform's).


def translate(source: str) -> str:
    """A Go RE2 expression as Python's `re` reads it the same way."""
    out: list[str] = []
    closers = [0]  # per open group: scoped flag groups to close with it
    i, n = 0, len(source)
    in_class = class_start = False
    while i < n:
        c = source[i]
        if c == "\\":
            out.append(r"\Z" if source[i + 1 : i + 2] == "z" else source[i : i + 2])
            i += 2
            class_start = False
            continue
        if in_class:
            if c == "]" and not class_start:
                in_class = False
            out.append("\\[" if c == "[" else c)
            class_start = False
            i += 1
            continue
        if c == "[":
            in_class = class_start = True
            out.append(c)
            i += 1
            if source[i : i + 1] == "^":
                out.append("^")
                i += 1
            continue
        if c == "(":
            flags = re.match(r"\(\?([a-zA-Z-]+)\)", source[i:])
            if flags is not None:
                # RE2: the flags hold to the end of the enclosing group.
                out.append(f"(?{flags.group(1)}:")
                closers[-1] += 1
                i += flags.end()
                continue
            closers.append(0)
        elif c == ")":
            out.append(")" * closers.pop())
        out.append(c)
        i += 1
    out.append(")" * closers.pop())
    return "".join(out)


# What gitleaks' generated rules put before a key's name: lazy, outside the secret's group,
# and in some rules twice over (`[\w.-]{0,50}?(?i)[\w.-]{0,50}?`). It moves where a match
# starts, not which secret it finds; in a backtracking engine it costs 50 tries at every
# position (2,500 when doubled: 16 s for 10,000 characters of `sumo0`), so it is dropped.
_LEAD = r"[\w.-]{0,50}?"


def _drop_lead(source: str) -> str:
    dropped = True
    while dropped:
        dropped = False
        for head in ("", "(?i)"):
            if source.startswith(head + _LEAD):
                source = head + source[len(head) + len(_LEAD) :]
                dropped = True
    return source


def compile_rule(source: str) -> re.Pattern[str]:
    return re.compile(translate(_drop_lead(source)), re.ASCII)


def entropy(text: str) -> float:
    """Shannon entropy in bits per character (gitleaks' `shannonEntropy`)."""
    n = len(text)
    if not n:
        return 0.0
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


class _Allowlist(Frozen):
    target: str  # secret, match or line
    regexes: tuple[re.Pattern[str], ...]
    stopwords: tuple[str, ...]
    both: bool  # condition AND: regexes and stop words must both allow

    def allows(self, secret: str, match: str, line: str) -> bool:
        target = {"match": match, "line": line}.get(self.target, secret)
        by_regex = any(r.search(target) for r in self.regexes)
        lowered = secret.lower()
        by_word = any(w in lowered for w in self.stopwords)
        if self.both:
            checks = [by_regex] if self.regexes else []
            return bool(checks) and all(checks) and (by_word or not self.stopwords)
        return by_regex or by_word


def _allowlist(raw: dict[str, Any]) -> _Allowlist | None:
    both = str(raw.get("condition", "OR")).upper() == "AND"
    if both and (raw.get("paths") or raw.get("commits")):
        return None  # needs a path or a commit to agree: never, for a text
    return _Allowlist(
        target=raw.get("regexTarget", "secret"),
        regexes=tuple(compile_rule(r) for r in raw.get("regexes", ())),
        stopwords=tuple(w.lower() for w in raw.get("stopwords", ())),
        both=both,
    )


class _Compiled(Frozen):
    regex: re.Pattern[str]
    group: int  # secretGroup, 0 for the first group that took part
    entropy: float
    allowlists: tuple[_Allowlist, ...]


class Rule:
    """One gitleaks rule: its id and keywords read at once, the rest when a text needs it."""

    def __init__(self, rule_id: str, keywords: tuple[str, ...], block: str) -> None:
        self.id = rule_id
        self.kind = rule_id.replace("-", "_").replace(".", "_").lower()
        self.keywords = keywords
        self._block = block
        self._compiled: _Compiled | None = None

    def compiled(self) -> _Compiled:
        if self._compiled is None:
            raw = plain_fields(self._block) or read_toml(_RULE_HEADER + self._block)["rules"][0]
            lists = (_allowlist(a) for a in raw.get("allowlists", ()))
            self._compiled = _Compiled(
                regex=compile_rule(raw["regex"]),
                group=int(raw.get("secretGroup", 0)),
                entropy=float(raw.get("entropy", 0.0)),
                allowlists=tuple(a for a in lists if a is not None),
            )
        return self._compiled

    def spans(self, text: str, taken: Sequence[tuple[int, int]] = ()) -> Iterator[tuple[int, int]]:
        """The secrets this rule finds, but for those that meet a span in `taken` (found
        already, and judged by who found it): the allowlists are not even compiled for
        them."""
        rule = self.compiled()
        for match in rule.regex.finditer(text):
            start, end = _secret_span(match, rule.group)
            if start >= end or any(s < end and start < e for s, e in taken):
                continue
            secret = text[start:end]
            if rule.entropy and entropy(secret) <= rule.entropy:
                continue
            whole = match.group().strip("\n")
            line_start = text.rfind("\n", 0, match.start()) + 1
            line_end = text.find("\n", match.end())
            line = text[line_start : len(text) if line_end < 0 else line_end]
            allowlists = (*_global_allowlists(), *rule.allowlists)
            if any(a.allows(secret, whole, line) for a in allowlists):
                continue
            yield start, end


_PLAIN_KEYS = frozenset(("id", "description", "regex", "entropy", "secretGroup", "keywords"))


def plain_fields(block: str) -> dict[str, Any] | None:
    """A rule's regex, entropy and secret group, read by string methods when its block is
    in the form most are (those keys one a line, the regex a \'\'\'literal\'\'\', no
    allowlists), else None and `read_toml` reads it. Compiling the reader's own regexes
    would cost a hook more (1.3 ms) than reading the few rules a text needs."""
    if "[" + "[" in block:
        return None
    fields: dict[str, Any] = {}
    for line in block.split("\n"):
        key, equals, value = line.partition(" = ")
        if not equals or not key.isidentifier():
            continue  # a line of a list (keywords), or none
        if key not in _PLAIN_KEYS:
            return None
        if key == "regex":
            if not value[:3] == value[-3:] == "'''" or len(value) < 6:
                return None
            fields[key] = value[3:-3]
        elif key in ("entropy", "secretGroup"):
            if not value.replace(".", "", 1).isdigit():
                return None
            fields[key] = float(value) if "." in value else int(value)
    return fields if "regex" in fields else None


def _secret_span(match: re.Match[str], group: int) -> tuple[int, int]:
    if group and group <= (match.re.groups or 0):
        return match.span(group)
    for index in range(1, (match.re.groups or 0) + 1):
        if match.group(index):
            return match.span(index)
    start, end = match.span()
    whole = match.group()  # gitleaks trims line breaks from a match
    return start + len(whole) - len(whole.lstrip("\n")), end - (
        len(whole) - len(whole.rstrip("\n"))
    )


# --- the file's TOML -------------------------------------------------------------------------
#
# `tomllib` is not used here: importing it takes 20 ms and loads `typing`, which the session
# hooks keep out (tests/cli/test_hook_client.py). gitleaks writes its file from a generator in
# a small part of TOML, which this reads: `[table]` and `[[table.array]]` headers, `key =`
# a literal string ('…' or '''…'''), a basic string ("…", escapes read as JSON reads them),
# a number, or an array of these over several lines, and `#` comments.
# tests/unit/test_scrubber_gitleaks.py holds it to `tomllib` on every block of the file.

_TOKEN = lazy(
    r"""(?:\s|#[^\n]*)*(?:(?P<multi>'{3}\n?(?P<multi_body>(?:[^']|'(?!''))*)'{3})"""
    r"""|'(?P<literal>[^'\n]*)'|(?P<basic>"(?:[^"\\\n]|\\.)*")"""
    r"""|(?P<number>[+-]?[0-9]+(?P<fraction>\.[0-9]+)?)|(?P<punct>[\[\],]))"""
)
_LINE = lazy(
    r"(?:\s|#[^\n]*)*(?:\[\[(?P<array>[\w.-]+)\]\]|\[(?P<table>[\w.-]+)\]|(?P<key>\w+)[ \t]*=)"
)


class TomlError(ValueError):
    """A part of TOML this reader does not take: tomllib would be needed."""


def _value(text: str, at: int) -> tuple[object, int]:
    token = _TOKEN().match(text, at)
    if token is None:
        raise TomlError(f"no value at {at}")
    kind = token.lastgroup
    if token.group("multi") is not None:
        return token.group("multi_body"), token.end()
    if token.group("literal") is not None:
        return token.group("literal"), token.end()
    if token.group("basic") is not None:
        import json  # the hooks load it anyway

        return json.loads(token.group("basic")), token.end()
    if token.group("number") is not None:
        number = token.group("number")
        return (float(number) if token.group("fraction") else int(number)), token.end()
    if token.group("punct") != "[":
        raise TomlError(f"unexpected {token.group('punct')!r} at {at} ({kind})")
    items: list[object] = []
    at = token.end()
    while True:
        closing = _TOKEN().match(text, at)
        if closing is not None and closing.group("punct") == "]":
            return items, closing.end()
        item, at = _value(text, at)
        items.append(item)
        after = _TOKEN().match(text, at)
        if after is None or after.group("punct") not in (",", "]"):
            raise TomlError(f"no , or ] at {at}")
        if after.group("punct") == ",":
            at = after.end()


def read_toml(text: str) -> dict[str, Any]:
    """The part of TOML gitleaks' file is written in, read as `tomllib.loads` reads it."""
    root: dict[str, Any] = {}
    table = root
    at = 0
    while True:
        line = _LINE().match(text, at)
        if line is None:
            if text[at:].strip(" \t\n#") and not _only_comments(text[at:]):
                raise TomlError(f"unreadable at {at}: {text[at : at + 40]!r}")
            return root
        if line.group("array") is not None:
            *path, name = line.group("array").split(".")
            table = {}
            _table(root, path).setdefault(name, []).append(table)
            at = line.end()
        elif line.group("table") is not None:
            table = _table(root, line.group("table").split("."))
            at = line.end()
        else:
            table[line.group("key")], at = _value(text, line.end())


def _only_comments(text: str) -> bool:
    return all(not ln.strip() or ln.lstrip().startswith("#") for ln in text.splitlines())


def _table(root: dict[str, Any], path: list[str]) -> dict[str, Any]:
    table = root
    for name in path:
        found = table.setdefault(name, {})
        # `[[rules.allowlists]]` in a rule's block: the rule's own (its block is read alone).
        table = found[-1] if isinstance(found, list) else found
    return table


_GLOBAL: list[tuple[_Allowlist, ...]] = []


def _global_allowlists() -> tuple[_Allowlist, ...]:
    if not _GLOBAL:
        header = _read().split(_RULE_HEADER, 1)[0]
        raw = read_toml(header).get("allowlist", {})
        found = _allowlist(
            {"regexes": raw.get("regexes", ()), "stopwords": raw.get("stopwords", ())}
        )
        _GLOBAL.append((found,) if found is not None else ())
    return _GLOBAL[0]


def _read() -> str:
    with open(RULES_FILE, encoding="utf-8") as file:
        return file.read()


_RULES: list[tuple[Rule, ...]] = []


def rules() -> tuple[Rule, ...]:
    """Every rule of the file that runs on text, in the file's order; read once, by string
    methods: a regex anchored at line starts costs more here than all the rest (3 ms)."""
    if not _RULES:
        found = []
        for block in _read().split(_RULE_HEADER)[1:]:
            # gitleaks writes each rule's id first, and its keywords as a list of plain
            # strings; a block that does not read so is not a rule ondeck can run.
            if not block.startswith('id = "') or "\npath = " in block:
                continue
            rule_id = block[6 : block.index('"', 6)]
            at = block.find("\nkeywords = [")
            listed = block[at : block.index("]", at)] if at >= 0 else ""
            if rule_id not in SKIPPED:
                words = tuple(w.lower() for w in listed.split('"')[1::2])
                found.append(Rule(rule_id, words, block))
        _RULES.append(tuple(found))
    return _RULES[0]


_BY_WORD: list[dict[str, tuple[int, ...]]] = []


def _by_word() -> dict[str, tuple[int, ...]]:
    """keyword → the rules (by index) it lets run; rules without keywords under ""."""
    if not _BY_WORD:
        index: dict[str, list[int]] = {}
        for number, rule in enumerate(rules()):
            for word in rule.keywords or ("",):
                index.setdefault(word, []).append(number)
        _BY_WORD.append({word: tuple(numbers) for word, numbers in index.items()})
    return _BY_WORD[0]


def spans(
    text: str, lowered: str, taken: Sequence[tuple[int, int]] = ()
) -> Iterator[tuple[int, int, str]]:
    """(start, end, kind) of each secret gitleaks' rules find in `text` that meets no span
    in `taken`; `lowered` is the text in lower case, same offsets. Each keyword is looked
    for once (about 300 of them: many rules share one, such as `key` or `token`)."""
    every = rules()
    hit = {n for word, numbers in _by_word().items() if word in lowered for n in numbers}
    for number in sorted(hit):
        rule = every[number]
        for start, end in rule.spans(text, taken):
            yield start, end, rule.kind


def kinds() -> Sequence[str]:
    return [rule.kind for rule in rules()]
