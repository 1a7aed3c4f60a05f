"""The scrubber's judges: whether what a row of its table matched is a secret, or code, a
placeholder, prose, a git object name or a digest (core/scrubber_patterns.py holds the rows,
core/scrubber.py the scan).

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
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

Span = tuple[int, int]


def secret_span(match: re.Match[str]) -> Span:
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


def lazy(source: str, flags: int = 0) -> Callable[[], re.Pattern[str]]:
    """The expression, compiled when first asked for: each hook is a new process, and most
    texts it scrubs (a session start's paths and names) need few of these."""
    found: list[re.Pattern[str]] = []

    def compiled() -> re.Pattern[str]:
        if not found:
            found.append(re.compile(source, flags))
        return found[0]

    return compiled


_NAME_PATH = lazy(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*", re.ASCII)
_LETTERS = lazy(r"[A-Za-z_]+", re.ASCII)
_AFTER_ANNOTATION = lazy(r"[ \t]*[=|,)\]]", re.ASCII)
# Before a key that starts a line: indentation, `export `, `set `, a YAML list dash, a quote.
_LINE_START = lazy(r"[ \t]*(?:(?:export|set|setenv)[ \t]+|-[ \t]+)?\\?[\"']?", re.ASCII)
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
    if _LETTERS().fullmatch(value) and ("_" in value or value.isupper()):
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


def assignment_check(match: re.Match[str], text: str) -> Sequence[Span]:
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
            if _directory(word, value):
                return ()
            return ((start, end),)
    start = match.start("secret")
    value = text[start : match.end("secret")].rstrip(_TRAILING)
    end = start + len(value)
    if _placeholder(value, (key, word)) or value.lower() in _CODE_WORDS or _counter(word, value):
        return ()
    if _directory(word, value):
        return ()
    if _NAME_PATH().fullmatch(value) and ("." in value or text[end : end + 1] in ("(", "[")):
        return ()  # code: `token = get_token()`, `os.environ["X"]`, `self.token`
    if (
        match.group("sep") == ":"
        and _NAME_PATH().fullmatch(value)
        and _AFTER_ANNOTATION().match(text, end)
    ):
        return ()  # an annotation: `token: Token | None = None`, `password: Secret,`
    if _LETTERS().fullmatch(value):
        # A plain word is a secret where configuration is written (`password = letmein` at
        # the start of a line, `--password letmein`); elsewhere it is prose ("the token:
        # only") or a variable (`f(token=tok)`, also when the call spans lines).
        line = text.rfind("\n", 0, key_start) + 1
        configured = key.startswith("--") or _LINE_START().fullmatch(text, line, key_start)
        if not configured or text[end : end + 1] in (",", ")"):
            return ()
    return ((start, end),)


def _directory(word: str, value: str) -> bool:
    """`PWD=/home/me`: the shell's working directory, not a password."""
    return word == "pwd" and (value.startswith(("/", "~", ".", "\\")) or value[1:3] == ":\\")


def _counter(word: str, value: str) -> bool:
    """A token that is a small number is a counter, not a secret: ondeck's own lease tokens
    (`--token 1042`, `"token": 7`), a model's token counts (`토큰: 4096`)."""
    return word in ("token", "토큰") and value.isascii() and value.isdigit() and len(value) <= 12


def value_check(match: re.Match[str], text: str) -> Sequence[Span]:
    """A value taken by its position (after `-p`, `password` in .netrc): any length, unless
    it is a template or a mask (`-p$MYSQL_PWD`, `password ****`)."""
    start, end = secret_span(match)
    value = text[start:end].strip("'\"")
    if not value or value.startswith(_PLACEHOLDER_START) or set(value) <= _MASK:
        return ()
    return ((start, end),)


KOREAN_WORDS = ("비밀번호", "패스워드", "비번", "암호", "토큰", "api 키", "api키")


def korean_check(match: re.Match[str], text: str) -> Sequence[Span]:
    word, (start, end) = match.group("word"), match.span("secret")
    value = text[start:end].rstrip(_TRAILING + "。")
    end = start + len(value)
    if _placeholder(value, (word, "password", "token", "key")) or _counter(word, value):
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
_GIT_WORDS = lazy(
    r"(?<![a-z0-9_])(?:commits?|sha|sha1|rev|revision|head|tree|blob|parent|merge|object|refs?"
    r"|cherry-pick|revert|checkout|reset|fixup|squash|pick|rebase|bisect|git)(?![a-z0-9_])"
)
_DIGEST_WORDS = lazy(
    r"(?<![a-z0-9])(?:md5|sha1|sha224|sha256|sha384|sha512|shasum|md5sum|sha1sum|sha256sum"
    r"|sha512sum|checksum|digest|hash|etag|integrity|b3sum|blake2b?|blake3)(?![a-z0-9])"
)
_GIT_LENGTHS = (40, 64)  # SHA-1 and SHA-256 object names
_LOOK_BACK = 80


def hex_check(match: re.Match[str], text: str) -> Sequence[Span]:
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
    if _DIGEST_WORDS().search(before):
        return ()
    line_end = text.find("\n", end)
    after = text[end : len(text) if line_end < 0 else line_end]
    if end - start in _GIT_LENGTHS:
        if not text[:start].strip() and not text[end:].strip():
            return ()
        if _GIT_WORDS().search(before):
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


def url_password_check(match: re.Match[str], text: str) -> Sequence[Span]:
    start, end = match.span("secret")
    return () if _placeholder(text[start:end], _SCHEME_WORDS) else ((start, end),)


def authorization_check(match: re.Match[str], text: str) -> Sequence[Span]:
    start, end = secret_span(match)
    value = text[start:end]
    if _placeholder(value, _SCHEME_WORDS):
        return ()  # `Bearer $TOKEN`, `Authorization: <token>`
    if match.group("secret_word") is not None:
        # `Bearer letmeinletmein`: letters alone are a token where a header holds one (the
        # line's start, after a quote or `:`, and nothing after it on the line but a quote),
        # and prose elsewhere ("a Bearer token", "Bearer authentication is used").
        line = text.rfind("\n", 0, match.start()) + 1
        before = text[line : match.start()].rstrip(" \t")
        line_end = text.find("\n", end)
        after = text[end : len(text) if line_end < 0 else line_end].strip(" \t")
        if before[-1:] not in ("", '"', "'", ":") or after not in ("", '"', "'", "',", '",'):
            return ()
        return ((start, end),)
    scheme = match.group("scheme")
    if scheme is None and _NAME_PATH().fullmatch(value) and not any(c.isdigit() for c in value):
        return ()  # code: `{"Authorization": auth_header}`
    return ((start, end),)


def card_check(match: re.Match[str], text: str) -> Sequence[Span]:
    """A payment card's number passes the Luhn check; a run of one digit does not count."""
    digits = [int(c) for c in match.group() if c.isdigit()]
    if len(set(digits)) < 2:
        return ()
    total = sum(digits[-1::-2]) + sum(d * 2 - 9 if d > 4 else d * 2 for d in digits[-2::-2])
    return (match.span(),) if total % 10 == 0 else ()
