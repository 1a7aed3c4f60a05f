"""Privacy at the door: what may be stored of a text, and which files are never listed.

`scrub(text)` runs before any text is stored, at one gate (db/gate.py: the column types
of db/tables.py and the plain statements' parameters), and where a session's texts are
captured (sessions/hook_events.py, which counts what it removed):

1. `<private>…</private>` spans are removed, tags included. Tags are case-insensitive, may
   carry spaces or attributes and span lines. Nested tags are counted, so the span ends
   at the closing tag that matches the outermost opening one (one redaction in all). An
   unclosed `<private>` removes everything to the end of the text: a forgotten closing tag
   must not leak what the writer meant to hide. A stray `</private>` is left as it is.
2. Secrets are replaced by `[redacted:KIND]`, row by row of `PATTERNS`. Each row keeps
   what is not secret around the value (`password=[redacted:password]` keeps the key
   name, separator and quotes) and may refuse a match that is only code or a placeholder
   (`password=None`, `token=${TOKEN}`). Spans found by several rows are merged into one
   redaction named after the earliest row (the most specific). Scrubbing is idempotent:
   no row reads into a `[redacted:KIND]` marker, and what the replacements left is
   scanned again until nothing more is found (`scrub`).

The result carries the text and how many spans were removed or replaced, per kind; never
the values. It uses the standard library only: it runs in the session hooks at every turn,
where it takes about a millisecond for an 8,000-character message. No regular expression
here can match the same characters in two ways (no nested or adjacent quantifiers over the
same characters) and each scan from a start is bounded by a delimiter, so a hostile text
costs time in proportion to its size (tests/unit/test_scrubber.py runs 100,000-character
ones).

Hex (`hex_secret`, before the last row): a run of 32 or more hex digits (one case, digits
and letters, 8 distinct or more) is a secret (`openssl rand -hex 32`, Datadog's keys, many
API keys) unless where it stands names it: a digest word before it on its line (`sha256`,
`md5`, `checksum`, `integrity`…), or, for 40 or 64 digits (git's SHA-1 and SHA-256 object
names), a git word before it on its line (`commit`, `sha`, `HEAD`, `tree`, `checkout`,
`git`…, so also `/commit/<sha>` and `/blob/<sha>/` in URLs), the start of a line of git's
output that goes on (`git log --oneline`, `rev-list`, `ls-remote`), a range (`a..b`), or
the whole text (`git rev-parse HEAD`, a session's head). A Notion page's id in its URL
stays too. Alone on its own line of a longer text, a 64-digit run is what `openssl rand
-hex 32` prints, and is redacted; a whole text of 64 digits stays (a SHA-256 repository's
head): that is the one case the two cannot be told apart.

Tokens that are small numbers (`--token 1042`, `"token": 7`, `토큰: 4096`) are counters,
ondeck's own lease tokens among them, not secrets.

High entropy (the last row) is a run of the base64 alphabets (A–Z a–z 0–9 + / _ -, `=`
padding), at least 30 characters from a letter or digit to a letter or digit, that
- mixes upper case, lower case and digits: hex (git SHAs, digests, UUIDs) has no upper
  and lower case together, and is too common in an agent's text to redact at 4 bits a
  character; words and paths rarely hold all three;
- has a Shannon entropy of at least 0.8 × log2(min(length, 64)) bits per character: a
  random 32-character token has about 4.5 (the bound is 4.0), an identifier about 3.9;
- has less than 60% of its characters in word-like runs (`Word`, `word`, `WORD`, four
  letters or more): identifiers and URL paths are made of words, random text is not;
- is not base64 of ordinary text: a token that decodes to printable text with spaces is
  judged by what it says (redacted only if that text holds a secret).
A run split by `/`, `_` or `-` into two or more word-like parts (a path such as
`com/python/cpython/blob/…`, `Cryptography_HAS_TLSv1_3`) is judged part by part.
Not high entropy: an SSH public key's blob (base64 that spells its own key type), a
package's integrity (`sha512-…` of the digest's size), a document's id after `/d/` or
`/folders/` in its URL (Google Docs, Drive).
Random tokens of 32 to 40 characters miss these bounds about 1 time in 100 (64: 1 in 400);
secrets with a known shape or a key name are caught by the rows above it.
"""

from __future__ import annotations

import binascii
import fnmatch
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence

from ondeck.core.frozen import Frozen

__all__ = [
    "DEFAULT_PRIVATE_GLOBS",
    "PATTERNS",
    "Pattern",
    "Scrubbed",
    "is_private_path",
    "marker",
    "scrub",
    "scrub_many",
]


class Scrubbed(Frozen, kw_only=False):
    text: str  # what may be stored
    redactions: int  # how many spans were replaced or removed in all
    kinds: dict[str, int]  # per kind, e.g. {"private": 1, "aws_key_id": 2}


Span = tuple[int, int]
_COMPILED: dict[str, re.Pattern[str]] = {}


