"""A pinned npm package installed into a folder of the test run (never globally), for the real
agents the tests drive: Claude Code (support/claude.py), Codex and Gemini CLI
(support/agents.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def install(
    folder: Path, package: str, version: str, binary: str, timeout: int = 900
) -> Path | str:
    """The executable `binary` of `package@version` under `folder` (reused when it is there
    already and answers that version), or why it could not be installed."""
    spec = f"{package}@{version}"
    found = folder / "node_modules" / ".bin" / binary
    if answers(found, version):
        return found
    folder.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(folder), spec],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"npm could not run: {exc}"
    if done.returncode != 0:
        tail = " ".join(done.stderr.split())[-300:]
        return f"npm install {spec} failed: {tail}"
    if not answers(found, version):
        return f"npm installed {spec}, but {found} does not answer --version"
    return found


def answers(binary: Path, version: str) -> bool:
    """`binary --version` names `version` (Claude Code puts it first, Codex last)."""
    if not binary.exists():
        return False
    try:
        done = subprocess.run(
            [str(binary), "--version"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and version in done.stdout.split()
