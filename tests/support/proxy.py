"""A loopback TCP proxy the test controls: the database "goes away" and comes back.

    proxy = Proxy("127.0.0.1", 5432).start()     # clients connect to proxy.port
    proxy.cut()        # every open connection is reset; new ones are accepted and closed
    proxy.cut("blackhole")   # ... or accepted and left hanging (a silent network)
    proxy.restore()    # connections go through again

It runs its own asyncio loop in a thread. `attempts` counts the connections made while cut:
how hard the clients knock on a closed door.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any


class Proxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self.mode = "open"
        self.attempts = 0
        self.connections = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.AbstractServer | None = None
        self._open: set[asyncio.StreamWriter] = set()
        self._held: set[asyncio.StreamWriter] = set()

    def start(self) -> Proxy:
        self._thread.start()
        self._call(self._start())
        return self

    def cut(self, mode: str = "reject") -> None:
        """The database is gone: `reject` (connections refused at once) or `blackhole`."""
        assert mode in ("reject", "blackhole")
        self._call(self._cut(mode))

    def restore(self) -> None:
        self._call(self._restore())

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self._call(self._stop())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def _call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=30)

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _cut(self, mode: str) -> None:
        self.mode = mode
        self.attempts = 0
        for writer in list(self._open):
            writer.transport.abort()  # an RST: the server vanished mid-conversation
        self._open.clear()

    async def _restore(self) -> None:
        self.mode = "open"
        for writer in list(self._held):
            writer.transport.abort()
        self._held.clear()

    async def _stop(self) -> None:
        await self._restore()
        await self._cut("reject")
        if self._server is not None:
            self._server.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.mode != "open":
            self.attempts += 1
            if self.mode == "reject":
                writer.transport.abort()
            else:
                self._held.add(writer)  # silence until restore() or stop()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self.connections += 1
        self._open.update((writer, up_writer))
        await asyncio.gather(
            self._pump(reader, up_writer), self._pump(up_reader, writer), return_exceptions=True
        )
        for side in (writer, up_writer):
            self._open.discard(side)
            side.transport.abort()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                if self.mode != "open":
                    break
                writer.write(data)
                await writer.drain()
        finally:
            writer.transport.abort()