class Pattern(Frozen, kw_only=False):
    """One row of the table: what it finds, and what of a match it keeps."""

    kind: str
    source: str  # the regular expression; `regex` compiles it when a text first needs it
    keeps: str  # for people: what stays around `[redacted:KIND]`
    # Lower-case strings of which every match holds one: without any, the row is skipped
    # (most texts hold no secret, and a substring test is far cheaper than a regex scan).
    hints: tuple[str, ...] = ()
    # The regex reads the text with ASCII letters in lower case (same offsets): case-blind
    # keys without re.IGNORECASE, which would cost the regex engine its literal-prefix scan.
    folded: bool = False
    # The spans to replace, none when the match is code or a placeholder; it is given the
    # text itself. Without a check: the group whose name starts with `secret` that took
    # part, else the whole match.
    check: Callable[[re.Match[str], str], Sequence[Span]] | None = None

    @property
    def regex(self) -> re.Pattern[str]:
        # Compiled on first use and kept: each hook is a new process, and one that never
        # meets a row's hints should not pay for compiling it (most of the import's cost).
        compiled = _COMPILED.get(self.source)
        if compiled is None:
            compiled = _COMPILED[self.source] = re.compile(self.source)
        return compiled

    def spans(self, text: str, lowered: str) -> Iterator[Span]:
        if self.hints and not any(hint in lowered for hint in self.hints):
            return
        for match in self.regex.finditer(lowered if self.folded else text):
            if self.check is None:
                yield _secret_span(match)
            else:
                yield from self.check(match, text)


def marker(kind: str) -> str:
    return f"[redacted:{kind}]"


def _secret_span(match: re.Match[str]) -> Span:
    for name, value in match.groupdict().items():
        if value is not None and name.startswith("secret"):
            return match.span(name)
    return match.span()


# --- values that are code, placeholders or prose, not secrets ---------------------------
#
# A key such as `password` or `token` is followed as often by code (`password=password`,
# `token = get_token()`, `token: str`) and prose ("the CSRF token: refused") as by a
# secret. What is refused here is what a secret cannot plausibly be.

# Words that follow `password =` or `token:` in code, never as a secret.
# fmt: off
_CODE_WORDS = frozenset((
    "none", "null", "nil", "true", "false", "undefined", "str", "string", "bytes", "int",
    "bool", "boolean", "float", "number", "any", "optional", "secretstr", "secretbytes",
    "object", "dict", "list", "text", "char", "varchar", "await", "new", "lambda", "self",
    "this", "function", "async", "yield", "not", "required", "env",
))
# fmt: on
_MASK = frozenset("*•xX.·-_ ")
# `=` and `:` start no value: `token == x` is caught as `==`, `token::Kind` is a path.
_PLACEHOLDER_START = ("$", "%", "{", "<", "[", "#{", "@", "=", ":")
_NAME_PATH = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*", re.ASCII)
_LETTERS = re.compile(r"[A-Za-z_]+", re.ASCII)
_AFTER_ANNOTATION = re.compile(r"[ \t]*[=|,)\]]", re.ASCII)
# Before a key that starts a line: indentation, `export `, `set `, a YAML list dash, a quote.
_LINE_START = re.compile(r"[ \t]*(?:(?:export|set|setenv)[ \t]+|-[ \t]+)?\\?[\"']?", re.ASCII)
_TRAILING = ".:"
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def _squash(text: str) -> str:
    return re.sub(r"[\W_]", "", text).lower()


def _placeholder(value: str, names: Sequence[str]) -> bool:
    """Short, templated (`${X}`, `<password>`, `{token}`), masked (`****`), already redacted,
    or a name rather than a value: a snake_case or upper-case word (`"_sa_default"`,
    `"NULL"`, `"CHANGE_ME"`), the key's own (`password=password`, `"Password"`) or one that
    holds the key's word without a digit (`"lease_token"`, "Enter your password")."""
    if len(value.strip()) < 4 or value.startswith(_PLACEHOLDER_START) or set(value) <= _MASK:
        return True
    if _LETTERS.fullmatch(value) and ("_" in value or value.isupper()):
        return True
    squashed = _squash(value)
    if any(squashed == _squash(name) for name in names):
        return True
    return not any(c.isdigit() for c in value) and any(_squash(n) in squashed for n in names)


def _key_start(text: str, word_start: int) -> int | None:
    """Where the key ends by a keyword starts (`DB_PASSWORD` for `PASSWORD`), or None when
    the keyword is only the tail of another word (`compass`, `bypass`)."""
    before = text[word_start - 1] if word_start else ""
    camel_step = (before.islower() or before.isdigit()) and text[word_start].isupper()
    if before.isascii() and before.isalnum() and not camel_step:
        return None  # not after `_`, `-`, `.` nor a camelCase step
    start = word_start
    while start and text[start - 1] in _KEY_CHARS:
        start -= 1
    return start


