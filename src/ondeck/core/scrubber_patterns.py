"""The scrubber's table: one row per kind of secret, what it finds and what of a match it
keeps, most specific first. The last row (high entropy) is added by core/scrubber.py, whose
scan it uses to judge what a base64 run decodes to.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence

from ondeck.core.frozen import Frozen
from ondeck.core.scrubber_checks import (
    KOREAN_WORDS,
    Span,
    assignment_check,
    authorization_check,
    card_check,
    hex_check,
    korean_check,
    secret_span,
    url_password_check,
    value_check,
)

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
                yield secret_span(match)
            else:
                yield from self.check(match, text)


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
KEYED_PATTERNS: tuple[Pattern, ...] = (
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
        check=value_check,
    ),
    Pattern(
        "cli_password",
        (
            r"(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlsh|mariadb|mariadb-dump)(?![\w-])"
            r"[^\n|;&]{0,200}?[ \t]-p(?P<secret>'[^'\n]*'|\"[^\"\n]*\"|[^\s'\"]+)"
            r"|(?:sshpass|docker[ \t]+login|podman[ \t]+login)(?![\w-])[^\n|;&]{0,200}?[ \t]-p"
            r"[ \t]*(?P<secret_p>'[^'\n]*'|\"[^\"\n]*\"|[^\s'\"-][^\s'\"]*)"
            r"|redis-cli(?![\w-])[^\n|;&]{0,200}?[ \t]-a[ \t]+(?P<secret_a>[^\s'\"]+)"
            r"|curl(?![\w-])[^\n|;&]{0,200}?[ \t](?:-u|--user)(?:[ \t]+|=)?['\"]?[^\s'\":]*:"
            r"(?P<secret_u>[^\s'\"]+)"
        ),
        "the command, its flag and the user name (mysql -p, curl -u user:)",
        hints=("mysql", "mariadb", "sshpass", "login", "redis-cli", "curl"),
        check=value_check,
    ),
    Pattern(
        "azure_storage_key",
        # A connection string's key: Azure Storage, Service Bus, Event Hubs, IoT Hub.
        (
            r"(?<![a-z0-9])(?:account|sharedaccess|primary|secondary)key="
            r"(?P<secret>[a-z0-9+/]{20,}={0,2})(?![a-z0-9+/=])"
        ),
        "the key's name (AccountKey=)",
        hints=("key=",),
        folded=True,
    ),
    Pattern(
        "doppler_token",
        (
            r"dp\.(?<![A-Za-z0-9_.-]dp\.)(?:st|sa|ct|pt|scim|audit)\.(?:[A-Za-z0-9_-]+\.)?"
            r"[A-Za-z0-9]{40,44}(?![A-Za-z0-9])"
        ),
        "nothing",
        hints=("dp.",),
    ),
    Pattern(
        "discord_webhook",
        (
            r"https://(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api(?:/v[0-9]+)?/webhooks/"
            r"[0-9]+/(?P<secret>[A-Za-z0-9_-]{40,})"
        ),
        "the URL up to the webhook's id",
        hints=("discord",),
    ),
    Pattern(
        "card_number",
        # 13 to 19 digits, in groups of four split by one space or dash throughout (or not
        # at all), or American Express's 4-6-5; Luhn-valid (card_check).
        (
            r"(?<![0-9A-Za-z_.,+-])(?:[2-6][0-9]{3}(?P<sep>[ -]?)[0-9]{4}(?P=sep)[0-9]{4}"
            r"(?P=sep)[0-9]{1,7}|3[47][0-9]{2}(?P<amex>[ -]?)[0-9]{6}(?P=amex)[0-9]{5})"
            r"(?![0-9A-Za-z_]|[.,-][0-9])"
        ),
        "nothing (which numbers: card_check)",
        check=card_check,
    ),
    Pattern(
        "resident_number",
        # 주민등록번호: YYMMDD-[1-4]XXXXXX, a real month and day. No check digit: numbers
        # issued since October 2020 have none.
        (
            r"(?<![0-9A-Za-z_.+-])[0-9]{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01])"
            r"-[1-4][0-9]{6}(?![0-9A-Za-z_]|[.-][0-9])"
        ),
        "nothing",
        hints=("-",),
    ),
    Pattern(
        "korean_secret",
        (
            # A separator, a particle (는 은 이 가) or, after a word that means only a
            # password or a key (not 암호, also a cipher, nor 토큰), a space alone.
            r"(?P<word>비밀번호|패스워드|비번|암호|토큰|(?i:api)[ \t]?키)"
            r"(?:[ \t]*(?P<sep>[:=：])[ \t]*|(?:는|은|이|가)[ \t]+"
            r"|(?<!암호)(?<!토큰)[ \t]+)(?P<secret>[^\s\"'`,;()\[\]{}<>]+)"
        ),
        "the keyword and separator (비밀번호:)",
        hints=KOREAN_WORDS,
        check=korean_check,
    ),
    Pattern(
        "url_password",
        r"://[^\s:/?#@\"'<>]*:(?P<secret>[^\s/?#@\"'<>]+)@",
        "the scheme, user name and host",
        hints=("://",),
        check=url_password_check,
    ),
    Pattern(
        "authorization",
        (
            r"authorization(?<![a-z0-9_]authorization)\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?"
            r"(?:(?P<scheme>bearer|basic|token|digest|negotiate|ntlm)[ \t]+)?"
            r"(?P<secret>[^\s\"',;()\[\]{}<>]{8,})"
            r"|bearer(?<![a-z0-9_-]bearer)[ \t]+"
            r"(?:(?P<secret_bearer>(?=[a-z0-9._~+/-]*[0-9])[a-z0-9._~+/-]{16,}=*)"
            r"|(?P<secret_word>[a-z]{8,})(?![a-z0-9._~+/=-]))"
        ),
        "the header name and scheme (Authorization: Bearer)",
        hints=("authorization", "bearer"),
        folded=True,
        check=authorization_check,
    ),
    Pattern(
        "password",
        _assignment(r"pass(?:word|wd|phrase)?|pword|pgpassword|pwd"),
        _KEYED,
        hints=("pass", "pword", "pwd"),
        folded=True,
        check=assignment_check,
    ),
    Pattern(
        "secret",
        _assignment(r"secret[_.-]?key[_.-]?base|secret(?:[_.-]?key)?|private[_.-]?key"),
        _KEYED,
        hints=("secret", "private"),
        folded=True,
        check=assignment_check,
    ),
    Pattern(
        "api_key",
        _assignment(r"api[_.-]?key"),
        _KEYED,
        hints=("api",),
        folded=True,
        check=assignment_check,
    ),
    Pattern(
        "token",
        _assignment(r"token"),
        _KEYED,
        hints=("token",),
        folded=True,
        check=assignment_check,
    ),
    Pattern(
        "hex_secret",
        r"(?<![0-9A-Za-z_+/=.-])(?:[0-9a-f]{32,}|[0-9A-F]{32,})(?![0-9A-Za-z_+/-])",
        "nothing (which hex stays: hex_check)",
        check=hex_check,
    ),
)
