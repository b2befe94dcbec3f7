"""One enrollment, step by step (issue #14): what `club api` does for one POST.

    python -m bench.profile_enroll count [--variant V]
        round trips (client turns on the wire, through a counting proxy), statements
        and transactions (PostgreSQL's log_statement=all, %v) per enrollment
    python -m bench.profile_enroll profile [--variant V] [--seconds 90] [--clients 4]
        py-spy --gil on the API under a closed-loop load; each step's share
    python -m bench.profile_enroll ab [--variants pre-ping,shipped] [--rounds 5]
        API CPU per enrollment and the rate, variants interleaved, several rounds
        (`--variants shipped,trusted-caller`: what verifying the token costs)
    python -m bench.profile_enroll verify [--calls 5000] [--rounds 5]
        µs per TokenVerifier.caller (HS256), in this process

Every run starts its own servers (an embedded PostgreSQL, durable as shipped, and
NATS); the API is `club api` in a process of its own, started through `serve` below
so that a variant can change one thing in it. CPU per enrollment is the API
process's own (psutil), so another engineer's load on the cores inflates it less
than it does the rate. Every student enrolls itself with its own bearer token,
signed before the clock starts (bench/callers.py).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import itertools
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any
from uuid import uuid4

import attrs
import httpx
import psutil
import psycopg
from fastapi import Request  # resolved by name in a dependency's annotation

from adapters.embedded.nats import EmbeddedNats
from adapters.embedded.postgres import EmbeddedPostgres
from adapters.embedded.process import free_port
from adapters.embedded.readiness import wait_ready
from adapters.embedded.scratch import fresh_database, scratch_dir
from application.identity import Caller, Role
from bench import peer_outbox, peer_plain
from bench.callers import AUTH_ENV, students_authorizations, verification_us
from bench.common import new_lesson, students
from bench.http import closed_loop
from bench.http_stack import OUTBOX_PEER, PEER
from entrypoints.config.role_env import role_env
from entrypoints.runtime import bootstrap

# --- variants: one change inside the API process ------------------------------------


def _pre_ping() -> None:
    """The connections before the no-pre-ping decision: a round trip before every
    checkout, both pools (docs/decisions/2026-11-30-no-pre-ping.md)."""
    from adapters.postgres import database  # noqa: PLC0415 - patched before use

    shipped_engine, shipped_env = database.create_engine, database.eventsourcing_env

    def create_engine(url: str, **kwargs: Any) -> Any:
        engine = shipped_engine(url, **kwargs)
        engine.pool._pre_ping = True
        return engine

    def eventsourcing_env(url: str, **kwargs: Any) -> dict[str, str]:
        return shipped_env(url, **kwargs) | {"POSTGRES_PRE_PING": "y"}

    database.create_engine = create_engine  # type: ignore[assignment]
    database.eventsourcing_env = eventsourcing_env


def _async_container_dependency() -> None:
    """The routes' container dependency as `async def`: FastAPI runs a plain `def`
    dependency in the thread pool, a second hand-off per request besides the
    endpoint's (entrypoints/http/deps.py unchanged)."""
    from typing import Annotated  # noqa: PLC0415

    from fastapi import Depends  # noqa: PLC0415

    from entrypoints.http import deps  # noqa: PLC0415 - before the routes import it

    async def container(request: Request) -> bootstrap.Container:
        found: bootstrap.Container = request.app.state.container
        return found

    deps.ContainerDep = Annotated[bootstrap.Container, Depends(container)]  # type: ignore[misc]


ADMIN = frozenset({Role.ADMIN})


@attrs.frozen
class TrustedCaller:
    """A bench-only stand-in for TokenVerifier: `caller(token)` trusts the token
    without reading it and answers a fixed caller: an admin (who may enroll anyone),
    with an id of its own per request, as the shipped run's callers are each a
    student of its own: the per-caller rate limit keeps one count per caller, and
    its cost grows with how many it keeps, so one id for all would be cheaper by
    more than the verification (bench.profile_enroll ab, no-rate-limit)."""

    keys: None = None  # not IssuerKeys: called in the loop, as a secret's verifier
    ids: Iterator[int] = attrs.Factory(itertools.count)

    def caller(self, token: str) -> Caller:
        return Caller(sub=f"trusted-{next(self.ids)}", roles=ADMIN)


