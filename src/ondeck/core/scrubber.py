"""Privacy at the door: what may be stored of a text, and which files are never listed.

`scrub(text)` runs before any text is stored, at one gate (db/gate.py: the column types
of db/tables.py and the plain statements' parameters), and where a session's texts are
captured (sessions/capture/events.py, which counts what it removed):

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
   gitleaks' published rules (core/scrubber_gitleaks.py) rank after ondeck's keyed rows and
   before high entropy; a span one of ondeck's keyed rows found is theirs alone (they know
   what to keep around it).

The result carries the text and how many spans were removed or replaced, per kind; never
the values. It uses the standard library only: it runs in the session hooks at every turn,
where an 8,000-character message takes a few milliseconds, gitleaks' rules included (their
cost per KB: docs/benchmarks.md). No regular expression here can match the same characters
in two ways (no nested or adjacent quantifiers over the same characters) and each scan from
a start is bounded by a delimiter, so a hostile text costs time in proportion to its size
(tests/unit/test_scrubber.py runs 100,000-character ones; gitleaks' rules are held to it by
tests/unit/test_scrubber_gitleaks.py).

The rows are in core/scrubber_patterns.py, and what judges their matches (code,
placeholders, git object names and digests) in core/scrubber_checks.py; the last row is
here, beside the scan it uses.

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

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence

from ondeck.core import scrubber_gitleaks as gitleaks
from ondeck.core.frozen import Frozen
from ondeck.core.scrubber_checks import Span, lazy
from ondeck.core.scrubber_patterns import KEYED_PATTERNS, Pattern

__all__ = [
    "DEFAULT_PRIVATE_GLOBS",
    "PATTERNS",
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


def marker(kind: str) -> str:
    return f"[redacted:{kind}]"


# --- high entropy --------------------------------------------------------------------------

# 30 from a letter or digit to a letter or digit: a 32-character base64 token may begin or
# end with `+`, `/`, `-` or `_`, which the run leaves out (so that `https://` stays).
_MIN_RANDOM = 30
_WORDS = lazy(r"[A-Z]?[a-z]{4,}|[A-Z]{4,}", re.ASCII)
_WORD_PART = lazy(r"(?:[A-Z][a-z]{2,}|[a-z]{2,})(?:[A-Z][a-z]{2,})*|[A-Z]{2,}[a-z]*", re.ASCII)
_PART_SEPARATOR = lazy(r"[/_-]")
_DIGIT = lazy(r"[0-9]")
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
    if n < _MIN_RANDOM or run.lower() == run or run.upper() == run or not _DIGIT().search(run):
        return False  # too short, or not upper case, lower case and digits together
    if _entropy(run) < 0.8 * math.log2(min(n, 64)):
        return False
    return sum(map(len, _WORDS().findall(run))) < 0.6 * n


def _encoded_text(token: str) -> str | None:
    """The text a base64 token spells, when it spells printable text with spaces."""
    import binascii  # here: only a long random-looking run needs it

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
_INTEGRITY = lazy(r"sha(?:1|256|384|512)-", re.ASCII)
_DIGEST_SIZES = {"sha1-": 20, "sha256-": 32, "sha384-": 48, "sha512-": 64}
_PUBLIC_KEY_TYPES = (b"ssh-", b"ecdsa-sha2-", b"sk-ssh-", b"sk-ecdsa-")
_DOCUMENT_PATHS = ("/d/", "/folders/", "/d/e/")


def _integrity(token: str) -> bool:
    prefix = _INTEGRITY().match(token)
    if prefix is None:
        return False
    import binascii

    try:
        digest = binascii.a2b_base64(token[prefix.end() :])
    except (binascii.Error, ValueError):
        return False
    return len(digest) == _DIGEST_SIZES[prefix.group()]


def _public_key(token: str) -> bool:
    """The blob of an SSH public key: base64 of its own type name, length first."""
    if not token.startswith("AAAA"):
        return False
    import binascii

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
    parts = _PART_SEPARATOR().split(body)
    if len(parts) > 1 and sum(1 for p in parts if _WORD_PART().fullmatch(p)) >= 2:
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


# The rows with a shape or a key name, then high entropy: it judges a base64 run by what it
# decodes to, with the whole table, so it is added here, beside the scan.
PATTERNS: tuple[Pattern, ...] = (
    *KEYED_PATTERNS,
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

_PRIVATE_TAG = lazy(r"<\s*(?:(?P<close>/)\s*)?private(?=[\s/>])[^<>]*>", re.IGNORECASE)
# Removing a span can join the halves of a tag around it (`<priv<private>x</private>ate>`):
# a few more passes catch that; past them, the rest of the text goes (safer).
_PRIVATE_PASSES = 4


def _remove_private_once(text: str) -> tuple[str, int]:
    pieces: list[str] = []
    depth, kept_from, spans = 0, 0, 0
    for tag in _PRIVATE_TAG().finditer(text):
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
    if "<" not in text:  # no tag, and no scan (most texts)
        return text, 0
    total = 0
    for _ in range(_PRIVATE_PASSES):
        text, spans = _remove_private_once(text)
        if not spans:  # an opening tag always starts a span: none is left
            return text, total
        total += spans
    first = next((tag for tag in _PRIVATE_TAG().finditer(text) if not tag.group("close")), None)
    return (text, total) if first is None else (text[: first.start()], total + 1)


# --- scrubbing -----------------------------------------------------------------------------


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
# What a scan sees of a marker: its brackets, and inside them a character that ends every
# value, run and user name of the table (whitespace to the regexes, yet neither a line
# break nor the space or tab allowed around a key's separator). Seen as it is, the `:` of
# `[redacted:high_entropy]` makes `://host[redacted` a user and `high_entropy]…@` its
# password.
_MARKER = lazy(r"\[redacted:[a-z0-9_]+\]")
_MARKER_INSIDE = "\x0b"
# A replaced secret changes what its neighbours look like, so the text is scanned again
# until a scan finds nothing. One more scan is rare (a secret glued to another); a chain
# deeper than this is hostile text.
_SECRET_PASSES = 4


def _blank_marker(match: re.Match[str]) -> str:
    return "[" + _MARKER_INSIDE * (len(match.group()) - 2) + "]"


# (start, end, rank, kind): rank orders the rows, most specific first, for naming a span
# several rows found.
_Found = tuple[int, int, int, str]


def _secret_spans(text: str) -> list[_Found]:
    """Non-overlapping spans to replace, in text order; none inside a `[redacted:KIND]`
    marker. gitleaks' rules rank after ondeck's keyed rows and before high entropy."""
    if "[redacted:" in text:
        text = _MARKER().sub(_blank_marker, text)  # same length: the offsets hold
    lowered = text.lower()
    if len(lowered) != len(text):  # a few letters lower to two characters (İ): keep offsets
        lowered = text.translate(_ASCII_LOWER)
    found: list[_Found] = []
    for row, pattern in enumerate(PATTERNS):
        rank = row if row < len(KEYED_PATTERNS) else row + 1
        found += (
            (start, end, rank, pattern.kind)
            for start, end in pattern.spans(text, lowered)
            if start < end
        )
    # A secret one of ondeck's keyed rows found is theirs: they know what to keep around it
    # (`https://hooks.slack.com/services/[redacted:slack_webhook]`), where gitleaks' rule
    # may match the whole URL.
    keyed = [(start, end) for start, end, rank, _ in found if rank < len(KEYED_PATTERNS)]
    rank = len(KEYED_PATTERNS)
    found += ((start, end, rank, kind) for start, end, kind in gitleaks.spans(text, lowered, keyed))
    found.sort()
    merged: list[_Found] = []
    for start, end, rank, kind in found:
        if merged and start < merged[-1][1]:
            last_start, last_end, last_rank, last_kind = merged[-1]
            named = (rank, kind) if rank < last_rank else (last_rank, last_kind)
            merged[-1] = (last_start, max(end, last_end), *named)
        else:
            merged.append((start, end, rank, kind))
    return merged


def _replace(text: str, spans: Iterable[_Found], counts: Counter[str]) -> str:
    pieces: list[str] = []
    kept_from = 0
    for start, end, _, kind in spans:
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
            cut, _, rank, kind = spans[0]
            text = _replace(text, [(cut, len(text), rank, kind)], counts)
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
    import unicodedata  # here: only a listing of files needs it

    return unicodedata.normalize("NFC", path.replace("\\", "/")).casefold()


def is_private_path(path: str, extra_globs: Sequence[str] = ()) -> bool:
    """True for files that must never be listed: `.env`, `.env.*`, `*/.env*`, and extra globs.

    A glob without `/` names a file or directory anywhere (`*.pem`, `secrets` hides all under
    a `secrets/` directory); a glob with `/` is matched against the path and each of its
    tails (`config/credentials.json`). Matching ignores case (macOS and Windows disks do)
    and Unicode normalisation, `\\` separates like `/`, and a leading `**/` adds nothing.
    """
    import fnmatch

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