def _assignment_check(match: re.Match[str], text: str) -> Sequence[Span]:
    flag = match.group("word") is None
    word = match.group("fword" if flag else "word")
    key_start = match.start() if flag else _key_start(text, match.start("word"))
    if key_start is None:
        return ()
    key = text[key_start : match.end("fword" if flag else "word")]
    if match.group("sep") == ">" and text[key_start - 1 : key_start] != "<":
        return ()  # `>` ends a key only as an XML element: `<password>…</password>`
    for group in ("secret_dq", "secret_sq", "secret_eq", "secret_open"):
        if match.group(group) is not None:
            start, end = match.span(group)
            value = text[start:end]
            if _placeholder(value, (key, word)) or _counter(word, value):
                return ()
            return ((start, end),)
    start = match.start("secret")
    value = text[start : match.end("secret")].rstrip(_TRAILING)
    end = start + len(value)
    if _placeholder(value, (key, word)) or value.lower() in _CODE_WORDS or _counter(word, value):
        return ()
    if _NAME_PATH.fullmatch(value) and ("." in value or text[end : end + 1] in ("(", "[")):
        return ()  # code: `token = get_token()`, `os.environ["X"]`, `self.token`
    if (
        match.group("sep") == ":"
        and _NAME_PATH.fullmatch(value)
        and _AFTER_ANNOTATION.match(text, end)
    ):
        return ()  # an annotation: `token: Token | None = None`, `password: Secret,`
    if _LETTERS.fullmatch(value):
        # A plain word is a secret where configuration is written (`password = letmein` at
        # the start of a line, `--password letmein`); elsewhere it is prose ("the token:
        # only") or a variable (`f(token=tok)`, also when the call spans lines).
        line = text.rfind("\n", 0, key_start) + 1
        configured = key.startswith("--") or _LINE_START.fullmatch(text, line, key_start)
        if not configured or text[end : end + 1] in (",", ")"):
            return ()
    return ((start, end),)


def _counter(word: str, value: str) -> bool:
    """A token that is a small number is a counter, not a secret: ondeck's own lease tokens
    (`--token 1042`, `"token": 7`), a model's token counts (`토큰: 4096`)."""
    return word in ("token", "토큰") and value.isascii() and value.isdigit() and len(value) <= 12


def _value_check(match: re.Match[str], text: str) -> Sequence[Span]:
    """A value taken by its position (after `-p`, `password` in .netrc): any length, unless
    it is a template or a mask (`-p$MYSQL_PWD`, `password ****`)."""
    start, end = _secret_span(match)
    value = text[start:end].strip("'\"")
    if not value or value.startswith(_PLACEHOLDER_START) or set(value) <= _MASK:
        return ()
    return ((start, end),)


_KOREAN_WORDS = ("비밀번호", "패스워드", "비번", "암호", "토큰")


def _korean_check(match: re.Match[str], text: str) -> Sequence[Span]:
    word, (start, end) = match.group("word"), match.span("secret")
    value = text[start:end].rstrip(_TRAILING + "。")
    end = start + len(value)
    if _placeholder(value, (word, "password", "token")) or _counter(word, value):
        return ()
    if match.group("sep") is None and (
        not value.isascii() or value.isalpha() or not value.isprintable()
    ):
        return ()  # "비밀번호는 나중에": after 는/은 only a value that looks like one
    return ((start, end),)


# --- hex ------------------------------------------------------------------------------------

# Git's object names and digests are hex, and so are secrets made with `openssl rand -hex`,
# Datadog's keys and many API keys: a run of 32 or more hex digits is a secret unless where
# it stands says it is a name or a digest.
_GIT_WORDS = re.compile(
    r"(?<![a-z0-9_])(?:commits?|sha|sha1|rev|revision|head|tree|blob|parent|merge|object|refs?"
    r"|cherry-pick|revert|checkout|reset|fixup|squash|pick|rebase|bisect|git)(?![a-z0-9_])"
)
_DIGEST_WORDS = re.compile(
    r"(?<![a-z0-9])(?:md5|sha1|sha224|sha256|sha384|sha512|shasum|md5sum|sha1sum|sha256sum"
    r"|sha512sum|checksum|digest|hash|etag|integrity|b3sum|blake2b?|blake3)(?![a-z0-9])"
)
_GIT_LENGTHS = (40, 64)  # SHA-1 and SHA-256 object names
_LOOK_BACK = 80


def _hex_check(match: re.Match[str], text: str) -> Sequence[Span]:
    """A hex run stays when it is
    - a digest: a digest word (md5, sha256, checksum, hash, integrity…) before it on its line;
    - a git object name (40 or 64 digits): a git word (commit, sha, rev, HEAD, tree, blob,
      checkout, git…) before it on its line, a line of git's output that starts with it
      and goes on (`git log --oneline`, `rev-list`, `ls-remote`), a range (`a..b`), or the
      whole text (`git rev-parse HEAD`, a session's head);
    - a Notion page's id in its URL.
    Anything else, in prose or alone on a line of a longer text (what `openssl rand -hex 32`
    prints), is a secret."""
    start, end = match.span()
    run = text[start:end]
    if len(set(run)) < 8 or run.isdigit() or not any(c.isdigit() for c in run):
        return ()  # not random: `AAAA…`, a long number, `deadbeefcafe…` spelled out
    line_start = text.rfind("\n", 0, start) + 1
    before = text[max(line_start, start - _LOOK_BACK) : start].lower()
    if _DIGEST_WORDS.search(before):
        return ()
    line_end = text.find("\n", end)
    after = text[end : len(text) if line_end < 0 else line_end]
    if end - start in _GIT_LENGTHS:
        if not text[:start].strip() and not text[end:].strip():
            return ()
        if _GIT_WORDS.search(before):
            return ()
        at_line_start = not text[line_start:start].strip(" \t*|/\\")
        if at_line_start and after[:1] in (" ", "\t") and after.strip():
            return ()
        if before.endswith("..") or after.startswith(".."):
            return ()
    token_start = max(text.rfind(" ", line_start, start), text.rfind("\t", line_start, start))
    token = text[token_start + 1 : start].lower()
    if "notion.so/" in token or "notion.site/" in token:
        return ()
    return ((start, end),)


