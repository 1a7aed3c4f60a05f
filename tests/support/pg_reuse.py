"""PostgreSQL databases for the tests: a database a test is done with is emptied for the next
test of the same worker instead of dropped, and cloned anew from the template only when it
cannot be emptied exactly.

A clone and a drop cost PostgreSQL 50 to 130 ms on a quiet machine (seconds under load),
paid in each of some 1,100 tests; emptying one costs a few milliseconds. Emptied means as a
new clone: every table the template leaves empty truncated, identities restarted. Before a
database is handed on, its catalog is compared with that of the clone it was made as
(every relation, column, constraint, default, index, function, trigger, type, schema,
extension, grant, setting and sequence by OID and definition, the planner statistics and
the template's own rows); any difference, or a database that cannot be emptied, is dropped
and the next test gets a new clone. Synchronous, in the test's own teardown: no thread
(a pool filled on a thread once left psycopg connections to be collected unclosed).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field

import psycopg
from sqlalchemy.engine import make_url

# Namespaces a test's schema lives outside of (temporary ones come and go with sessions).
_USER_NS = (
    "SELECT oid FROM pg_namespace WHERE nspname NOT IN ('pg_catalog', 'information_schema',"
    " 'pg_toast') AND nspname NOT LIKE 'pg\\_temp\\_%' AND nspname NOT LIKE 'pg\\_toast\\_temp\\_%'"
)
_USER_REL = f"SELECT oid FROM pg_class WHERE relnamespace IN ({_USER_NS})"
# One text per catalog row that describes the schema; the database's fingerprint is them all.
_CATALOG = f"""
SELECT 'class' || ROW(c.oid, c.relname, c.relnamespace, c.relkind, c.relpersistence, c.relpages,
       c.reltuples, c.relallvisible, c.reltoastrelid, c.relacl, c.reloptions, c.relhastriggers,
       c.relrowsecurity, c.relforcerowsecurity, c.relreplident)::text
  FROM pg_class c WHERE c.oid IN ({_USER_REL})
UNION ALL
SELECT 'attribute' || ROW(a.attrelid, a.attnum, a.attname, a.atttypid, a.atttypmod, a.attnotnull,
       a.atthasdef, a.attisdropped, a.attidentity, a.attgenerated, a.attcollation,
       a.attstattarget, a.attoptions, a.attacl)::text
  FROM pg_attribute a WHERE a.attrelid IN ({_USER_REL})
UNION ALL
SELECT 'default' || ROW(d.oid, d.adrelid, d.adnum, md5(d.adbin::text))::text
  FROM pg_attrdef d WHERE d.adrelid IN ({_USER_REL})
UNION ALL
SELECT 'constraint' || ROW(k.oid, k.conname, k.contype, k.conrelid, k.convalidated,
       k.condeferrable, k.condeferred, md5(k.conbin::text))::text
  FROM pg_constraint k WHERE k.connamespace IN ({_USER_NS})
UNION ALL
SELECT 'index' || ROW(i.indexrelid, i.indrelid, i.indisvalid, i.indisready, i.indkey::text,
       md5(i.indpred::text), md5(i.indexprs::text))::text
  FROM pg_index i WHERE i.indrelid IN ({_USER_REL})
UNION ALL
SELECT 'function' || ROW(p.oid, p.proname, md5(p.prosrc), p.proconfig, p.proacl)::text
  FROM pg_proc p WHERE p.pronamespace IN ({_USER_NS})
UNION ALL
SELECT 'trigger' || ROW(t.oid, t.tgname, t.tgrelid, t.tgenabled, t.tgfoid)::text
  FROM pg_trigger t WHERE t.tgrelid IN ({_USER_REL})
UNION ALL
SELECT 'rule' || ROW(r.oid, r.rulename, r.ev_class, r.ev_enabled, md5(r.ev_action::text))::text
  FROM pg_rewrite r WHERE r.ev_class IN ({_USER_REL})
UNION ALL
SELECT 'policy' || ROW(y.oid)::text FROM pg_policy y
UNION ALL
SELECT 'type' || ROW(t.oid, t.typname, t.typacl)::text
  FROM pg_type t WHERE t.typnamespace IN ({_USER_NS})
UNION ALL
SELECT 'enum' || ROW(e.oid, e.enumlabel)::text FROM pg_enum e
UNION ALL
SELECT 'namespace' || ROW(n.oid, n.nspname, n.nspacl)::text
  FROM pg_namespace n WHERE n.oid IN ({_USER_NS})
