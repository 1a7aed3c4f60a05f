"""The wheel installs anywhere: `python -m build` of this tree gives a wheel with every file
ondeck needs, and an `ondeck` installed from it alone (not from this checkout) works: it
prints its version, serves the dashboard with its templates and static files, migrates a
new database and keeps a task.

Offline, as the suite must be: the wheel is built with `--no-isolation` (the build backend
is in the dev extras), and the fresh venv it is installed into sees exactly the
distributions ondeck's wheel declares, and what they declare in turn, as symlinks of this
venv's installed copies, through a path file; pip then installs the wheel with
`--no-index`, resolving every requirement from those. So a file missing from the wheel, or
an import of something ondeck does not declare, fails here as it would on a fresh machine,
and ondeck itself can come from nowhere but the wheel (the checkout's editable install is
not among those distributions, and the test checks where `ondeck` was imported from).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from email.parser import Parser
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import ondeck
from support.pg import free_port
from support.served import stop, wait_until_answering

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "ondeck"
KOREAN = "배포 준비 — 한국어와 English"

pytestmark = pytest.mark.slow

# Files the wheel must carry whatever their name or folder (the plugin's folders start with
# a dot): planted in the copy that is built, so the package data's globs are held to them
# before such a folder exists in the tree.
PROBES = (
    "_wheel_probe/.hidden/.dotfile",
    "_wheel_probe/.hidden/deep/file.json",
    "_wheel_probe/a/b.ts",
)


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    home: Path

    @property
    def ondeck(self) -> str:
        return str(self.venv / "bin" / "ondeck")

    def env(self) -> dict[str, str]:
        """A user's shell: the venv's bin on PATH, nothing of this checkout or test run."""
        keep = ("LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
        env = {k: v for k, v in os.environ.items() if k in keep}
        env.update(
            PATH=f"{self.venv / 'bin'}:/usr/bin:/bin",
            HOME=str(self.home),
            ONDECK_DATA_DIR=str(self.home / "data"),
            ONDECK_TZ="Asia/Seoul",
            PYTHONUNBUFFERED="1",
        )
        return env

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.ondeck, *args], env=self.env(), capture_output=True, text=True, timeout=timeout
        )


def _source_copy(to: Path) -> Path:
    """What a clone holds of the package, without this checkout's caches and build output."""
    to.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, to / name)
    shutil.copytree(
        ROOT / "src",
        to / "src",
        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc"),
    )
    for probe in PROBES:
        path = to / "src" / "ondeck" / probe
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("probe\n", encoding="utf-8")
    return to


def _closure(requires: list[str]) -> list[metadata.Distribution]:
    """The installed distributions `requires` names, and theirs, transitively (with the
    extras a requirement asks for)."""
    found: dict[str, metadata.Distribution] = {}
    seen: set[tuple[str, frozenset[str]]] = set()
    todo = [(Requirement(r), frozenset[str]()) for r in requires]
    while todo:
        requirement, extras = todo.pop()
        marker = requirement.marker
        if marker is not None and not any(marker.evaluate({"extra": e}) for e in (extras or {""})):
            continue
        name = re.sub(r"[-_.]+", "-", requirement.name).lower()
        wanted = frozenset(requirement.extras)
        if (name, wanted) in seen:
            continue
        seen.add((name, wanted))
        dist = found.setdefault(name, metadata.distribution(name))
        todo.extend((Requirement(r), wanted) for r in dist.requires or [])
    return list(found.values())


def _expose(dists: list[metadata.Distribution], to: Path) -> None:
    """Each distribution's top-level files and folders (its modules and its dist-info),
    as symlinks into `to`: a site folder with those distributions and nothing else."""
    to.mkdir()
    for dist in dists:
        site = Path(str(dist.locate_file("")))
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in tops:
            if (site / top).exists() and not (to / top).exists():
                (to / top).symlink_to(site / top)


