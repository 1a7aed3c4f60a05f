"""A throwaway PostgreSQL cluster for the test session, from the machine's server binaries.

`initdb` + `pg_ctl` on a free loopback port with fsync off. PostgreSQL refuses to run as
root, so as root both run as the `postgres` OS user through `runuser`.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path


def find_bindir() -> Path | None:
    explicit = os.environ.get("ONDECK_TEST_PG_BIN")
    if explicit:
        return Path(explicit)
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if Path(candidate, "initdb").exists() and Path(candidate, "pg_ctl").exists():
            return Path(candidate)
    found = shutil.which("initdb")
    return Path(found).parent if found else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    bindir: Path
    root: Path
    port: int

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def admin_url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str) -> None:
        cmd = list(args)
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:2])} failed: {result.stderr.strip()[-2000:]}")

    def start(self) -> None:
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
        self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
            "--no-instructions",
        )
        options = " ".join(
            [
                f"-p {self.port}",
                "-c listen_addresses=127.0.0.1",
                f"-c unix_socket_directories={self.root}",
                "-c fsync=off",
                "-c synchronous_commit=off",
                "-c full_page_writes=off",
                "-c max_connections=300",
                "-c shared_buffers=128MB",
            ]
        )
        self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.root / "log"),
            "-o",
            options,
            "-w",
            "-t",
            "60",
            "start",
        )

    def stop(self) -> None:
        try:
            self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def start_cluster(bindir: Path) -> Cluster:
    root = Path(tempfile.mkdtemp(prefix="ondeck-pg-"))
    os.chmod(root, 0o755)
    cluster = Cluster(bindir=bindir, root=root, port=free_port())
    cluster.start()
    return cluster


def require_password(admin_url: str, database_url: str, role: str, password: str) -> str:
    """`database_url` as `role`, a role that must give `password` (scram-sha-256) over TCP.

    The test cluster trusts everyone; a line for this role alone, put before the others in
    pg_hba.conf, makes it the one that needs its password. Needs the cluster's files (the
    throwaway one: as root, or as the user that owns them)."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            hba = Path(str(conn.execute(text("SHOW hba_file")).scalar_one()))
            line = f"host all {role} 127.0.0.1/32 scram-sha-256\n"
            before = hba.read_text()
            if line not in before:
                hba.write_text(line + before)
                conn.execute(text("SELECT pg_reload_conf()"))
            conn.execute(text("SET password_encryption = 'scram-sha-256'"))
            exists = conn.execute(
                text("SELECT 1 FROM pg_roles WHERE rolname = :r"), {"r": role}
            ).scalar()
            verb = "ALTER" if exists else "CREATE"
            conn.execute(text(f"{verb} ROLE {role} LOGIN SUPERUSER PASSWORD '{password}'"))
    finally:
        admin.dispose()
    url = make_url(database_url).set(username=role, password=password)
    return url.render_as_string(hide_password=False)