UNION ALL
SELECT 'extension' || ROW(x.oid, x.extname, x.extversion)::text FROM pg_extension x
UNION ALL
SELECT 'default acl' || ROW(a.oid, a.defaclacl)::text FROM pg_default_acl a
UNION ALL
SELECT 'event trigger' || ROW(v.oid)::text FROM pg_event_trigger v
UNION ALL
SELECT 'large object' || ROW(o.oid)::text FROM pg_largeobject_metadata o
UNION ALL
SELECT 'statistics' || ROW(s.starelid, s.staattnum)::text
  FROM pg_statistic s WHERE s.starelid IN ({_USER_REL})
UNION ALL
SELECT 'extended statistics' || ROW(s.oid)::text FROM pg_statistic_ext s
UNION ALL
SELECT 'sequence' || ROW(q.schemaname, q.sequencename, q.last_value, q.start_value,
       q.increment_by, q.min_value, q.max_value, q.cycle, q.cache_size)::text
  FROM pg_sequences q
UNION ALL
SELECT 'setting' || ROW(s.setrole, s.setconfig)::text
  FROM pg_db_role_setting s
  WHERE s.setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
UNION ALL
SELECT 'database' || ROW(d.datconnlimit, d.datallowconn, d.datacl)::text
  FROM pg_database d WHERE d.datname = current_database()
UNION ALL
SELECT 'prepared' || ROW(g.gid)::text FROM pg_prepared_xacts g
  WHERE g.database = current_database()