def _trusted_caller() -> None:
    """The API's verifier is TrustedCaller: the request carries the same bearer
    token, read by the same dependency, but never verified."""
    bootstrap.token_verifier = lambda _: TrustedCaller()  # type: ignore[assignment,return-value]


def _no_rate_limit() -> None:
    """The per-caller rate limit counts nothing (CallerLimit.spend does nothing)."""
    from entrypoints.http.rate_limit import CallerLimit  # noqa: PLC0415

    CallerLimit.spend = lambda _self, _who: None  # type: ignore[method-assign]


VARIANTS: dict[str, Callable[[], None]] = {
    "shipped": lambda: None,
    "pre-ping": _pre_ping,
    "async-container-dependency": _async_container_dependency,
    "trusted-caller": _trusted_caller,
    "no-rate-limit": _no_rate_limit,
}


# Not Club: bench/peer_plain.py and bench/peer_outbox.py, on a database of their own.
PEER_APPS = {"peer": PEER, "outbox-peer": OUTBOX_PEER}


def serve(variant: str) -> None:
    VARIANTS[variant]()
    from entrypoints.cli.main import main  # noqa: PLC0415 - after the variant's change

    sys.exit(main(["api"]))


# --- servers and the API ------------------------------------------------------------


@contextmanager
def servers() -> Iterator[tuple[EmbeddedPostgres, str, str]]:
    root = scratch_dir("club-profile-enroll-")
    pg, nats = EmbeddedPostgres(root / "pg"), EmbeddedNats(root / "nats")
    pg.start()
    nats.start()
    try:
        with fresh_database(pg.url) as url:
            bootstrap.migrate(url, nats.url)
            yield pg, url, nats.url
    finally:
        pg.stop()
        nats.stop()


@contextmanager
def api(database_url: str, nats_url: str, variant: str) -> Iterator[tuple[str, int]]:
    """`club api` (one process) with `variant`; yields its base URL and pid.
    `tree=PATH`: the code of another work tree (`git worktree add PATH COMMIT`)."""
    port = free_port()
    env = role_env(database_url, nats_url, CLUB_HTTP_PORT=str(port), **AUTH_ENV)
    argv = [sys.executable, "-m", "bench.profile_enroll", "serve", variant]
    cwd = None
    if variant in PEER_APPS:  # a peer of bench/, under the server club api runs
        app = PEER_APPS[variant]
        argv = [sys.executable, "-m", "uvicorn", "--factory", "--no-access-log",
                "--host", "127.0.0.1", "--port", str(port), app]  # fmt: skip
        env["PEER_DATABASE_URL"] = database_url
    elif variant.startswith("tree="):
        cwd = variant.removeprefix("tree=")
        argv = [sys.executable, "-m", "entrypoints.cli", "api"]
        env["PYTHONPATH"] = cwd
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_ready(base, READY_WITHIN_S, process=proc)
        yield base, proc.pid
    finally:
        proc.terminate()
        proc.wait(15)


# Longer than a start needs on a quiet machine: other test runs on two cores have
# held an API's start past a minute.
READY_WITHIN_S = 180


# A lesson per client, the students to enroll, each one's Authorization (the peer:
# None, it checks no token).
Work = tuple[list[Any], list[str], list[str] | None]


def prepare(container: bootstrap.Container, clients: int, count: int) -> Work:
    """A lesson per client, `count` students and their tokens, before the clock."""
    per_client = count // clients
    lessons = [new_lesson(container.app, per_client) for _ in range(clients)]
    who = students(container, per_client * clients)
    return lessons, who, students_authorizations(who)


