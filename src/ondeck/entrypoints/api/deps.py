"""What every route needs: its call on the store (settings, engine, one instant per request).

A route's `store` is the request's `Call` (entrypoints/gateway.py), the same one the dashboard's
pages get from `store_of`, so both read the clock once per request and open their
transactions, wake the jobs loop and render the context the same way.

A request may name the database it expects (`X-Ondeck-Store-Expected`: the hooks, client
mode and the mod send the id of the database their spool and earlier events went to): a
server serving another one refuses it (409 `store_mismatch`) on every route, before it reads
or writes anything, so no door files half a session, or shows a line, from another store.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from ondeck.core.errors import Conflict
from ondeck.entrypoints.gateway import Call, call_of

EXPECTED = "x-ondeck-store-expected"


def _call(request: Request) -> Call:
    call = call_of(request)
    expected = request.headers.get(EXPECTED)
    if expected is not None and expected != call.store.store_id(fresh=True):
        raise Conflict("this server serves another database", code="store_mismatch")
    return call


StoreDep = Annotated[Call, Depends(_call)]
