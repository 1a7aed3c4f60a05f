"""The size of a request body the API takes: one number for the server, which refuses more
with 413 (entrypoints/api/body_limit.py), and for the hooks, which pack what they send
under it (sessions/capture/remote.py) rather than learn it from a refusal."""

from __future__ import annotations

MAX_BODY_BYTES = 1024 * 1024