def prepare_peer(variant: str, peer_url: str, clients: int, count: int) -> Work:
    per_client = count // clients
    if variant == "outbox-peer":  # every student with its token, as for Club
        lessons = peer_outbox.new_lessons(peer_url, per_client, clients)
        who = [f"o-{uuid4().hex[:12]}" for _ in range(per_client * clients)]
        return lessons, who, students_authorizations(who)
    lessons = peer_plain.new_lessons(peer_url, per_client, clients)
    return lessons, [f"p-{uuid4().hex[:12]}" for _ in range(per_client * clients)], None


def enroll(base: str, work: Work) -> int:
    lessons, who, authorizations = work
    return closed_loop(base, lessons, who, authorizations=authorizations)


def load(container: bootstrap.Container, base: str, clients: int, count: int) -> int:
    """`count` enrollments by `clients` closed-loop clients, each into its lesson."""
    return enroll(base, prepare(container, clients, count))


def cpu_seconds(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


# --- count: round trips, statements, transactions ---------------------------------

DELAY_S = 0.02


class CountingProxy:
    """TCP between the API and PostgreSQL; a turn is a client write after the
    server spoke (or the first): a round trip, however many messages it carries."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = free_port()
        self.turns = 0
        self.connections = 0
        self.delay = 0.0  # seconds added to each client -> server chunk, not serially
        self._loop = asyncio.new_event_loop()
        threading.Thread(target=self._loop.run_forever, daemon=True).start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(5)

    async def _start(self) -> None:
        await asyncio.start_server(self._pair, "127.0.0.1", self.port)

    async def _pair(self, c_read: Any, c_write: Any) -> None:
        s_read, s_write = await asyncio.open_connection("127.0.0.1", self.target_port)
        self.connections += 1
        last = ["down"]

        async def pump(read: Any, write: Any, direction: str) -> None:
            while data := await read.read(65536):
                if direction == "up" and last[0] != "up":
                    self.turns += 1
                last[0] = direction
                if direction == "up" and self.delay:
                    # Forwarded `delay` after it came: pipelined chunks overlap, so
                    # only a wait for the reply adds `delay` to the request.
                    self._loop.call_later(self.delay, write.write, data)
                else:
                    write.write(data)
                    await write.drain()
            self._loop.call_later(self.delay, write.close)

        await asyncio.gather(
            pump(c_read, s_write, "up"),
            pump(s_read, c_write, "down"),
            return_exceptions=True,
        )


_LINE = re.compile(r"^\S+ \S+ \S+\|(?P<pid>\d+)\|(?P<vxid>[^|]*)\|(?P<db>[^|]*)\|")
_STATEMENT = re.compile(r"LOG:  (?:statement|execute [^:]*): (?P<sql>.*)$")


def statements_between(log: Path, database: str, begin: str, end: str) -> list[tuple]:
    """(pid, vxid, sql) of every statement logged for `database` between the lines
    that carry the markers `begin` and `end`, markers excluded."""
    rows: list[tuple[str, str, str]] = []
    inside = continues = False
    for line in log.read_text(errors="replace").splitlines():
        head, statement = _LINE.match(line), _STATEMENT.search(line)
        if head is None and continues:  # a statement's next line, as written
            pid, vxid, sql = rows[-1]
            rows[-1] = (pid, vxid, f"{sql} {line.strip()}".strip())
            continue
        continues = False
        if head is None or statement is None or head["db"] != database:
            continue
        if begin in line or end in line:
            inside = begin in line
            continue
        if inside:
            rows.append((head["pid"], head["vxid"], statement["sql"].strip()))
            continues = True
    return rows


def count(variant: str, enrollments: int) -> dict[str, Any]:
    with servers() as (pg, url, nats_url):
        with psycopg.connect(pg.url, autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET log_statement = 'all'")
            conn.execute("ALTER SYSTEM SET log_line_prefix = '%m|%p|%v|%d|'")
            conn.execute("SELECT pg_reload_conf()")
        time.sleep(0.5)
        proxy = CountingProxy(pg.port)
        proxied = url.replace(f":{pg.port}/", f":{proxy.port}/")
        container = bootstrap.build(url, pool_size=2)
        database = url.rsplit("/", 1)[1]
        with api(proxied, nats_url, variant) as (base, _):
            load(container, base, 1, 20)  # warm: pools full, lesson cached
            lesson = new_lesson(container.app, enrollments)
            who = students(container, enrollments)
            with psycopg.connect(url, autocommit=True) as marker:
                marker.execute("SELECT 'club-count-begin'")
                turns, opened = proxy.turns, proxy.connections
                plain = timed_posts(base, lesson, who)
                turns, opened = proxy.turns - turns, proxy.connections - opened
                marker.execute("SELECT 'club-count-end'")
            lesson = new_lesson(container.app, enrollments)
            proxy.delay = DELAY_S
            delayed = timed_posts(base, lesson, students(container, enrollments))
        container.close()
        time.sleep(0.5)
        rows = statements_between(
            pg.log, database, "club-count-begin", "club-count-end"
        )
    kinds = collections.Counter(_kind(sql) for _, _, sql in rows)
    vxids = {(pid, vxid) for pid, vxid, _ in rows}
    return {
        "variant": variant,
        "enrollments": enrollments,
        "client turns on the wire per enrollment": turns / enrollments,
        f"waits for a reply per enrollment (latency added by {DELAY_S * 1000:g} ms"
        " per client write, medians)": (
            statistics.median(delayed) - statistics.median(plain)
        )
        / DELAY_S,
        "latency without the delay, median ms": 1000 * statistics.median(plain),
        "new connections": opened,
        "statements per enrollment": len(rows) / enrollments,
        "transactions per enrollment (distinct %v)": len(vxids) / enrollments,
        "statements by kind, per enrollment": {
            k: v / enrollments for k, v in kinds.most_common()
        },
        "one enrollment": _one_enrollment(rows, enrollments),
    }


def timed_posts(base: str, lesson: Any, who: list[str]) -> list[float]:
    """One client, one enrollment after another: each one's seconds."""
    seconds = []
    authorizations = students_authorizations(who)
    with httpx.Client(base_url=base, timeout=30) as http:
        for student_id, authorization in zip(who, authorizations, strict=True):
            began = time.perf_counter()
            response = http.post(
                f"/lessons/{lesson}/enrollments",
                json={"student_id": student_id},
                headers={
                    "Idempotency-Key": str(uuid4()),
                    "Authorization": authorization,
                },
            )
            seconds.append(time.perf_counter() - began)
            assert response.status_code == 201, response.text
    return seconds


def _kind(sql: str) -> str:
    sql = re.sub(r"\s+", " ", sql)
    if not sql:
        return "(empty query: psycopg_pool's check)"
    return sql[:90]


def _one_enrollment(rows: list[tuple], enrollments: int) -> list[str]:
    """The statements of the middle enrollment, in order, with their transaction."""
    per = len(rows) // enrollments
    middle = rows[per * (enrollments // 2) : per * (enrollments // 2 + 1)]
    return [f"{pid} {vxid:>10}  {_kind(sql)}" for pid, vxid, sql in middle]


# --- profile: each step's share -----------------------------------------------------

# Innermost match wins: the first of these found walking a stack from its leaf.
# A frame reads "Class.function (path/file.py:line)"; patterns see "function file.py".
STEPS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern))
    for name, pattern in (
        ("pre-ping", r"^(do_ping|_do_ping_w_event|check_connection) "),
        ("idempotency: find the key's answer", r"^find answers\.py"),
        ("idempotency: record an answer alone", r"^record answers\.py"),
        ("student lookup", r"^(get students\.py|_check_student )"),
        ("key and student, one statement", r"^key_and_student "),
        ("save (events + answers, one transaction)", r"^save application\.py"),
        ("lesson read (cache fast-forward)", r"^(get_lesson|_find_enrollment) "),
        ("decide (domain)", r"^_decide_group "),
        ("group commit", r"^(submit|_lead_pending|_lead) group_commit\.py"),
        ("answer: response + stored form", r"^(created|answer_for|_answer) "),
        ("request key and reply", r"^run_once "),
        ("route: parse the command", r"^post_enrollment "),
        ("logging", r"^\S+ (structlog|logging)/"),
        ("HTTP stack (uvicorn, Starlette, FastAPI, middleware)", r"."),
    )
)
_FRAME = re.compile(r"^(?:[\w<>]+\.)*(?P<function>[\w<>]+) \((?P<path>[^:]*)")