def _wheel_requires(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        [name] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        meta = Parser().parsestr(archive.read(name).decode())
    return meta.get_all("Requires-Dist") or []


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    base = tmp_path_factory.mktemp("wheel")
    source = _source_copy(base / "source")
    built = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(base / "dist")],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    [wheel] = (base / "dist").glob("ondeck-*.whl")

    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    [site] = (venv / "lib").glob("python3*/site-packages")
    _expose(_closure(_wheel_requires(wheel)), base / "deps")
    # A plain path line: the folder joins sys.path after the venv's own site-packages, and
    # no path file in it runs.
    (site / "ondeck-test-deps.pth").write_text(f"{base / 'deps'}\n", encoding="utf-8")
    pip_install = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install"]
    pip = subprocess.run(
        [*pip_install, "--no-index", "--no-cache-dir", "--disable-pip-version-check", str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PIP_FIND_LINKS": "", "PIP_EXTRA_INDEX_URL": ""},
    )
    assert pip.returncode == 0, pip.stdout[-3000:] + pip.stderr[-3000:]
    home = base / "home"
    home.mkdir()
    yield Installed(wheel=wheel, venv=venv, home=home)


def test_the_wheel_holds_every_file_of_the_package(installed: Installed) -> None:
    """Each file under src/ondeck (Python or not, hidden or not) is in the wheel, under the
    same path; nothing of the checkout's caches is."""
    tree = {
        f"ondeck/{p.relative_to(PACKAGE).as_posix()}"
        for p in PACKAGE.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    tree |= {f"ondeck/{probe}" for probe in PROBES}
    with zipfile.ZipFile(installed.wheel) as archive:
        shipped = {n for n in archive.namelist() if n.startswith("ondeck/")}
    assert tree - shipped == set(), "files of the package missing from the wheel"
    assert shipped - tree == set(), "files in the wheel that are not in the package"
    assert any(n.startswith("ondeck/migrations/versions/0001_") for n in shipped)
    assert "ondeck/entrypoints/web/static/ondeck.css" in shipped
    assert installed.wheel.name == f"ondeck-{ondeck.__version__}-py3-none-any.whl"


def test_the_installed_ondeck_is_the_wheels_and_prints_its_version(installed: Installed) -> None:
    assert shutil.which("ondeck", path=installed.env()["PATH"]) == installed.ondeck
    done = installed.run("--version")
    assert (done.returncode, done.stdout, done.stderr) == (0, f"ondeck {ondeck.__version__}\n", "")
    where = subprocess.run(
        [str(installed.venv / "bin" / "python"), "-c", "import ondeck; print(ondeck.__file__)"],
        env=installed.env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(where).is_relative_to(installed.venv), where


def test_the_installed_ondeck_is_up_with_its_dashboard_and_keeps_a_task(
    installed: Installed,
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = installed.home / "up.log"
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [installed.ondeck, "up", "--port", str(port)],
            env=installed.env(),
            stdout=out,
            stderr=out,
        )
    try:
        wait_until_answering(f"{url}/api/v1/health", proc, log=log)
        with urllib.request.urlopen(f"{url}/api/v1/health", timeout=30) as answer:
            assert answer.status == 200
        static = PACKAGE / "entrypoints" / "web" / "static"
        for name in ("ondeck.css", "htmx.min.js"):
            with urllib.request.urlopen(f"{url}/static/{name}", timeout=30) as answer:
                assert answer.read() == (static / name).read_bytes(), name
        with urllib.request.urlopen(f"{url}/", timeout=30) as answer:
            page = answer.read().decode()
        assert "<html" in page and "ondeck" in page

        added = installed.run("task", "add", KOREAN, "--due", "2026-12-04")
        assert added.returncode == 0, added.stderr
        with urllib.request.urlopen(f"{url}/api/v1/tasks", timeout=30) as answer:
            assert KOREAN in answer.read().decode()
        status = installed.run("db", "status")
        assert status.returncode == 0, status.stderr
        assert "current: True" in status.stdout.splitlines(), status.stdout
    finally:
        stop(proc)
    assert proc.returncode == 0, log.read_text(errors="replace")[-3000:]
    assert (installed.home / "data" / "ondeck.db").is_file()


def test_the_installed_ondeck_sets_up_claude_code(installed: Installed, claude_bin: Path) -> None:
    """`ondeck setup claude-code` on a fresh home, from the wheel, with the real Claude Code:
    it finds what it installs (the plugin) in the installed package, never in this checkout
    (Claude Code itself lives in pytest's cache folder of the checkout: not looked for)."""
    done = installed.run("setup", "claude-code", "--claude", str(claude_bin))
    assert done.returncode == 0, done.stdout + done.stderr
    written = [p for p in installed.home.rglob("*") if p.is_file() and p.suffix != ".log"]
    assert written, "setup wrote nothing"
    for path in written:
        assert str(ROOT / "src") not in path.read_text(errors="replace"), path
