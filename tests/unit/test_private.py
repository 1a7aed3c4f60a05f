"""host/private.py: what it makes is the owner's alone under any umask; what it tightens
loses the group's and others' bits only (a read-only file stays read-only)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ondeck.host import private


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o002])
def test_what_it_makes_is_0600_and_0700_under_any_umask(tmp_path: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        private.make_dirs(tmp_path / "a" / "b")
        private.create_file(tmp_path / "a" / "b" / "f")
        private.write_new_text(tmp_path / "a" / "t.md", "한국어")
        os.close(private.open_file(tmp_path / "a" / "o", os.O_WRONLY | os.O_CREAT))
    finally:
        os.umask(old)
    assert [_mode(tmp_path / p) for p in ("a", "a/b", "a/b/f", "a/t.md", "a/o")] == [
        0o700,
        0o700,
        0o600,
        0o600,
        0o600,
    ]
    with pytest.raises(FileExistsError):
        private.write_new_text(tmp_path / "a" / "t.md", "again")


def test_tightening_takes_only_the_group_and_others_bits(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    loose, readonly, folder = tmp_path / "loose", tmp_path / "ro", tmp_path / "dir"
    loose.write_text("x")
    readonly.write_text("x")
    folder.mkdir()
    loose.chmod(0o664)
    readonly.chmod(0o444)
    folder.chmod(0o755)
    with caplog.at_level("WARNING", logger="ondeck.files"):
        assert private.tighten_all([loose, readonly, folder, tmp_path / "missing"]) == 3
        assert private.tighten_all([loose, readonly, folder]) == 0
    assert (_mode(loose), _mode(readonly), _mode(folder)) == (0o600, 0o400, 0o700)
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        f"{loose} was readable by others (0664): now 0600",
        f"{readonly} was readable by others (0444): now 0400",
        f"{folder} was readable by others (0755): now 0700",
    ]


def test_an_own_directory_found_open_is_tightened_a_given_one_is_not(tmp_path: Path) -> None:
    mine, given = tmp_path / "spool", tmp_path / "given"
    for folder in (mine, given):
        folder.mkdir()
        folder.chmod(0o755)
    private.make_dirs(mine, own=True)
    private.make_dirs(given)
    assert (_mode(mine), _mode(given)) == (0o700, 0o755)
    where_a_file_is = tmp_path / "file"
    where_a_file_is.write_text("x")
    where_a_file_is.chmod(0o644)
    private.make_dirs(where_a_file_is, own=True)  # not a directory: not touched
    assert _mode(where_a_file_is) == 0o644
