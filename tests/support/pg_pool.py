"""PostgreSQL databases for the tests, cloned from the migrated template before a test takes
one and dropped after it gave it back, on a thread of their own.

Each clone costs PostgreSQL about 50 ms and each drop as much again (measured on two cores,
PostgreSQL 15, `STRATEGY WAL_LOG`); a thousand PostgreSQL tests paid both inside the test
until this pool. A test now waits only when no clone is ready yet, and one connection of the
pool's serves every clone and drop of its process (one xdist worker).
"""

from __future__ import annotations

import threading
import uuid

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

AHEAD = 2  # clones kept ready: one for the next test, one for the test after it


class PgPool:
    def __init__(self, admin_url: str, template: str, ahead: int = AHEAD) -> None:
        self.admin_url = admin_url
        self.template = template
        self.ahead = ahead
        self._changed = threading.Condition()
        self._ready: list[str] = []
        self._used: list[str] = []
        self._closing = False
        self._failed: BaseException | None = None
        self._thread = threading.Thread(target=self._work, name="pg-pool", daemon=True)
        self._thread.start()

    def take(self) -> str:
        """The URL of a database of its own for one test (give it back after)."""
        with self._changed:
            while not self._ready and self._failed is None:
                self._changed.wait()
            if self._failed is not None:
                raise RuntimeError(f"the test databases' pool failed: {self._failed}")
            name = self._ready.pop(0)
            self._changed.notify_all()
        return make_url(self.admin_url).set(database=name).render_as_string(hide_password=False)

    def give_back(self, url: str) -> None:
        name = make_url(url).database
        assert name is not None
        with self._changed:
            self._used.append(name)
            self._changed.notify_all()

    def close(self) -> None:
        """Drops every database the pool made, then ends its thread."""
        with self._changed:
            self._closing = True
            self._changed.notify_all()
        self._thread.join(timeout=120)

    def _next(self) -> tuple[str, str] | None:
        """What to do next (under the lock): a test waiting for a clone comes first."""
        while True:
            if self._closing:
                return None
            if not self._ready:
                return "create", f"t_{uuid.uuid4().hex[:16]}"
            if self._used:
                return "drop", self._used.pop(0)
            if len(self._ready) < self.ahead:
                return "create", f"t_{uuid.uuid4().hex[:16]}"
            self._changed.wait()

    def _work(self) -> None:
        admin = create_engine(self.admin_url, isolation_level="AUTOCOMMIT", pool_pre_ping=True)

        def run(statement: str) -> None:
            # A connection the pool checks before each use: a test that restarted the
            # cluster costs the next statement a new connection, not the pool.
            with admin.connect() as conn:
                conn.execute(text(statement))

        try:
            while True:
                with self._changed:
                    job = self._next()
                if job is None:
                    break
                verb, name = job
                if verb == "create":
                    run(f"CREATE DATABASE {name} TEMPLATE {self.template}")
                    with self._changed:
                        self._ready.append(name)
                        self._changed.notify_all()
                else:
                    run(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            with self._changed:
                left, self._ready, self._used = self._ready + self._used, [], []
            for name in left:
                run(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        except BaseException as exc:  # a test waiting for a clone is told, not left hanging
            with self._changed:
                self._failed = exc
                self._changed.notify_all()
        finally:
            admin.dispose()
