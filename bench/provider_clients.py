"""The providers' HTTP client stacks, by CPU per send
(docs/decisions/2026-12-01-provider-http-client.md).

`python -m bench.provider_clients [RUNS] [SENDS]` starts `club sandbox email
--rate-limit-per-s 100000`, then runs each variant RUNS times (default 5),
interleaved (A, B, C, C-async, D, A, B, ...), each run in a process of its own:
8 threads (C-async: 8 tasks) send SENDS e-mails (default 2,000) between them over
kept-alive connections, after 200 unmeasured sends. What is measured is the CPU
time of the sending process (every thread of it: the uvloop thread and the
deadline watchdog included), not wall time: the machine is shared. It prints each
run, then the median, min and max of each variant, and the load average at each run.

Each send is the e-mail adapter's: `POST /messages`, compact JSON `{to, subject,
body}`, an `Idempotency-Key`, the answer read to 64 KiB at most, its JSON read for
`id` and `Idempotent-Replayed` looked at.

- A: today's `adapters.providers.http_client.ProviderPool`: since 2026-12-01 D made
  whole (a queue of `urllib3.connection` connections, proxies, the cut head, the
  64 KiB cap), its whole-call deadline through the watchdog of `call_deadline`;
  until then urllib3's pools with private overrides.
- B: httpx `Client`, per-phase timeouts, `client.stream(...)` read to a byte cap;
  no whole-call deadline (httpx sync has none).
- C: httpx `AsyncClient` on a uvloop loop in a thread of its own, each call inside
  `asyncio.timeout(22)`, called from 8 threads through
  `asyncio.run_coroutine_threadsafe`.
- C-async: the same calls made directly from 8 tasks on the loop.
- D: urllib3's public API only: `urllib3.connection.HTTPConnection`s in a queue of
  our own, `.request()` / `.getresponse()`, the call's deadline from
  `call_deadline.Call` (which shuts `conn.sock`, a public attribute).
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import uvloop
from urllib3.connection import HTTPConnection
from urllib3.util import parse_url

from adapters.embedded.process import free_port
from adapters.embedded.readiness import wait_ready
from adapters.providers.call_deadline import Call
from adapters.providers.http_client import ProviderPool

CONNECT_S, READ_S = 2.0, 10.0
CALL_S = CONNECT_S + 2 * READ_S  # 22 s, as ProviderPool's whole-call deadline
MAX_ANSWER_BYTES = 64 * 1024
CONNECTIONS = 16  # as the e-mail adapter's pool
SLOTS = 8  # the worker's slots
WARMUP = 200
VARIANTS = ("A", "B", "C", "C-async", "D")
NAMES = {
    "A": "A. ProviderPool (urllib3 public API, own queue, + watchdog)",
    "B": "B. httpx Client, stream + byte cap",
    "C": "C. httpx AsyncClient on uvloop, from threads",
    "C-async": "C. httpx AsyncClient on uvloop, from async code",
    "D": "D. urllib3 public API, own connection queue",
}


def _body(i: int) -> bytes:
    message = {"to": f"s{i}@bench.example", "subject": "Enrolled",
               "body": "You are enrolled in Bench on 2027-01-01 at 10:00."}  # fmt: skip
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()


def _headers() -> dict[str, str]:
    return {"Content-Type": "application/json", "Idempotency-Key": str(uuid.uuid4())}


def _accepted(status: int, raw: bytes, headers: Any) -> bool:
    """What the adapter reads of an answer: its status, its JSON's id, whether
    the provider says it replayed an earlier send."""
    if len(raw) > MAX_ANSWER_BYTES:
        raise ValueError("over the cap")
    provider_id = json.loads(raw).get("id")
    replayed = headers.get("Idempotent-Replayed") == "true"
    return 200 <= status < 300 and isinstance(provider_id, str) and not replayed


# --- the senders: each returns a function that makes one send ------------------


def _sender_a(base: str) -> tuple[Callable[[int], bool], Callable[[], None]]:
    pool = ProviderPool(base, "CLUB_EMAIL_PROVIDER_URL", connect_timeout_s=CONNECT_S,
                        read_timeout_s=READ_S, connections=CONNECTIONS)  # fmt: skip

    def send(i: int) -> bool:
        answer = pool.request("POST", "/messages", _body(i), _headers())
        return _accepted(answer.status, answer.data, answer.headers)

    return send, pool.close


def _sender_b(base: str) -> tuple[Callable[[int], bool], Callable[[], None]]:
    client = httpx.Client(
        base_url=base,
        timeout=httpx.Timeout(
            connect=CONNECT_S, read=READ_S, write=READ_S, pool=READ_S
        ),
        limits=httpx.Limits(
            max_connections=CONNECTIONS, max_keepalive_connections=CONNECTIONS
        ),
    )

    def send(i: int) -> bool:
        with client.stream(
            "POST", "/messages", content=_body(i), headers=_headers()
        ) as r:
            raw = b""
            for chunk in r.iter_raw():
                raw += chunk
                if len(raw) > MAX_ANSWER_BYTES:
                    break
            return _accepted(r.status_code, raw[: MAX_ANSWER_BYTES + 1], r.headers)

    return send, client.close


class _Loop:
    """A uvloop loop in a thread of its own, as a worker whose jobs run in threads
    would hold one."""

    def __init__(self) -> None:
        self.loop = uvloop.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


def _async_client(base: str) -> Any:
    return httpx.AsyncClient(
        base_url=base,
        timeout=httpx.Timeout(
            connect=CONNECT_S, read=READ_S, write=READ_S, pool=READ_S
        ),
        limits=httpx.Limits(
            max_connections=CONNECTIONS, max_keepalive_connections=CONNECTIONS
        ),
    )


async def _send_c(client: Any, i: int) -> bool:
    async with asyncio.timeout(CALL_S):  # the whole call: cancelled, it is closed
        async with client.stream(
            "POST", "/messages", content=_body(i), headers=_headers()
        ) as r:
            raw = b""
            async for chunk in r.aiter_raw():
                raw += chunk
                if len(raw) > MAX_ANSWER_BYTES:
                    break
            return _accepted(r.status_code, raw[: MAX_ANSWER_BYTES + 1], r.headers)


def _sender_c(base: str) -> tuple[Callable[[int], bool], Callable[[], None]]:
    loop = _Loop()

    async def make() -> Any:  # the client is made on its loop
        return _async_client(base)

    client = loop.run(make())

    def close() -> None:
        loop.run(client.aclose())
        loop.stop()

    return (lambda i: loop.run(_send_c(client, i))), close


def _sender_d(base: str) -> tuple[Callable[[int], bool], Callable[[], None]]:
    url = parse_url(base)
    idle: queue.LifoQueue[HTTPConnection] = queue.LifoQueue(CONNECTIONS)
    for _ in range(CONNECTIONS):
        idle.put(HTTPConnection(str(url.host), url.port, timeout=CONNECT_S))

    def send(i: int) -> bool:
        conn = idle.get(timeout=READ_S)  # none free in time: nothing sent
        call = Call(CALL_S)
        try:
            call.attach(conn)  # from here the deadline shuts conn.sock
            if conn.sock is not None and not conn.is_connected:  # closed while idle
                conn.close()
            if conn.sock is None:
                conn.connect()  # within the connect timeout: nothing sent if not
                sock: socket.socket = conn.sock  # type: ignore[assignment]  # connected
                sock.settimeout(READ_S)  # then each silence within the read timeout
            conn.request("POST", "/messages", body=_body(i), headers=_headers(),
                         preload_content=False)  # fmt: skip
            r = conn.getresponse()
            raw = b""
            while len(raw) <= MAX_ANSWER_BYTES:
                more = r.read(MAX_ANSWER_BYTES + 1 - len(raw), decode_content=False)
                if not more:
                    break
                raw += more
            if call.end() or len(raw) > MAX_ANSWER_BYTES:  # cut: of no further use
                conn.close()
            return _accepted(r.status, raw, r.headers)
        except BaseException:
            conn.close()
            raise
        finally:
            call.end()
            idle.put(conn)

    def close() -> None:
        while not idle.empty():
            idle.get().close()

    return send, close


SENDERS = {"A": _sender_a, "B": _sender_b, "C": _sender_c, "D": _sender_d}


# --- one run, in a process of its own -------------------------------------------


def _threads(send: Callable[[int], bool], first: int, count: int) -> int:
    ok = [0] * SLOTS
    failed: list[BaseException] = []
    counter = iter(range(first, first + count))
    lock = threading.Lock()

    def slot(n: int) -> None:
        while not failed:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            try:
                ok[n] += send(i)
            except BaseException as error:  # the run fails, saying why
                failed.append(error)

    threads = [threading.Thread(target=slot, args=(n,)) for n in range(SLOTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failed:
        raise failed[0]
    return sum(ok)


async def _tasks(client: Any, first: int, count: int) -> int:
    counter = iter(range(first, first + count))

    async def slot() -> int:
        ok = 0
        while (i := next(counter, None)) is not None:
            ok += await _send_c(client, i)
        return ok

    return sum(await asyncio.gather(*(slot() for _ in range(SLOTS))))


def child(variant: str, base: str, sends: int) -> dict[str, float]:
    if variant == "C-async":

        async def main() -> tuple[float, float, int]:
            client = _async_client(base)
            await _tasks(client, 0, WARMUP)
            cpu, wall = time.process_time(), time.perf_counter()
            ok = await _tasks(client, WARMUP, sends)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            await client.aclose()
            return cpu, wall, ok

        cpu, wall, ok = uvloop.run(main())
    else:
        send, close = SENDERS[variant](base)
        _threads(send, 0, WARMUP)
        cpu, wall = time.process_time(), time.perf_counter()
        ok = _threads(send, WARMUP, sends)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        close()
    if ok != sends:
        raise RuntimeError(f"{variant}: {sends - ok} of {sends} sends not accepted")
    return {"cpu_ms": 1000 * cpu / sends, "per_s": sends / wall,
            "load": os.getloadavg()[0]}  # fmt: skip


def main(runs: int, sends: int) -> None:
    print(f"commit {_commit()}, {runs} runs x {sends} sends per variant, "
          f"{SLOTS} slots, load {os.getloadavg()}", flush=True)  # fmt: skip
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    results: dict[str, list[dict[str, float]]] = {v: [] for v in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="club-bench-clients-") as data:
        sandbox = subprocess.Popen(
            [sys.executable, "-m", "entrypoints.cli", "sandbox", "email",
             "--rate-limit-per-s", "100000"],
            env=os.environ | {"CLUB_EMAIL_PROVIDER_URL": base, "CLUB_DATA_DIR": data},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            wait_ready(base, 90, path="/knobs")
            for n in range(runs):
                for variant in VARIANTS:
                    row = _run(variant, base, sends)
                    results[variant].append(row)
                    cpu, rate, load = row["cpu_ms"], row["per_s"], row["load"]
                    print(f"run {n + 1} {variant:8} {cpu:.3f} ms CPU/send "
                          f"{rate:6.0f}/s load {load:.2f}", flush=True)  # fmt: skip
        finally:
            sandbox.terminate()
            sandbox.wait(10)
    print("\n| variant | CPU per send, median (min-max) | sends/s | load (min-max) |")
    print("|---|---|---|---|")
    for variant in VARIANTS:
        cpus = [r["cpu_ms"] for r in results[variant]]
        rates = [r["per_s"] for r in results[variant]]
        loads = [r["load"] for r in results[variant]]
        print(f"| {NAMES[variant]} | {statistics.median(cpus):.2f} ms "
              f"({min(cpus):.2f}-{max(cpus):.2f}) | {statistics.median(rates):.0f} | "
              f"{min(loads):.1f}-{max(loads):.1f} |")  # fmt: skip


def _run(variant: str, base: str, sends: int) -> dict[str, float]:
    """One run of `variant` in a fresh process: only its own threads are counted."""
    out = subprocess.run(
        [sys.executable, "-m", "bench.provider_clients", "--child", variant, base,
         str(sends)],
        check=False, capture_output=True, text=True,
    )  # fmt: skip
    if out.returncode != 0:
        raise RuntimeError(f"{variant} failed:\n{out.stderr[-3000:]}")
    row: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return row


def _commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True, check=False)  # fmt: skip
    return out.stdout.strip() or "?"


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(child(sys.argv[2], sys.argv[3], int(sys.argv[4]))))
    else:
        args = [int(a) for a in sys.argv[1:3]]
        main(*(args + [5, 2000][len(args) :]))
