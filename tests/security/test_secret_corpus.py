"""A corpus through the gate (db/gate.py, which scrubs every stored text): over 100 secrets
of more than 40 formats, each gone, and over 100 harmless look-alikes, each untouched; then
one real door end to end, a note written by the `ondeck` command, on both stores.

Every secret is synthesized here from a fixed seed, never a real one, and built from pieces
so that this file does not itself look like a leaked credential to a code host's scanner.
"""

from __future__ import annotations

import base64
import json
import os
import random
import string
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import select

from ondeck.core.scrubber import scrub
from ondeck.db import gate
from ondeck.db.engine import make_engine
from ondeck.db.tables import notes

ONDECK = str(Path(sys.executable).with_name("ondeck"))
_rng = random.Random(35)
ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"


def _r(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def _luhn(prefix: str, length: int) -> str:
    body = prefix + _r(string.digits, length - len(prefix) - 1)
    digits = [int(c) for c in body + "0"]
    total = sum(digits[-1::-2]) + sum(d * 2 - 9 if d > 4 else d * 2 for d in digits[-2::-2])
    return body + str((10 - total % 10) % 10)


def _grouped(number: str, separator: str) -> str:
    return separator.join(number[i : i + 4] for i in range(0, len(number), 4))


def _resident() -> str:
    return (
        f"{_rng.randint(0, 99):02d}{_rng.randint(1, 12):02d}{_rng.randint(1, 28):02d}"
        f"-{_rng.randint(1, 4)}{_r(string.digits, 6)}"
    )


# format → a fresh value. Each is a shape a provider documents (or a Korean form ondeck adds).
FORMATS: dict[str, Callable[[], str]] = {
    "aws access key id": lambda: "AK" + "IA" + _r("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16),
    "github classic token": lambda: "gh" + "p_" + _r(ALNUM, 36),
    "github oauth token": lambda: "gh" + "o_" + _r(ALNUM, 36),
    "github fine-grained token": lambda: "github" + "_pat_" + _r(ALNUM, 22) + "_" + _r(ALNUM, 59),
    "gitlab token": lambda: "gl" + "pat-" + _r(ALNUM, 20),
    "slack bot token": lambda: "xo" + "xb-" + _r(string.digits, 11) + "-" + _r(ALNUM, 24),
    "stripe secret key": lambda: "sk" + "_live_" + _r(ALNUM, 24),
    "anthropic key": lambda: "sk" + "-ant-api03-" + _r(ALNUM, 93) + "AA",
    "openai project key": lambda: "sk" + "-proj-" + _r(ALNUM, 48),
    "google api key": lambda: "AI" + "za" + _r(ALNUM, 35),
    "hugging face token": lambda: "hf" + "_" + _r(ALNUM, 34),
    "npm token": lambda: "np" + "m_" + _r(ALNUM, 36),
    "pypi token": lambda: "pypi" + "-AgEIcHlwaS5vcmc" + _r(ALNUM, 70),
    "sendgrid key": lambda: "S" + "G." + _r(ALNUM, 22) + "." + _r(ALNUM, 43),
    "vault token": lambda: "hv" + "s." + _r(ALNUM, 94),
    "doppler service token": lambda: "dp" + ".st." + _r(ALNUM, 43),
    "doppler personal token": lambda: "dp" + ".pt." + _r(ALNUM, 43),
    "age secret key": lambda: "AGE-SECRET" + "-KEY-1" + _r("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58),
    "shopify access token": lambda: "shp" + "at_" + _r(HEX, 32),
    "digitalocean token": lambda: "dop" + "_v1_" + _r(HEX, 64),
    "linear key": lambda: "lin" + "_api_" + _r(ALNUM, 40),
    "postman key": lambda: "PM" + "AK-" + _r(HEX, 24) + "-" + _r(HEX, 34),
    "databricks token": lambda: "da" + "pi" + _r(HEX, 32),
    "grafana service account token": lambda: "gl" + "sa_" + _r(ALNUM, 32) + "_" + _r(HEX, 8),
    "pulumi token": lambda: "pu" + "l-" + _r(HEX, 40),
    "fly.io token": lambda: "fo" + "1_" + _r(ALNUM, 43),
    "planetscale token": lambda: "pscale" + "_tkn_" + _r(ALNUM, 43),
    "shippo token": lambda: "shippo" + "_live_" + _r(HEX, 40),
    "square token": lambda: "sq0" + "atp-" + _r(ALNUM, 22),
    "dynatrace token": lambda: (
        "dt0"
        + "c01."
        + _r("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 24)
        + "."
        + _r("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 64)
    ),
    "heroku token": lambda: "HRKU" + "-AA" + _r(ALNUM, 58),
    "clojars token": lambda: "CLOJARS" + "_" + _r(LOWER_ALNUM, 60),
    "rubygems token": lambda: "rubygems" + "_" + _r(HEX, 48),
    "alibaba key id": lambda: "LT" + "AI" + _r(ALNUM, 20),
    "prefect token": lambda: "pn" + "u_" + _r(ALNUM, 36),
    "readme token": lambda: "rd" + "me_" + _r(LOWER_ALNUM, 70),
    "infracost token": lambda: "ic" + "o-" + _r(ALNUM, 32),
    "notion token": lambda: "nt" + "n_" + _r(string.digits, 11) + _r(ALNUM, 35),
    "perplexity key": lambda: "pp" + "lx-" + _r(ALNUM, 48),
    "artifactory key": lambda: "AK" + "Cp" + _r(ALNUM, 69),
    "easypost key": lambda: "EZ" + "AK" + _r(ALNUM, 54),
    "jwt": lambda: (
        "ey"
        + base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
        + ".ey"
        + _r(ALNUM, 40)
        + "."
        + _r(ALNUM + "-_", 43)
    ),
    "private key block": lambda: (
        "-----BEGIN OPENSSH PRIVATE"
        + " KEY-----\n"
        + "\n".join(_r(ALNUM + "+/", 70) for _ in range(4))
        + "\n-----END OPENSSH PRIVATE"
        + " KEY-----"
    ),
    "azure storage account key": lambda: (
        "DefaultEndpointsProtocol=https;AccountName=acct;"
        + "Account"
        + "Key="
        + _r(ALNUM + "+/", 86)
        + "=="
    ),
    "discord webhook": lambda: (
        "https://discord.com/api/webhooks/" + _r(string.digits, 19) + "/" + _r(ALNUM + "-_", 68)
    ),
    "slack webhook": lambda: (
        "https://hooks.slack.com/services/T"
        + _r(ALNUM, 8)
        + "/B"
        + _r(ALNUM, 8)
        + "/"
        + _r(ALNUM, 24)
    ),
    "postgres url password": lambda: f"postgresql://app:{_r(ALNUM, 14)}@db.internal:5432/app",
    "visa card": lambda: _grouped(_luhn("4", 16), " "),
    "mastercard card": lambda: _grouped(_luhn("5", 16), "-"),
    "card without spaces": lambda: _luhn("6", 16),
    "주민등록번호": _resident,
    "pwd=": lambda: "pwd=" + _r(ALNUM, 6) + "7!",
    "bearer letters": lambda: "Bearer " + _r(string.ascii_letters, 16),
    "패스워드 X": lambda: "패스워드 " + _r(ALNUM, 8) + "1!",
    "API 키는 X": lambda: "API 키는 " + _r(ALNUM, 12) + "9",
    "비밀번호: X": lambda: "비밀번호: " + _r(ALNUM, 10) + "3",
    "토큰은 X": lambda: "토큰은 " + _r(ALNUM, 16) + "5",
    "mysql -p": lambda: "mysql -u root -p" + _r(ALNUM, 10) + " app",
    "curl -u": lambda: "curl -u deploy:" + _r(ALNUM, 12) + " https://ci.local",
    "openssl rand -hex 32": lambda: "$ openssl rand -hex 32\n" + _r(HEX, 64),
    "password=": lambda: "DB_PASSWORD=" + _r(ALNUM, 12) + "!",
}

# Where a secret stands in an agent's text.
CONTEXTS = (
    "{}",
    "export SECRET_VALUE='{}'",
    "설정 파일에 이렇게 적었어요:\n{}\n다음 단계로 넘어갑니다.",
    '{{"note": "{}"}}',
)


def _secret_cases() -> list[tuple[str, str, str]]:
    """(format, the secret's own value, the text holding it), two of each format."""
    cases = []
    for name, make in FORMATS.items():
        for context in CONTEXTS[: 2 if name not in ("jwt", "private key block") else 1] + (
            (CONTEXTS[2],) if name in ("jwt", "private key block") else ()
        ):
            value = make()
            cases.append((name, value, context.format(value)))
    return cases


SECRETS = _secret_cases()


def _secret_part(name: str, value: str) -> str:
    """The part of the value that must be gone (a form's label and a URL's host stay)."""
    for cut in (
        "패스워드 ",
        "API 키는 ",
        "비밀번호: ",
        "토큰은 ",
        "pwd=",
        "DB_PASSWORD=",
        "Bearer ",
    ):
        if value.startswith(cut):
            return value[len(cut) :]
    if name == "mysql -p":
        return value.split(" -p")[1].split()[0]
    if name == "curl -u":
        return value.split(":")[1].split()[0]
    if name == "postgres url password":
        return value.split(":")[2].split("@")[0]
    if name in ("discord webhook", "slack webhook", "azure storage account key"):
        return value[-40:]
    if name in ("private key block", "openssl rand -hex 32"):
        return value.splitlines()[1]
    return value


def _git_log(n: int) -> str:
    lines = []
    for _ in range(n):
        lines += [
            f"commit {_r(HEX, 40)}",
            "Author: 김개발 <dev@example.com>",
            "Date:   Tue Dec 1 10:00:00 2026 +0900",
            "",
            "    배포 스크립트 정리",
            "",
        ]
    return "\n".join(lines)


def _harmless() -> list[str]:
    texts: list[str] = []
    texts += [_git_log(1) for _ in range(10)]
    texts += [f"{_r(HEX, 7)} 로그인 화면 수정" for _ in range(5)]
    texts += [f"git checkout {_r(HEX, 40)}" for _ in range(5)]
    texts += [f"request_id={uuid.UUID(int=_rng.getrandbits(128))}" for _ in range(10)]
    texts += [str(uuid.UUID(int=_rng.getrandbits(128))) for _ in range(5)]
    texts += [
        "오늘은 비밀번호 정책을 바꾸는 회의를 했습니다.",
        "API 키 발급 절차는 위키에 있습니다.",
        "토큰 수가 4096을 넘으면 잘립니다.",
        "토큰: 4096",
        "비밀번호가 틀렸습니다. 다시 입력하세요.",
        "패스워드 변경 주기는 90일입니다.",
        "암호 AES256 으로 암호화합니다.",
        "주민등록번호 앞자리만 받습니다.",
        "카드 번호는 저장하지 않습니다.",
        "배포는 목요일 오후 3시에 합니다.",
        "Bearer tokens are sent in the Authorization header.",
        "The API uses Bearer authentication.",
        "PWD=/home/me/projects/ondeck",
        "password = getpass()",
        "if token is None: raise ValueError('no token')",
    ]
    texts += [
        f"version {_rng.randint(0, 9)}.{_rng.randint(0, 30)}.{_rng.randint(0, 99)}"
        for _ in range(5)
    ]
    texts += [
        "python 3.11.7",
        "node v22.11.0",
        "ondeck 0.9.0rc2",
        "2026-12-05T09:32:16Z",
        "2026-12-05",
    ]
    texts += [f"전화 010-{_r(string.digits, 4)}-{_r(string.digits, 4)}" for _ in range(5)]
    texts += [f"+82 2-{_r(string.digits, 3)}-{_r(string.digits, 4)}" for _ in range(3)]
    texts += ["사업자등록번호 123-45-67890", "우편번호 06236", "20240101-1234567"]
    for _ in range(10):  # 16 digits that fail the Luhn check
        card = _luhn("4", 16)
        texts.append(card[:-1] + str((int(card[-1]) + 1) % 10))
    texts += [f"order {_rng.randint(10**12, 10**13)}" for _ in range(3)]  # 13 digits, from 1
    for words in (
        "hello world",
        "the quick brown fox jumps over the lazy dog",
        "배포는 목요일까지 합니다",
        "meeting notes for tuesday",
        "lorem ipsum dolor sit amet consectetur",
    ):
        texts.append("data: " + base64.b64encode(words.encode()).decode())
    texts += [
        "sha256:" + _r(HEX, 64),
        "sha256 " + _r(HEX, 64) + "  ondeck.tar.gz",
        "integrity sha512-" + base64.b64encode(bytes(64)).decode(),
        "#ff8800",
        "https://github.com/owner/repo/commit/" + _r(HEX, 40),
        "https://docs.python.org/3/library/re.html",
        "/home/사용자/프로젝트/src/ondeck/core/scrubber.py:120",
        "SELECT id, title FROM tasks WHERE status = 'open' LIMIT 20;",
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl me@host",
        "def scrub(text: str) -> Scrubbed:",
        "192.168.0.12:8080",
        "token_count = 1234",
        "the key is in the vault; ask the owner",
        "sk-learn is the usual spelling of scikit-learn",
        "s.split('.') returns a list",
    ]
    return texts


HARMLESS = _harmless()


def test_the_corpus_is_as_large_as_promised() -> None:
    assert len(SECRETS) >= 100
    assert len({name for name, _, _ in SECRETS}) >= 40
    assert len(HARMLESS) >= 100
    for name, value, _ in SECRETS:
        assert len(_secret_part(name, value)) >= 6, name


@pytest.mark.parametrize(("name", "value", "text"), SECRETS, ids=[s[0] for s in SECRETS])
def test_every_secret_is_gone_through_the_gate(name: str, value: str, text: str) -> None:
    stored = gate.text(text)
    assert _secret_part(name, value) not in stored, stored
    assert "[redacted:" in stored
    assert gate.text(stored) == stored  # and the gate changes nothing the second time


def test_no_harmless_look_alike_is_touched() -> None:
    touched = {text: scrub(text).text for text in HARMLESS if gate.text(text) != text}
    assert not touched, touched


# --- one real door, both stores -----------------------------------------------------------------


def test_a_note_written_by_the_command_is_stored_redacted(db_url: str, tmp_path: Path) -> None:
    """`ondeck note add` in its own process, on SQLite and on PostgreSQL: the row as read
    back holds no secret of the corpus, and keeps the Korean prose around them."""
    picked = [value for _, value, _ in SECRETS[::3]]  # one of each format's cases in turn
    text = "배포 메모: " + "\n".join(picked) + "\n끝."
    result = subprocess.run(
        [ONDECK, "note", "add", text, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "ONDECK_DATABASE_URL": db_url, "ONDECK_TZ": "UTC"},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    note_id = json.loads(result.stdout)["id"]
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            stored = conn.execute(select(notes.c.text).where(notes.c.id == note_id)).scalar_one()
    finally:
        engine.dispose()
    assert stored.startswith("배포 메모: ") and stored.endswith("\n끝.")
    for name, value, _ in SECRETS[::3]:
        assert _secret_part(name, value) not in stored, name
    assert stored.count("[redacted:") >= len(picked) - 2  # neighbours may merge into one