"""
_FINGERPRINT = f"SELECT md5(string_agg(line, E'\\n' ORDER BY line)) FROM ({_CATALOG}) AS c(line)"
_TABLES = (
    "SELECT format('%I.%I', n.nspname, c.relname), pg_total_relation_size(c.oid) FROM pg_class c"
    " JOIN pg_namespace n ON n.oid = c.relnamespace"
    f" WHERE c.oid IN ({_USER_REL}) AND c.relkind IN ('r', 'p') ORDER BY 1"
)
_SESSIONS = "SELECT pid FROM pg_stat_activity WHERE datname = %s"


def _connect(url: str) -> psycopg.Connection:
    parts = make_url(url)
    return psycopg.connect(
        host=parts.host,
        port=parts.port,
        user=parts.username,
        password=parts.password,
        dbname=parts.database,
        autocommit=True,
        connect_timeout=30,
    )


@dataclass
class Shape:
    """What a new clone of the template is: its fingerprint, the tables a test may fill
    (with their size on disk, all forks and indexes), the contents of the ones the template
    fills, the counts in pg_class and where each sequence stands."""

    fingerprint: str
    empty: dict[str, int]
    kept: dict[str, str]
    # The rows of the tables the template fills, as JSON: put back when a test changed them
    # (the recall index's corpus counter was such a row, until migration 0014 counted it per
    # side, in rows of its own).
    rows: dict[str, str]
    # (oid, relpages, reltuples, relallvisible): TRUNCATE sets an index's to "never
    # counted", where a new clone has the counts CREATE INDEX wrote.
    counts: list[tuple[int, int, float, int]]
    # (sequence, last_value or None, start_value)
    sequences: list[tuple[str, int | None, int]]

    @classmethod
    def of(cls, conn: psycopg.Connection) -> Shape:
        empty, kept, rows = {}, {}, {}
        for table, size in conn.execute(_TABLES).fetchall():
            if conn.execute(f"SELECT EXISTS (SELECT FROM {table})").fetchone() == (True,):
                kept[table] = _contents(conn, table)
                found = conn.execute(f"SELECT json_agg(t)::text FROM {table} t").fetchone()
                assert found is not None
                rows[table] = found[0]
            else:
                empty[table] = size
        counts = conn.execute(
            "SELECT oid::int, relpages, reltuples, relallvisible FROM pg_class"
            f" WHERE oid IN ({_USER_REL}) ORDER BY oid"
        ).fetchall()
        sequences = conn.execute(
            "SELECT format('%I.%I', schemaname, sequencename), last_value, start_value"
            " FROM pg_sequences ORDER BY 1"
        ).fetchall()
        row = conn.execute(_FINGERPRINT).fetchone()
        assert row is not None
        return cls(row[0], empty, kept, rows, counts, sequences)

    def reset(self, conn: psycopg.Connection) -> None:
        """Truncate the tables a test wrote to (any whose files grew), put the template's
        rows, every sequence and every count in pg_class back as they are in a new clone."""
        sizes = dict(conn.execute(_TABLES).fetchall())
        written = [t for t, size in self.empty.items() if sizes.get(t) != size]
        if written:
            # CASCADE: a table the test left empty may refer to one it wrote.
            conn.execute(f"TRUNCATE {', '.join(written)} CASCADE")
        for table, kept in self.kept.items():
            if _contents(conn, table) != kept:
                conn.execute(f"DELETE FROM {table}")
                conn.execute(
                    f"INSERT INTO {table} SELECT * FROM json_populate_recordset(NULL::{table}, %s)",
                    [self.rows[table]],
                )
        names, last, start = (list(c) for c in zip(*self.sequences, strict=True))
        conn.execute(
            "SELECT setval(s.name::regclass, coalesce(s.last, s.start), s.last IS NOT NULL)"
            " FROM unnest(%s::text[], %s::bigint[], %s::bigint[]) AS s(name, last, start)",
            [names, last, start],
        )
        conn.execute(
            "UPDATE pg_class c SET relpages = v.pages, reltuples = v.tuples,"
            " relallvisible = v.visible"
            " FROM unnest(%s::oid[], %s::int[], %s::real[], %s::int[])"
            " AS v(oid, pages, tuples, visible)"
            " WHERE c.oid = v.oid AND (c.relpages, c.reltuples, c.relallvisible)"
            " IS DISTINCT FROM (v.pages, v.tuples, v.visible)",
            [list(c) for c in zip(*self.counts, strict=True)],
        )


def _contents(conn: psycopg.Connection, table: str) -> str:
    row = conn.execute(f"SELECT md5(string_agg(t::text, E'\\n' ORDER BY t::text)) FROM {table} t")
    found = row.fetchone()
    return found[0] if found else ""


@dataclass
class Databases:
    """The databases of one test process (a pytest-xdist worker): each test takes one, and
    gives it back for the next test when it can be emptied exactly."""

    admin_url: str
    template: str
    spare: list[str] = field(default_factory=list)
    shape: Shape | None = None
    counts: dict[str, int] = field(default_factory=lambda: {"cloned": 0, "reused": 0})

    def take(self) -> str:
        if self.spare:
            self.counts["reused"] += 1
            return self.spare.pop()
        self.counts["cloned"] += 1
        name = _new_name()
        with _connect(self.admin_url) as admin:
            admin.execute(f"CREATE DATABASE {name} TEMPLATE {self.template}")
        url = make_url(self.admin_url).set(database=name).render_as_string(hide_password=False)
        if self.shape is None:
            with _connect(url) as conn:
                self.shape = Shape.of(conn)
        return url

    def give_back(self, url: str) -> None:
        """Empty `url` for the next test under a new name, or drop it when it cannot be made
        as new. The new name first: a thread or process the test left behind that connects
        late finds no database, as it would after a drop, instead of the next test's."""
        renamed = None
        try:
            renamed = self._rename(url)
            if renamed is not None and self._empty(renamed):
                self.spare.append(renamed)
                return
        except psycopg.Error:
            pass
        self.drop(renamed or url)

    def _rename(self, url: str) -> str | None:
        old = make_url(url).database
        new = _new_name()
        with _connect(self.admin_url) as admin:
            if not _alone(admin, str(old)):
                return None
            admin.execute(f"ALTER DATABASE {old} RENAME TO {new}")
        return make_url(url).set(database=new).render_as_string(hide_password=False)

    def _empty(self, url: str) -> bool:
        assert self.shape is not None
        with _connect(url) as conn:
            conn.execute("SET lock_timeout = '10s'")
            self.shape.reset(conn)
            row = conn.execute(_FINGERPRINT).fetchone()
            if row is None or row[0] != self.shape.fingerprint:
                return False
            return all(_contents(conn, t) == kept for t, kept in self.shape.kept.items())

    def drop(self, url: str) -> None:
        name = make_url(url).database
        with _connect(self.admin_url) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def close(self) -> None:
        while self.spare:
            self.drop(self.spare.pop())


def _new_name() -> str:
    return f"t_{uuid.uuid4().hex[:16]}"


def _alone(admin: psycopg.Connection, name: str, timeout: float = 10.0) -> bool:
    """End every session on database `name` (a process the test left running, a pool it
    did not dispose of), as DROP DATABASE ... WITH (FORCE) would; True once they are gone
    (their temporary tables and locks with them)."""
    others = [pid for (pid,) in admin.execute(_SESSIONS, (name,)).fetchall()]
    if not others:
        return True
    admin.execute("SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid", (others,))
    deadline = time.monotonic() + timeout
    while admin.execute(_SESSIONS, (name,)).fetchone() is not None:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True
