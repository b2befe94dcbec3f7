"""A small asyncio TCP proxy for fault tests (no suitable package exists here).

Each direction can pass, be delayed, or be blackholed; connections can be reset; and
a one-shot trap resets a connection instead of delivering the server's reply to a
client message that contains a marker (e.g. the reply to COMMIT).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
from typing import Literal

from adapters.embedded.process import free_port

Direction = Literal["up", "down"]  # up: client -> server, down: server -> client
Mode = Literal["pass", "blackhole"]


class Proxy:
    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self.port = free_port()
        self.modes: dict[Direction, Mode] = {"up": "pass", "down": "pass"}
        self.delay = 0.0
        self.trap: bytes | None = None
        self.trapped = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._writers: set[asyncio.StreamWriter] = set()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None

    def url(self, scheme: str, path: str = "") -> str:
        return f"{scheme}://127.0.0.1:{self.port}{path}"

    def __enter__(self) -> Proxy:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(5)
        return self

    def __exit__(self, *_: object) -> None:
        self.reset()
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    def set(
        self, *, up: Mode = "pass", down: Mode = "pass", delay: float = 0.0
    ) -> None:
        self.modes = {"up": up, "down": down}
        self.delay = delay

    def reset(self) -> None:
        """Abort every open connection with a TCP reset."""
        asyncio.run_coroutine_threadsafe(self._reset_all(), self._loop).result(5)

    def trap_reply_to(self, marker: bytes) -> None:
        """Lose the server's reply to the next client message containing `marker`."""
        self.trapped.clear()
        self.trap = marker

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)

    async def _stop(self) -> None:
        """Close the listener and end every pump, so no task outlives the loop."""
        if self._server is not None:
            self._server.close()
        tasks = asyncio.all_tasks() - {asyncio.current_task()}
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _reset_all(self) -> None:
        for writer in list(self._writers):
            _abort(writer)
        self._writers.clear()

    async def _accept(
        self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter
    ) -> None:
        try:
            server_r, server_w = await asyncio.open_connection(*self.target)
        except OSError:
            _abort(client_w)
            return
        self._writers |= {client_w, server_w}
        armed = asyncio.Event()
        up = self._pump(client_r, server_w, "up", armed, pair=client_w)
        down = self._pump(server_r, client_w, "down", armed, pair=server_w)
        await asyncio.gather(up, down, return_exceptions=True)
        for writer in (client_w, server_w):
            self._writers.discard(writer)
            _abort(writer)

    async def _pump(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        direction: Direction,
        armed: asyncio.Event,
        pair: asyncio.StreamWriter,
    ) -> None:
        while data := await reader.read(65536):
            if self.delay:
                await asyncio.sleep(self.delay)
            if direction == "up" and self.trap is not None and self.trap in data:
                self.trap = None
                armed.set()
            elif direction == "down" and armed.is_set():
                self.trapped.set()
                _abort(writer)  # the reply never arrives: the client sees a reset
                _abort(pair)
                return
            if self.modes[direction] == "blackhole":
                continue
            writer.write(data)
            await writer.drain()


def _abort(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
            )
    writer.transport.abort()
