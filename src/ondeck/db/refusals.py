"""What a database's refusal means to ondeck, told apart without importing a driver or
SQLAlchemy (the hooks' bare path reads it too):

- `content`: the record itself is what the store refuses (a value too long, a CHECK or NOT
  NULL constraint): trying again will never work, so it is set aside (the spool's
  rejected.jsonl) and the records behind it go on;
- `store`: the store will not take anything now (unreachable, read-only after a failover,
  out of disk, no privilege, shutting down, a lock or a serialization conflict): the record
  waits in the spool, with the store's reason, for a store that takes it.

Anything else a driver raises on the hooks' path is treated as `store` too: a record kept
in the spool is never lost, while one set aside needs a person.
"""

from __future__ import annotations

# PostgreSQL SQLSTATEs (appendix A of its manual): the classes that are the data's fault.
_PG_CONTENT_CLASSES = ("22",)  # data exception: 22001 value too long, 22P05 untranslatable
_PG_CONTENT_CODES = ("23502", "23514")  # not null, check (23505 unique: a race, not content)
# What every command, not only the hooks, calls "database unavailable" (exit 5, HTTP 503),
# beyond psycopg's OperationalError (08 connection, 53 resources, 57 operator, 58 system).
_PG_STORE_CODES = ("25006", "42501", "25P03", "40001", "40P01", "55P03")
_PG_STORE_CLASSES = ("08", "53", "57", "58")


def sqlstate(exc: BaseException) -> str:
    value = getattr(exc, "sqlstate", None)
    return value if isinstance(value, str) else ""


def is_content(exc: BaseException) -> bool:
    """The store refused the record for what it holds (see the module's docstring)."""
    module = type(exc).__module__
    if module.startswith("sqlite3"):
        name = type(exc).__name__
        if name == "DataError":
            return True
        lowered = str(exc).lower()
        return name == "IntegrityError" and (
            "check constraint" in lowered or "not null constraint" in lowered
        )
    if module.startswith("psycopg"):
        code = sqlstate(exc)
        return code[:2] in _PG_CONTENT_CLASSES or code in _PG_CONTENT_CODES
    return False


def is_pg_store_refusal(exc: BaseException) -> bool:
    """A PostgreSQL error by which the store, not the statement, refuses (read-only, ...)."""
    if not type(exc).__module__.startswith("psycopg"):
        return False
    code = sqlstate(exc)
    return code in _PG_STORE_CODES or code[:2] in _PG_STORE_CLASSES
