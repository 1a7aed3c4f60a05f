"""Wrong tokens and who they lock out, against a real `ondeck serve`:
uvicorn's own handling of X-Forwarded-For is what is tested, and real users of this machine
(the test runs as root and makes its guessers other users with setuid).

    another user of this machine   refused after ten wrong tokens, that user only
    the user the server runs as    never refused (it can read the token anyway), so nobody
                                   can lock the owner out of their own machine
    X-Forwarded-For                believed only from ONDECK_TRUSTED_PROXIES
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.served import ONDECK, Served, serve_database

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

TOKEN = "a0f3c9e1b7d24c58a9e6f1b3c7d9e2a4b6c8d0e2f4a6b8c0d2e4f6a8b0c2d4e6"
GUESSER = "/usr/bin/python3"  # the system's, which any user may run (the venv is under /root)
NOBODY, SOMEONE = 65534, 65533

_ASK = r"""
import json, sys, urllib.error, urllib.request
url, token, count, forwarded = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
answers = []
for _ in range(count):
    headers = {"Authorization": "Bearer " + token}
    if forwarded:
        headers["X-Forwarded-For"] = forwarded
    request = urllib.request.Request(url + "/api/v1/tasks", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            answers.append([answer.status, ""])
    except urllib.error.HTTPError as refused:
        answers.append([refused.code, json.load(refused)["error"]["message"]])
print(json.dumps(answers))
"""


def _ask(
    served: Served, token: str, count: int, *, uid: int | None, forwarded: str = ""
) -> list[tuple[int, str]]:
    """`count` requests with `token`, from a process of user `uid` (None: this process's)."""
    done = subprocess.run(
        [GUESSER, "-c", _ASK, served.url, token, str(count), forwarded],
        user=uid,
        cwd="/",
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [(status, message) for status, message in json.loads(done.stdout)]


@pytest.fixture
def locked(db_url: str, tmp_path: Path) -> Iterator[Served]:
    if os.getuid() != 0 or not Path(GUESSER).exists():
        pytest.skip("needs root (to run guessers as other users) and /usr/bin/python3")
    tmp_path.chmod(0o755)  # the guessers need nothing in it; the server's files stay its own
    with serve_database(db_url, tmp_path / "data", Served, ONDECK_TOKEN=TOKEN) as served:
        yield served


def test_another_user_of_this_machine_locks_out_only_itself(locked: Served) -> None:
    guesses = _ask(locked, "wrong-" + TOKEN[6:], 11, uid=NOBODY)
    assert [status for status, _ in guesses] == [401] * 10 + [429]
    assert f"127.0.0.1 (uid {NOBODY})" in guesses[-1][1]
    assert _ask(locked, TOKEN, 1, uid=NOBODY)[0][0] == 429, "the guesser learns nothing more"
    # Every other user of the machine, and the owner's hooks above all, go on.
    assert _ask(locked, TOKEN, 1, uid=SOMEONE) == [(200, "")]
    assert _ask(locked, TOKEN, 1, uid=None) == [(200, "")]


def test_the_user_the_server_runs_as_is_never_locked_out(locked: Served) -> None:
    """A stale token in one hook's settings (or anything the owner runs) cannot lock out
    the owner's other clients: that user can read the token from its own files anyway."""
    guesses = _ask(locked, "stale-" + TOKEN[6:], 15, uid=None)
    assert {status for status, _ in guesses} == {401}
    assert _ask(locked, TOKEN, 1, uid=None) == [(200, "")]
    # While another user is refused, the owner still is not.
    _ask(locked, "wrong-" + TOKEN[6:], 10, uid=NOBODY)
    assert _ask(locked, TOKEN, 1, uid=NOBODY)[0][0] == 429
    assert _ask(locked, TOKEN, 1, uid=None) == [(200, "")]


def test_x_forwarded_for_from_an_unconfigured_proxy_is_ignored(locked: Served) -> None:
    """uvicorn believes 127.0.0.1 by default: a local process could name any address, to
    dodge its own limit or to lock a remote address out."""
    guesses = _ask(locked, "wrong-" + TOKEN[6:], 11, uid=NOBODY, forwarded="203.0.113.9")
    assert guesses[-1][0] == 429
    assert "203.0.113.9" not in guesses[-1][1] and f"uid {NOBODY}" in guesses[-1][1]
    dodge = _ask(locked, "wrong-" + TOKEN[6:], 1, uid=NOBODY, forwarded="203.0.113.77")
    assert dodge[0][0] == 429, "another forged address does not dodge the limit"


def test_x_forwarded_for_from_a_configured_proxy_names_the_client(
    db_url: str, tmp_path: Path
) -> None:
    if os.getuid() != 0 or not Path(GUESSER).exists():
        pytest.skip("needs root (to run guessers as other users) and /usr/bin/python3")
    tmp_path.chmod(0o755)
    proxied = {"ONDECK_TOKEN": TOKEN, "ONDECK_TRUSTED_PROXIES": "127.0.0.1"}
    with serve_database(db_url, tmp_path / "data", Served, **proxied) as served:
        guesses = _ask(served, "wrong-" + TOKEN[6:], 11, uid=NOBODY, forwarded="203.0.113.9")
        assert guesses[-1][0] == 429 and "203.0.113.9" in guesses[-1][1]
        # Another client behind the same proxy is another address: not refused.
        other = _ask(served, TOKEN, 1, uid=NOBODY, forwarded="203.0.113.10")
        assert other == [(200, "")]


def test_a_short_or_blank_token_is_refused_at_start(tmp_path: Path) -> None:
    """`ONDECK_TOKEN=" "` is no token (and binds no 0.0.0.0): `serve` refuses it in one
    line saying why and how to make one."""
    for given, why in ((" ", "blank"), ("x", "too few"), ("s3cret-토큰-token", "too few")):
        done = subprocess.run(
            [ONDECK, "serve", "--host", "0.0.0.0", "--no-jobs"],
            env={**os.environ, "ONDECK_TOKEN": given, "ONDECK_DATA_DIR": str(tmp_path)},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2, done.stderr
        assert why in done.stderr and "openssl rand -hex 32" in done.stderr
        assert done.stderr.count("\n") == 1
        assert len(given) < 3 or given not in done.stderr, "the refusal never shows it"
