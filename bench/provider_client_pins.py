"""Variant C of bench/provider_clients.py (httpx `AsyncClient` on uvloop, the call
inside `asyncio.timeout`) against the behaviours the provider tests pin, each on a
small misbehaving server on this machine. `python -m bench.provider_client_pins`
prints one line per behaviour; it is a check of the choice, not the adapter's tests.
"""

from __future__ import annotations

import asyncio
import socket
import time

import httpx
import uvloop

CAP = 64 * 1024
HEAD = b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"


async def serve(
    reply: bytes, *, drip_s: float = 0.0, hold_s: float = 0.0, delay_s: float = 0.0
) -> tuple[asyncio.Server, str, list[str]]:
    """A server that reads a request, waits `delay_s`, answers `reply` (a byte
    every `drip_s` when set), then holds the connection `hold_s`; `seen` says what
    it saw: a connection, then the client's close ("eof") or its write failing
    ("closed under it")."""
    seen: list[str] = []

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        seen.append("connection")
        await r.readuntil(b"\r\n\r\n")
        await asyncio.sleep(delay_s)
        try:
            if drip_s:
                for byte in reply:
                    w.write(bytes([byte]))
                    await w.drain()
                    await asyncio.sleep(drip_s)
            else:
                w.write(reply)
            await w.drain()
            await asyncio.sleep(hold_s)
            seen.append("eof" if not await r.read(1) else "more")
        except ConnectionError:
            seen.append("closed under it")
        w.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}", seen


def client(**limits: int) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        timeout=httpx.Timeout(connect=2, read=1, write=1, pool=0.3),
        limits=httpx.Limits(**limits) if limits else httpx.Limits(),
    )


async def call(c: httpx.AsyncClient, url: str, deadline_s: float) -> tuple[int, int]:
    async with asyncio.timeout(deadline_s), c.stream("POST", url, content=b"{}") as r:
        raw = b""
        async for chunk in r.aiter_raw():
            raw += chunk
            if len(raw) > CAP:
                break
        return r.status_code, len(raw[: CAP + 1])


async def main() -> None:
    # A body dripped inside the read timeout (1 s): the deadline (2 s) ends it.
    body = b"x" * 100
    server, url, seen = await serve(
        HEAD + b"Content-Length: 100\r\n\r\n" + body, drip_s=0.05
    )
    async with client() as c:
        began = time.monotonic()
        try:
            await call(c, url, 2.0)
            print("drip: NOT cut")
        except TimeoutError:
            took = time.monotonic() - began
            await asyncio.sleep(0.2)
            print(f"drip: cut at {took:.2f} s (deadline 2 s); server saw {seen}")
    server.close()

    # A head cut by the server's close: an error, never a 201.
    server, url, _ = await serve(b"HTTP/1.1 201 Cre")
    async with client() as c:
        try:
            await call(c, url, 5)
            print("cut head: read as an answer (WRONG)")
        except httpx.HTTPError as error:
            print(f"cut head: {type(error).__name__} (sent: outcome unknown)")
    server.close()

    # No free connection within the pool wait: PoolTimeout, nothing written.
    server, url, seen = await serve(HEAD + b"Content-Length: 2\r\n\r\n{}", delay_s=0.6)
    async with client(max_connections=1) as c:
        first = asyncio.create_task(call(c, url, 5))
        await asyncio.sleep(0.1)
        try:
            async with c.stream("POST", url, content=b"{}"):  # the pool is full
                pass
            print("full pool: sent (WRONG)")
        except httpx.PoolTimeout:
            print(f"full pool: PoolTimeout; server saw {seen.count('connection')} "
                  "connection(s)")  # fmt: skip
        await first
    server.close()

    # An endless answer: read to 64 KiB + 1, then the connection is closed.
    server, url, seen = await serve(
        HEAD + b"Content-Length: 10000000\r\n\r\n" + b"x" * 1_000_000, hold_s=0.5
    )
    async with client() as c:
        status, read = await call(c, url, 5)
        await asyncio.sleep(0.7)
        print(f"endless answer: status {status}, {read} bytes kept; "
              f"server saw {seen}")  # fmt: skip
    server.close()

    # Refused: ConnectError, nothing sent.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    async with client() as c:
        try:
            await call(c, f"http://127.0.0.1:{port}/", 5)
        except httpx.ConnectError:
            print("refused: ConnectError (not sent)")


if __name__ == "__main__":
    uvloop.run(main())