_SCHEME_WORDS = ("password", "pass", "secret", "token", "authorization", "bearer", "basic")


def _url_password_check(match: re.Match[str], text: str) -> Sequence[Span]:
    start, end = match.span("secret")
    return () if _placeholder(text[start:end], _SCHEME_WORDS) else ((start, end),)


def _authorization_check(match: re.Match[str], text: str) -> Sequence[Span]:
    start, end = _secret_span(match)
    value = text[start:end]
    if _placeholder(value, _SCHEME_WORDS):
        return ()  # `Bearer $TOKEN`, `Authorization: <token>`
    if _NAME_PATH.fullmatch(value) and not any(c.isdigit() for c in value):
        return ()  # code: `{"Authorization": auth_header}`
    return ((start, end),)


# --- high entropy --------------------------------------------------------------------------

# 30 from a letter or digit to a letter or digit: a 32-character base64 token may begin or
# end with `+`, `/`, `-` or `_`, which the run leaves out (so that `https://` stays).
_MIN_RANDOM = 30
_WORDS = re.compile(r"[A-Z]?[a-z]{4,}|[A-Z]{4,}", re.ASCII)
_WORD_PART = re.compile(
    r"(?:[A-Z][a-z]{2,}|[a-z]{2,})(?:[A-Z][a-z]{2,})*|[A-Z]{2,}[a-z]*", re.ASCII
)
_PART_SEPARATOR = re.compile(r"[/_-]")
_DIGIT = re.compile(r"[0-9]")
_TEXT_CONTROLS = str.maketrans("", "", "\n\r\t")


# c·log2(c) for the counts of characters in a run (a run of random text may hold hundreds
# of tokens: a table keeps the sum in C).
_XLOGX = tuple(c * math.log2(c) if c else 0.0 for c in range(1024))


def _entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    n = len(text)
    counts = Counter(text).values()
    if n < len(_XLOGX):
        return math.log2(n) - sum(map(_XLOGX.__getitem__, counts)) / n
    return math.log2(n) - sum(c * math.log2(c) for c in counts) / n


def _random_run(run: str) -> bool:
    n = len(run)
    if n < _MIN_RANDOM or run.lower() == run or run.upper() == run or not _DIGIT.search(run):
        return False  # too short, or not upper case, lower case and digits together
    if _entropy(run) < 0.8 * math.log2(min(n, 64)):
        return False
    return sum(map(len, _WORDS.findall(run))) < 0.6 * n


def _encoded_text(token: str) -> str | None:
    """The text a base64 token spells, when it spells printable text with spaces."""
    body = token.rstrip("=").replace("-", "+").replace("_", "/")
    try:
        text = binascii.a2b_base64(body + "=" * (-len(body) % 4)).decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    if not any(c in text for c in " \n\t") or not text.translate(_TEXT_CONTROLS).isprintable():
        return None
    return text


# Not secrets however random they look: a package's integrity (npm's `sha512-…`), an SSH
# public key, a document's id in its URL.
_INTEGRITY = re.compile(r"sha(?:1|256|384|512)-", re.ASCII)
_DIGEST_SIZES = {"sha1-": 20, "sha256-": 32, "sha384-": 48, "sha512-": 64}
_PUBLIC_KEY_TYPES = (b"ssh-", b"ecdsa-sha2-", b"sk-ssh-", b"sk-ecdsa-")
_DOCUMENT_PATHS = ("/d/", "/folders/", "/d/e/")


def _integrity(token: str) -> bool:
    prefix = _INTEGRITY.match(token)
    if prefix is None:
        return False
    try:
        digest = binascii.a2b_base64(token[prefix.end() :])
    except (binascii.Error, ValueError):
        return False
    return len(digest) == _DIGEST_SIZES[prefix.group()]


def _public_key(token: str) -> bool:
    """The blob of an SSH public key: base64 of its own type name, length first."""
    if not token.startswith("AAAA"):
        return False
    try:
        blob = binascii.a2b_base64(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError):
        return False
    size = int.from_bytes(blob[:4], "big")
    return 0 < size < 64 and blob[4 : 4 + size].startswith(_PUBLIC_KEY_TYPES)


def _document_id(text: str, start: int) -> bool:
    """A document's id in its URL (`docs.google.com/document/d/<id>`, a Drive folder's)."""
    return any(text[max(0, start - len(p)) : start] == p for p in _DOCUMENT_PATHS)


def _entropy_check(match: re.Match[str], text: str) -> Sequence[Span]:
    token = match.group()
    if _integrity(token) or _public_key(token):
        return ()
    if _document_id(text, match.start()):
        return ()
    body = token.rstrip("=")
    parts = _PART_SEPARATOR.split(body)
    if len(parts) > 1 and sum(1 for p in parts if _WORD_PART.fullmatch(p)) >= 2:
        # A path or a compound name: only a part of it can be random.
        spans, offset = [], match.start()
        for part in parts:
            if _random_run(part) and not _document_id(text, offset):
                spans.append((offset, offset + len(part)))
            offset += len(part) + 1
        return spans
    if not _random_run(body):
        return ()
    decoded = _encoded_text(token)
    if decoded is not None and not _secret_spans(decoded):
        return ()  # base64 of ordinary text
    return (match.span(),)


