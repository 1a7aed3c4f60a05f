"""What every route needs: its call on the store (settings, engine, one instant per request).

A route's `store` is the request's `Call` (entrypoints/gateway.py), the same one the dashboard's
pages get from `store_of`, so both read the clock once per request and open their
transactions, wake the jobs loop and render the context the same way.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from ondeck.entrypoints.gateway import Call, call_of


def _call(request: Request) -> Call:
    return call_of(request)


StoreDep = Annotated[Call, Depends(_call)]
