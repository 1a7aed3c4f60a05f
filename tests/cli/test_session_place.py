"""The place of a session, as real hook processes see it: a file in a
repository cannot move it to another side, and a directory reached through a symlink is
classified where it really is. Both stores."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from ondeck.sessions import records as svc
from support.hooks import ONDECK, SESSION_ID, commit_file, new_repo, payload, run_hook
from support.pg import free_port

PERSONAL = "이혼 변호사에게 전화하기 (call the divorce lawyer)"
WORK = "배포는 목요일 (deploys on Thursday)"


def setup(tmp_path: Path, db_url: str) -> tuple[dict[str, str], Path, Path]:
    work, own = tmp_path / "work", tmp_path / "own"
    work.mkdir()
    own.mkdir()
    env = {
        "ONDECK_DATABASE_URL": db_url,
        "ONDECK_DATA_DIR": str(tmp_path / "data"),
        "ONDECK_PORT": str(free_port()),
        "ONDECK_TZ": "UTC",
        "ONDECK_SIDES": json.dumps({"work": [str(work)], "personal": [str(own)]}),
    }
    for side, text in (("personal", PERSONAL), ("work", WORK)):
        done = subprocess.run(
            [ONDECK, "note", "add", text, "--side", side, "--whole-side", "--pin"],
            env={**_base_env(), **env},
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    return env, work, own


def _base_env() -> dict[str, str]:
    import os

    return dict(os.environ)


def start(env: dict[str, str], cwd: Path, tmp_path: Path) -> str:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")
    data = payload("start", cwd=str(cwd), transcript_path=str(transcript))
    done = run_hook("session-start", data, env)
    assert done.returncode == 0, done.stderr
    context: str = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    return context


def the_session(engine: Engine) -> Any:
    with engine.connect() as conn:
        return svc.find_session(conn, SESSION_ID)


def test_a_clone_under_work_whose_marker_says_personal_is_unclassified_and_sees_nothing_personal(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    env, work, _ = setup(tmp_path, db_url)
    clone = new_repo(work / "clone")
    commit_file(clone, ".ondeck.toml", 'side = "personal"\nproject = "clone"\n', "marker")
    context = start(env, clone, tmp_path)
    assert PERSONAL not in context
    assert "unclassified" in context
    s = the_session(engine)
    assert s.unclassified and s.side is None
    reason = s.classification["reason"]
    assert "names side personal" in reason and "give side work" in reason


def test_a_marker_saying_capture_true_under_a_no_capture_prefix_captures_nothing(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    env, work, _ = setup(tmp_path, db_url)
    secret = new_repo(work / "secret")
    env["ONDECK_NO_CAPTURE"] = json.dumps([str(secret)])
    commit_file(secret, ".ondeck.toml", "capture = true\n", "marker")
    start(env, secret, tmp_path)
    s = the_session(engine)
    assert s.capture is False and s.cwd is None and s.git_root is None


def test_a_symlink_from_work_into_personal_is_personal_and_keeps_both_paths(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    env, work, own = setup(tmp_path, db_url)
    diary = new_repo(own / "diary")
    link = work / "looks-like-work"
    link.symlink_to(diary)
    context = start(env, link, tmp_path)
    assert PERSONAL in context and WORK not in context
    s = the_session(engine)
    assert (s.side, s.side_rule, s.unclassified) == ("personal", "path", False)
    assert s.cwd == str(link) and s.classification["real_cwd"] == str(diary)
    assert s.git_root == str(diary)