# --- the table -----------------------------------------------------------------------------

# A value after a key: quoted ("…", '…', \"…\" inside JSON text, or a quote left open to the
# end of the line) or bare up to a space or quote. The check trims and judges it.
_VALUE = (
    r"""(?:"(?P<secret_dq>(?:[^"\\\n]|\\.)*)"|'(?P<secret_sq>(?:[^'\\\n]|\\.)*)'"""
    r"""|\\"(?P<secret_eq>(?:[^"\\\n]|\\[^"\n])*)\\"|["'](?P<secret_open>[^"'\n]+)(?=\n|\Z)"""
    r"""|(?P<secret>[^\s"'`&,;()\[\]{}<>]+))"""
)


def _assignment(words: str) -> str:
    """`KEY = value`, `"key": "value"`, `key: value`, `--key value`, `<key>value</key>`,
    where the key ends with one of `words` (digits may follow); read folded, so `words` are
    in lower case. The check makes sure the word starts the key or follows `_`, `-`, `.` or
    a camelCase step."""
    return (
        rf"(?:(?P<word>{words})\d*(?![a-z0-9])\\?[\"']?[ \t]*(?P<sep>===?|!==?|:=|=>|=|:(?!:)|>)"
        rf"|--(?<![a-z0-9_-]--)(?:[a-z0-9-]*-)?(?P<fword>{words})[ \t]+(?=[^\s-]))[ \t]*" + _VALUE
    )


_PEM_BEGIN = r"----(?:-[ ]?|[ ])BEGIN[ ](?:[A-Z0-9]+[ ])*PRIVATE[ ]KEY(?:[ ]BLOCK)?[ ]?-{4,5}"
_PEM_END = r"-{4,5}[ ]?END[ ](?:[A-Z0-9]+[ ])*PRIVATE[ ]KEY(?:[ ]BLOCK)?[ ]?-{4,5}"
_KEYED = "the key name, separator and quotes"
_GITLAB_KINDS = ("pat", "dt", "rt", "ptt", "cbt", "soat", "oas", "imt", "ft", "agent", "ffct")