def shares(folded: Path) -> dict[str, float]:
    """py-spy's raw output (`frame;frame;... count`, root first) -> % per step."""
    counts: collections.Counter[str] = collections.Counter()
    for line in folded.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        counts[_step(stack.split(";")[::-1])] += int(n)
    total = sum(counts.values()) or 1
    return {step: round(100 * n / total, 1) for step, n in counts.most_common()} | {
        "samples": total
    }


def _step(frames: list[str]) -> str:
    for frame in frames:
        match = _FRAME.match(frame)
        if match is None:
            continue
        path = match["path"]
        short = f"{match['function']} {path.rsplit('/', 1)[-1]}"
        long = f"{match['function']} {path}"
        for name, pattern in STEPS[:-1]:
            if pattern.search(short) or pattern.search(long):
                return name
    return STEPS[-1][0]


def profile(variant: str, seconds: float, clients: int, out: Path) -> dict[str, Any]:
    spy = Path(sys.executable).parent / "py-spy"
    with servers() as (pg, url, nats_url), fresh_database(pg.url) as peer_url:
        peer_plain.migrate(peer_url)
        peer_outbox.migrate(peer_url)
        container = bootstrap.build(url, pool_size=2)
        where = peer_url if variant in PEER_APPS else url

        def work(count: int) -> Work:
            if variant in PEER_APPS:
                return prepare_peer(variant, peer_url, clients, count)
            return prepare(container, clients, count)

        with api(where, nats_url, variant) as (base, pid):
            enroll(base, work(200))  # warm
            done, stop = [0], threading.Event()

            def drive() -> None:
                while not stop.is_set():
                    done[0] += enroll(base, work(100 * clients))

            cpu = cpu_seconds(pid)
            driver = threading.Thread(target=drive)
            driver.start()
            subprocess.run(
                [str(spy), "record", "--gil", "-r", "200", "-d", str(int(seconds)),
                 "-f", "raw", "-o", str(out), "-p", str(pid)],
                check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            stop.set()
            driver.join()
            cpu = cpu_seconds(pid) - cpu
        container.close()
    return {
        "variant": variant,
        "enrollments": done[0],
        "API CPU per enrollment, ms (under py-spy)": 1000 * cpu / done[0],
        "shares %": shares(out),
        "folded stacks": str(out),
    }


# --- ab: API CPU per enrollment, interleaved ----------------------------------------


def ab(variants: list[str], rounds: int, clients: int, count_: int) -> dict[str, Any]:
    """`peer`, `outbox-peer` among the variants: bench/peer_plain.py,
    bench/peer_outbox.py, on a database of their own."""
    cpu: dict[str, list[float]] = {v: [] for v in variants}
    server_cpu: dict[str, list[float]] = {v: [] for v in variants}
    rate: dict[str, list[float]] = {v: [] for v in variants}
    loads: list[float] = []
    with servers() as (pg, url, nats_url), fresh_database(pg.url) as peer_url:
        peer_plain.migrate(peer_url)
        peer_outbox.migrate(peer_url)
        container = bootstrap.build(url, pool_size=2)
        for _ in range(rounds):
            for variant in variants:
                where = peer_url if variant in PEER_APPS else url
                with api(where, nats_url, variant) as (base, pid):

                    def work(count: int, variant: str = variant) -> Work:
                        if variant in PEER_APPS:
                            return prepare_peer(variant, peer_url, clients, count)
                        return prepare(container, clients, count)

                    enroll(base, work(200))  # warm
                    prepared = work(count_)
                    backends = _Backends(pg.url, where.rsplit("/", 1)[1])
                    served = backends.cpu()
                    before, start = cpu_seconds(pid), time.perf_counter()
                    n = enroll(base, prepared)
                    elapsed = time.perf_counter() - start
                    cpu[variant].append(1000 * (cpu_seconds(pid) - before) / n)
                    server_cpu[variant].append(1000 * (backends.cpu() - served) / n)
                    rate[variant].append(n / elapsed)
                    loads.append(os.getloadavg()[0])
        container.close()
    return {
        "clients": clients,
        "enrollments per round": count_,
        "load average (1 min) during the rounds": [round(x, 1) for x in loads],
        **{
            variant: {
                "API CPU per enrollment, ms": _spread(cpu[variant]),
                "PostgreSQL backends' CPU per enrollment, ms": _spread(
                    server_cpu[variant]
                ),
                "enrollments/s": _spread(rate[variant]),
            }
            for variant in variants
        },
        **_verification_share(cpu),
    }


def _verification_share(cpu: dict[str, list[float]]) -> dict[str, str]:
    """shipped against trusted-caller, round by round (each pair ran back to
    back): the API CPU that verifying the token takes, µs and share."""
    if not {"shipped", "trusted-caller"} <= cpu.keys():
        return {}
    shipped, trusted = cpu["shipped"], cpu["trusted-caller"]
    diffs = [1000 * (a - b) for a, b in zip(shipped, trusted, strict=True)]
    shares = [100 * d / (1000 * a) for d, a in zip(diffs, shipped, strict=True)]
    return {
        "verification, µs API CPU per enrollment (shipped - trusted-caller)": (
            _spread(diffs)
        ),
        "verification, % of the shipped API CPU per enrollment": _spread(shares),
    }


# --- verify: TokenVerifier.caller alone ---------------------------------------------


def verify(rounds: int, calls: int) -> dict[str, Any]:
    each = [verification_us(calls) for _ in range(rounds)]
    return {
        "calls per round": calls,
        "TokenVerifier.caller (HS256), µs per call, median per round": _spread(each),
    }


# --- checkout: one read's cost with and without the pre-ping, in one process ------


def checkout(rounds: int, calls: int) -> dict[str, Any]:
    """The two reads of the hot path that take a pooled connection each — the
    key's answer (SQLAlchemy) and the lesson's new events (the event store's pool)
    — `calls` times, pre-ping on and off, interleaved; CPU of this process and of
    the database's backends, wall time, per call (µs)."""
    from adapters.postgres import database  # noqa: PLC0415
    from adapters.postgres.answers import SqlAnswerStore  # noqa: PLC0415
    from application.club import ClubApplication  # noqa: PLC0415
    from application.idempotency import Request  # noqa: PLC0415

    figures: dict[str, list[tuple[float, float, float]]] = collections.defaultdict(list)
    with servers() as (pg, url, _):
        backends = _Backends(pg.url, url.rsplit("/", 1)[1])
        for _ in range(rounds):
            for ping in (True, False):
                engine = database.create_engine(url, pool_size=2)
                engine.pool._pre_ping = ping  # what pool_pre_ping=True sets
                env = database.eventsourcing_env(url)
                app = ClubApplication(env=env | {"POSTGRES_PRE_PING": "ny"[ping]})
                answers = SqlAnswerStore(engine)
                lesson = new_lesson(app, 10)
                version = app.get_lesson(lesson).version
                request = Request(scope="POST /x", key=str(uuid4()), fingerprint="f")
                reads: dict[str, Callable[[], object]] = {
                    "the key's answer (SQLAlchemy)": partial(answers.find, [request]),
                    "the lesson's new events (event store)": partial(
                        app.recorder.select_events, lesson, gt=version
                    ),
                }
                for name, read in reads.items():
                    for _ in range(50):
                        read()  # warm: connections open, statements prepared
                    cpu, server, wall = (
                        time.process_time(), backends.cpu(), time.perf_counter()
                    )  # fmt: skip
                    for _ in range(calls):
                        read()
                    figures[f"{name}, pre-ping {'on' if ping else 'off'}"].append(
                        tuple(  # type: ignore[arg-type]
                            1e6 * d / calls
                            for d in (
                                time.process_time() - cpu,
                                backends.cpu() - server,
                                time.perf_counter() - wall,
                            )
                        )
                    )
                app.close()
                engine.dispose()
    return {
        name: {
            what: _spread([row[i] for row in rows])
            for i, what in enumerate(
                ("µs CPU, this process", "µs CPU, PostgreSQL backends", "µs wall")
            )
        }
        for name, rows in sorted(figures.items())
    }


class _Backends:
    """CPU of every backend connected to one database (the ones a read used)."""

    def __init__(self, server_url: str, database: str) -> None:
        self._server_url, self._database = server_url, database

    def cpu(self) -> float:
        with psycopg.connect(self._server_url, autocommit=True) as conn:
            pids = [
                row[0]
                for row in conn.execute(
                    "SELECT pid FROM pg_stat_activity WHERE datname = %s",
                    (self._database,),
                )
            ]
        total = 0.0
        for pid in pids:
            try:
                total += cpu_seconds(pid)
            except psutil.NoSuchProcess:
                continue
        return total


def _spread(values: list[float]) -> str:
    rounded = ", ".join(f"{v:.2f}" for v in values)
    return f"median {statistics.median(values):.2f} ({rounded})"


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.profile_enroll")
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("serve").add_argument("variant", choices=VARIANTS)
    c = sub.add_parser("count")
    c.add_argument("--variant", default="shipped")
    c.add_argument("--enrollments", type=int, default=50)
    p = sub.add_parser("profile")
    p.add_argument("--variant", default="shipped")
    p.add_argument("--seconds", type=float, default=90)
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--out", type=Path, help="py-spy's stacks (default: a temp file)")
    k = sub.add_parser("checkout")
    k.add_argument("--rounds", type=int, default=5)
    k.add_argument("--calls", type=int, default=2000)
    a = sub.add_parser("ab")
    a.add_argument("--variants", default="pre-ping,shipped")
    a.add_argument("--rounds", type=int, default=5)
    a.add_argument("--clients", type=int, default=4)
    a.add_argument("--enrollments", type=int, default=800)
    v = sub.add_parser("verify")
    v.add_argument("--rounds", type=int, default=5)
    v.add_argument("--calls", type=int, default=5000)
    args = parser.parse_args(argv)
    if args.what == "serve":
        serve(args.variant)
    if args.what == "count":
        result = count(args.variant, args.enrollments)
    elif args.what == "checkout":
        result = checkout(args.rounds, args.calls)
    elif args.what == "verify":
        result = verify(args.rounds, args.calls)
    elif args.what == "profile":
        out = args.out or Path(tempfile.mkdtemp(prefix="club-profile-")) / "stacks.txt"
        result = profile(args.variant, args.seconds, args.clients, out)
    else:
        variants = args.variants.split(",")
        result = ab(variants, args.rounds, args.clients, args.enrollments)
    _print(result)


def _print(value: object, indent: str = "") -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, dict | list):
                print(f"{indent}{key}:")
                _print(item, indent + "  ")
            else:
                print(f"{indent}{key}: {item:.2f}" if isinstance(item, float)
                      else f"{indent}{key}: {item}")  # fmt: skip
    elif isinstance(value, list):
        for item in value:
            print(f"{indent}{item}")


if __name__ == "__main__":
    main(sys.argv[1:])