# Most specific first: spans found by several rows are named after the earliest. Regexes
# start with a literal where they can, and check the word boundary after it (a fixed-width
# lookbehind), so the regex engine can jump from one candidate to the next.
PATTERNS: tuple[Pattern, ...] = (
    Pattern(
        "private_key",
        # A whole block; cut short (no END), the header and the key lines that follow it.
        (
            rf"{_PEM_BEGIN}(?:(?:[^-]|-(?!---))*?{_PEM_END}"
            r"|(?:(?:\s|\\[rn])+(?:[A-Za-z0-9+/=]{16,}|[A-Za-z][A-Za-z0-9-]*:[ \t][^\n\\]*))+)"
        ),
        "nothing",
        hints=("private key",),
    ),
    Pattern(
        "aws_key_id",
        r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)(?<![A-Za-z0-9]....)[A-Z2-7]{16}(?![A-Za-z0-9])",
        "nothing",
        hints=("a3t", "akia", "asia", "abia", "acca"),
    ),
    Pattern(
        "aws_secret",
        (
            r"(?:aws[_.-]?secret(?:[_.-]?access)?(?:[_.-]?key)?|secret[_.-]?access[_.-]?key)"
            r"\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?(?P<secret>[a-z0-9/+]{40})(?![a-z0-9/+=])"
        ),
        _KEYED,
        hints=("secret",),
        folded=True,
    ),
    Pattern(
        "github_token",
        (
            r"gh[pousr]_(?<![A-Za-z0-9_]....)[A-Za-z0-9]{36,251}(?![A-Za-z0-9_])"
            r"|github_pat_(?<![A-Za-z0-9_]github_pat_)[A-Za-z0-9_]{22,255}(?![A-Za-z0-9_])"
        ),
        "nothing",
        hints=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    Pattern(
        "gitlab_token",
        (
            rf"gl(?<![A-Za-z0-9_-]gl)(?:{'|'.join(_GITLAB_KINDS)})"
            r"-[A-Za-z0-9_-]{20,}(?:\.[A-Za-z0-9_-]+)*"
        ),
        "nothing",
        hints=tuple(f"gl{k}-" for k in _GITLAB_KINDS),
    ),
    Pattern(
        "slack_token",
        (
            r"xox(?<![A-Za-z0-9-]xox)(?:[bpare](?:\.xox[bp])?-\d+-[A-Za-z0-9-]{8,}"
            r"|[os]-\d+-\d+-\d+-[A-Fa-f0-9]+)|xapp-(?<![A-Za-z0-9-]xapp-)\d-[A-Za-z0-9-]{10,}"
        ),
        "nothing",
        hints=("xox", "xapp-"),
    ),
    Pattern(
        "slack_webhook",
        (
            r"https://hooks\.slack\.com/(?:services|workflows|triggers)/"
            r"(?P<secret>[A-Za-z0-9_/+-]{20,})"
        ),
        "the https://hooks.slack.com/services/ prefix",
        hints=("hooks.slack.com",),
    ),
    Pattern(
        "stripe_key",
        (
            r"sk_(?:live|test)_(?<![A-Za-z0-9_]........)[A-Za-z0-9]{16,}"
            r"|rk_(?:live|test)_(?<![A-Za-z0-9_]........)[A-Za-z0-9]{16,}"
            r"|whsec_(?<![A-Za-z0-9_]whsec_)[A-Za-z0-9]{24,}"
        ),
        "nothing",
        hints=("sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_"),
    ),
    Pattern(
        "anthropic_key",
        r"sk-ant-(?<![A-Za-z0-9_-]sk-ant-)(?:api|admin|oat|ort)\d{2}-[A-Za-z0-9_-]{20,}",
        "nothing",
        hints=("sk-ant-",),
    ),
    Pattern(
        "openai_key",
        (
            r"sk-(?<![A-Za-z0-9_-]sk-)(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}"
            r"|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20})"
        ),
        "nothing",
        hints=("sk-",),
    ),
    Pattern(
        "google_api_key",
        r"AIza(?<![A-Za-z0-9_-]AIza)[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])",
        "nothing",
        hints=("aiza",),
    ),
    Pattern(
        "huggingface_token",
        r"hf_(?<![A-Za-z0-9_]hf_)[A-Za-z0-9]{34,40}(?![A-Za-z0-9_])",
        "nothing",
        hints=("hf_",),
    ),
    Pattern(
        "npm_token",
        r"npm_(?<![A-Za-z0-9_]npm_)[A-Za-z0-9]{36}(?![A-Za-z0-9])",
        "nothing",
        hints=("npm_",),
    ),
    Pattern(
        "pypi_token",
        r"pypi-AgEIcHlwaS5vcmc(?<![A-Za-z0-9_-]pypi-AgEIcHlwaS5vcmc)[A-Za-z0-9_-]{50,}",
        "nothing",
        hints=("pypi-ageichlwas5vcmc",),
    ),
    Pattern(
        "jwt",
        (
            r"eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"
            r"(?:\.[A-Za-z0-9_-]+){0,2}"
        ),
        "nothing",
        hints=("eyj",),
    ),
    Pattern(
        "datadog_key",
        (
            r"(?<![a-z0-9])(?:dd|datadog)[_-]?(?:api|app|application|client)[_-]?key"
            r"\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?(?P<secret>[a-f0-9]{40}|[a-f0-9]{32})(?![a-z0-9])"
            r"|pub(?<![a-z0-9]pub)[a-f0-9]{32}(?![a-z0-9])"
        ),
        "the key name, separator and quotes",
        hints=("dd", "datadog", "pub"),
        folded=True,
    ),
    Pattern(
        "mailgun_key",
        (
            r"(?:pubkey-(?<![a-z0-9_]pubkey-)|key-(?<![a-z0-9_]key-))[a-f0-9]{32}(?![a-z0-9])"
            r"|(?<![a-f0-9-])[a-f0-9]{32}-[a-f0-9]{8}-[a-f0-9]{8}(?![a-f0-9-])"
        ),
        "nothing",
        folded=True,
    ),
    Pattern(
        "s3_signature",
        (
            r"(?:x-amz-signature|x-amz-security-token|x-goog-signature)=(?<![a-z0-9_-]"
            r"x-amz-signature=)?(?P<secret>[a-z0-9%+/=_-]{16,})(?=[&\s\"'<>#]|\Z)"
            r"|(?<=[?&])signature=(?P<secret_v2>[a-z0-9%+/=_-]{16,})(?=[&\s\"'<>#]|\Z)"
        ),
        "the parameter's name (X-Amz-Signature=)",
        hints=("signature=", "x-amz-security-token="),
        folded=True,
    ),
    Pattern(
        "cookie",
        (
            r"(?<![a-z0-9_-])(?:set-)?cookie\\?[\"']?[ \t]*:[ \t]*\\?[\"']?"
            r"(?P<secret>[^\s\"'\\;=,]+=[^\n\r\"'\\]*)"
        ),
        "the header's name (Cookie:)",
        hints=("cookie",),
        folded=True,
    ),
    Pattern(
        "netrc",
        (
            r"(?<![a-z0-9_.-])(?:machine[ \t]+\S+|default)(?:\s+(?:login|account|port)\s+\S+){0,3}"
            r"\s+password\s+(?P<secret>\S+)"
        ),
        "machine, login and the word password",
        hints=("password",),
        folded=True,
        check=_value_check,
    ),
    Pattern(
        "cli_password",
        (
            r"(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlsh|mariadb|mariadb-dump)(?![\w-])"
            r"[^\n|;&]{0,200}?[ \t]-p(?P<secret>'[^'\n]*'|\"[^\"\n]*\"|[^\s'\"]+)"
            r"|(?:sshpass|docker[ \t]+login|podman[ \t]+login)(?![\w-])[^\n|;&]{0,200}?[ \t]-p"
            r"[ \t]*(?P<secret_p>'[^'\n]*'|\"[^\"\n]*\"|[^\s'\"-][^\s'\"]*)"
            r"|redis-cli(?![\w-])[^\n|;&]{0,200}?[ \t]-a[ \t]+(?P<secret_a>[^\s'\"]+)"
        ),
        "the command and its flag (mysql -p)",
        hints=("mysql", "mariadb", "sshpass", "login", "redis-cli"),
        check=_value_check,
    ),
    Pattern(
        "korean_secret",
        (
            r"(?P<word>비밀번호|패스워드|비번|암호|토큰)"
            r"(?:[ \t]*(?P<sep>[:=：])[ \t]*|(?:는|은)[ \t]+)(?P<secret>[^\s\"'`,;()\[\]{}<>]+)"
        ),
        "the keyword and separator (비밀번호:)",
        hints=_KOREAN_WORDS,
        check=_korean_check,
    ),
    Pattern(
        "url_password",
        r"://[^\s:/?#@\"'<>]*:(?P<secret>[^\s/?#@\"'<>]+)@",
        "the scheme, user name and host",
        hints=("://",),
        check=_url_password_check,
    ),
    Pattern(
        "authorization",
        (
            r"authorization(?<![a-z0-9_]authorization)\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?"
            r"(?:(?:bearer|basic|token|digest|negotiate|ntlm)[ \t]+)?"
            r"(?P<secret>[^\s\"',;()\[\]{}<>]{8,})"
            r"|bearer(?<![a-z0-9_-]bearer)[ \t]+"
            r"(?P<secret_bearer>(?=[a-z0-9._~+/-]*[0-9])[a-z0-9._~+/-]{16,}=*)"
        ),
        "the header name and scheme (Authorization: Bearer)",
        hints=("authorization", "bearer"),
        folded=True,
        check=_authorization_check,
    ),
    Pattern(
        "password",
        _assignment(r"pass(?:word|wd|phrase)?|pword|pgpassword"),
        _KEYED,
        hints=("pass", "pword"),
        folded=True,
        check=_assignment_check,
    ),
    Pattern(
        "secret",
        _assignment(r"secret[_.-]?key[_.-]?base|secret(?:[_.-]?key)?|private[_.-]?key"),
        _KEYED,
        hints=("secret", "private"),
        folded=True,
        check=_assignment_check,
    ),
    Pattern(
        "api_key",
        _assignment(r"api[_.-]?key"),
        _KEYED,
        hints=("api",),
        folded=True,
        check=_assignment_check,
    ),
    Pattern(
        "token",
        _assignment(r"token"),
        _KEYED,
        hints=("token",),
        folded=True,
        check=_assignment_check,
    ),
    Pattern(
        "hex_secret",
        r"(?<![0-9A-Za-z_+/=.-])(?:[0-9a-f]{32,}|[0-9A-F]{32,})(?![0-9A-Za-z_+/-])",
        "nothing (which hex stays: _hex_check)",
        check=_hex_check,
    ),
    Pattern(
        "high_entropy",
        # From a letter or digit to a letter or digit (`https://` keeps its slashes); the
        # regex needs no lookbehind: it tries a run from its first letter or digit.
        (rf"[A-Za-z0-9][A-Za-z0-9+/_-]{{{_MIN_RANDOM - 2},}}[A-Za-z0-9]={{0,2}}"),
        "nothing (what counts as high entropy: the module docstring)",
        check=_entropy_check,
    ),
)


# --- private spans -------------------------------------------------------------------------

_PRIVATE_TAG = re.compile(r"<\s*(?:(?P<close>/)\s*)?private(?=[\s/>])[^<>]*>", re.IGNORECASE)
# Removing a span can join the halves of a tag around it (`<priv<private>x</private>ate>`):
# a few more passes catch that; past them, the rest of the text goes (safer).
_PRIVATE_PASSES = 4


def _remove_private_once(text: str) -> tuple[str, int]:
    pieces: list[str] = []
    depth, kept_from, spans = 0, 0, 0
    for tag in _PRIVATE_TAG.finditer(text):
        self_closing = tag.group().rstrip(">").rstrip().endswith("/")
        if tag.group("close"):
            if depth:
                depth -= 1
                if depth == 0:
                    kept_from = tag.end()
        elif depth == 0:
            pieces.append(text[kept_from : tag.start()])
            spans += 1
            if self_closing:
                kept_from = tag.end()
            else:
                depth = 1
        elif not self_closing:
            depth += 1
    if depth == 0:
        pieces.append(text[kept_from:])
    return "".join(pieces), spans


def _remove_private(text: str) -> tuple[str, int]:
    total = 0
    for _ in range(_PRIVATE_PASSES):
        text, spans = _remove_private_once(text)
        if not spans:  # an opening tag always starts a span: none is left
            return text, total
        total += spans
    first = next((tag for tag in _PRIVATE_TAG.finditer(text) if not tag.group("close")), None)
    return (text, total) if first is None else (text[: first.start()], total + 1)


# --- scrubbing -----------------------------------------------------------------------------


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
# What a scan sees of a marker: its brackets, and inside them a character that ends every
# value, run and user name of the table (whitespace to the regexes, yet neither a line
# break nor the space or tab allowed around a key's separator). Seen as it is, the `:` of
# `[redacted:high_entropy]` makes `://host[redacted` a user and `high_entropy]…@` its
# password.
_MARKER = re.compile(r"\[redacted:[a-z0-9_]+\]")
_MARKER_INSIDE = "\x0b"
# A replaced secret changes what its neighbours look like, so the text is scanned again
# until a scan finds nothing. One more scan is rare (a secret glued to another); a chain
# deeper than this is hostile text.
_SECRET_PASSES = 4


def _blank_marker(match: re.Match[str]) -> str:
    return "[" + _MARKER_INSIDE * (len(match.group()) - 2) + "]"


def _secret_spans(text: str) -> list[tuple[int, int, int]]:
    """Non-overlapping (start, end, row) spans to replace, in text order; none inside a
    `[redacted:KIND]` marker."""
    if "[redacted:" in text:
        text = _MARKER.sub(_blank_marker, text)  # same length: the offsets hold
    lowered = text.lower()
    if len(lowered) != len(text):  # a few letters lower to two characters (İ): keep offsets
        lowered = text.translate(_ASCII_LOWER)
    found: list[tuple[int, int, int]] = []
    for row, pattern in enumerate(PATTERNS):
        found += ((start, end, row) for start, end in pattern.spans(text, lowered) if start < end)
    found.sort()
    merged: list[tuple[int, int, int]] = []
    for start, end, row in found:
        if merged and start < merged[-1][1]:
            last_start, last_end, last_row = merged[-1]
            merged[-1] = (last_start, max(end, last_end), min(row, last_row))
        else:
            merged.append((start, end, row))
    return merged


def _replace(text: str, spans: Iterable[tuple[int, int, int]], counts: Counter[str]) -> str:
    pieces: list[str] = []
    kept_from = 0
    for start, end, row in spans:
        kind = PATTERNS[row].kind
        pieces += (text[kept_from:start], marker(kind))
        counts[kind] += 1
        kept_from = end
    pieces.append(text[kept_from:])
    return "".join(pieces)


def scrub(text: str) -> Scrubbed:
    """What of `text` may be stored: private spans removed, secrets replaced, counted.

    Scrubbing the result again changes nothing: the secrets are looked for again in what
    the replacements left until none is found. `abc` + a GitHub token is no token (the
    prefix is inside a word), but once `abc` ended a Slack token it is
    `[redacted:slack_token]ghp_…`, which is one; a random run cut short by a replaced key
    is judged again by what is left of it.
    """
    text, private = _remove_private(text)
    counts: Counter[str] = Counter()
    if private:
        counts["private"] = private
    for _ in range(_SECRET_PASSES):
        spans = _secret_spans(text)
        if not spans:
            break
        text = _replace(text, spans, counts)
    else:
        # Past the passes, the rest of the text goes from the first secret still found, as
        # for an unclosed <private>. Markers are never scanned into, so what is found lies
        # before the last cut: each cut is shorter.
        cut = len(text)
        while (spans := _secret_spans(text)) and spans[0][0] < cut:
            cut, _, row = spans[0]
            text = _replace(text, [(cut, len(text), row)], counts)
    return Scrubbed(text, sum(counts.values()), dict(counts))


def scrub_many(texts: Iterable[str]) -> tuple[list[str], int]:
    """Each text scrubbed, and the number of redactions in all."""
    results = [scrub(text) for text in texts]
    return [r.text for r in results], sum(r.redactions for r in results)


# --- files never listed --------------------------------------------------------------------

# `.env*` covers `.env`, `.env.local`, `config/.env.production` and direnv's `.envrc`;
# `*.env` the files given to `docker --env-file`. Keys and credential files follow.
DEFAULT_PRIVATE_GLOBS: tuple[str, ...] = (
    ".env*",
    "*.env",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.kdbx",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    ".netrc",
    "_netrc",
    ".pgpass",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".aws/credentials",
)


def _path_form(path: str) -> str:
    # NFC: macOS hands out decomposed Korean (NFD) where a setting has it composed.
    return unicodedata.normalize("NFC", path.replace("\\", "/")).casefold()


def is_private_path(path: str, extra_globs: Sequence[str] = ()) -> bool:
    """True for files that must never be listed: `.env`, `.env.*`, `*/.env*`, and extra globs.

    A glob without `/` names a file or directory anywhere (`*.pem`, `secrets` hides all under
    a `secrets/` directory); a glob with `/` is matched against the path and each of its
    tails (`config/credentials.json`). Matching ignores case (macOS and Windows disks do)
    and Unicode normalisation, `\\` separates like `/`, and a leading `**/` adds nothing.
    """
    if isinstance(extra_globs, str):  # one glob given bare: not a glob per character
        extra_globs = (extra_globs,)
    parts = [p for p in _path_form(path).split("/") if p not in ("", ".")]
    if not parts:
        return False
    tails = ["/".join(parts[i:]) for i in range(len(parts))]
    for glob in (*DEFAULT_PRIVATE_GLOBS, *extra_globs):
        glob = _path_form(glob).strip().strip("/")
        while glob.startswith("**/"):
            glob = glob[3:]
        if not glob:
            continue
        candidates = tails if "/" in glob else parts
        if any(fnmatch.fnmatchcase(candidate, glob) for candidate in candidates):
            return True
    return False
