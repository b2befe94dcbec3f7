"""The enrollment tail at one open-loop rate, the API run from several work trees
in turn: `python -m bench.tail_ab RATE ROUNDS TREE [TREE ...]`.

Each tree is a checkout (`git worktree add /tmp/a COMMIT`, then edit what the A/B
is about); its API is started with the tree as the working directory, so that
`python -m entrypoints.cli api` imports the tree's code. The rounds interleave the
trees, so that load from elsewhere falls on all alike. A round: 3 s of warm-up,
then 10 s at RATE, one lesson, each student with its own token. Prints each
round's p50, p99, max, how many requests took over 10 ms, the machine's busy and
stolen share (bench/machine_sampler.py) and the CPU of the machine's other
processes; then when each request slower than 25 ms was sent, with the steal of
the 0.2 s around it, beside PostgreSQL's checkpoints; then the medians.
"""

from __future__ import annotations

import statistics
import sys
from contextlib import ExitStack, chdir
from datetime import UTC, datetime
from pathlib import Path

import psycopg

from adapters.embedded.process import free_port
from adapters.embedded.readiness import wait_ready
from adapters.embedded.scratch import fresh_database
from bench.callers import students_authorizations
from bench.common import (
    embedded_servers,
    new_lesson,
    percentiles,
    role,
    students,
)
from bench.http import latencies_and_window, steady_posts
from bench.machine_sampler import MachineSampler, outside_cpu, outside_used
from bench.run import club

WARM_UP_S = 3
MEASURED_S = 10
SLOW_S = 0.010
STALL_S = 0.025  # a request this slow is listed with when it was sent
# The server's log lines a stall is listed beside.
DATABASE_WORK = ("checkpoint", "automatic vacuum", "automatic analyze")


def one_round(
    container,
    url: str,
    nats_url: str,
    tree: str,
    rate: float,
    *,
    machine: MachineSampler,
) -> dict:
    port = free_port()
    api = f"http://127.0.0.1:{port}"
    with ExitStack() as running:
        with chdir(tree):  # the role's process imports the tree's code
            running.enter_context(role(url, nats_url, "api", CLUB_HTTP_PORT=str(port)))
        wait_ready(api)
        for seconds in (WARM_UP_S, MEASURED_S):  # the last round is the measure
            count = int(rate * seconds)
            lesson = new_lesson(container.app, count)
            who = students(container, count)
            others = outside_cpu()
            posted = steady_posts(api, lesson, who, rate, students_authorizations(who))
    latencies, loop = latencies_and_window(posted)
    begun, ended = loop["window_began"], loop["window_ended"]
    window = machine.share(begun, ended)
    return percentiles(latencies) | {  # as `make bench` reads them
        "max_ms": max(latencies) * 1000,
        "slow": sum(1 for x in latencies if x > SLOW_S),
        "requests": len(latencies),
        "busy": window.busy,
        "steal": window.steal,
        "flush_p99": machine.flush_p99(begun, ended),
        "flush_max": window.slowest_flush,
        "outside": outside_used(others, outside_cpu()),
        "stalled_at": [
            (b, machine.share(b - 0.1, b + 0.1)) for b, e in posted if e - b > STALL_S
        ],
    }


def main(rate: float, rounds: int, trees: list[str]) -> None:
    runs: dict[str, list[dict]] = {tree: [] for tree in trees}
    with (
        embedded_servers("club-bench-tail-") as (pg, pg_url, nats_url),
        MachineSampler(pg.root).running() as machine,
    ):
        with psycopg.connect(pg_url, autocommit=True) as conn:  # every pass, to list
            conn.execute("ALTER SYSTEM SET log_autovacuum_min_duration = 0")
            conn.execute("SELECT pg_reload_conf()")
        with fresh_database(pg_url) as url, club(url, nats_url) as container:
            for _ in range(rounds):
                for tree in trees:
                    run = one_round(
                        container, url, nats_url, tree, rate, machine=machine
                    )
                    runs[tree].append(run)
                    print(_line(tree, run), flush=True)
    _stalls_beside_checkpoints(runs, pg.log)
    for tree, rows in runs.items():
        p99 = statistics.median(r["p99_ms"] for r in rows)
        slow = statistics.median(r["slow"] for r in rows)
        print(f"{tree}: median p99 {p99:.1f} ms, median over 10 ms {slow:g}")


def _line(tree: str, run: dict) -> str:
    others = ", ".join(f"{n} {s:.2f}" for n, s in list(run["outside"].items())[:3])
    return (
        f"{tree}: p50 {run['p50_ms']:.1f} ms, p99 {run['p99_ms']:.1f} ms, "
        f"max {run['max_ms']:.1f} ms, over 10 ms {run['slow']}/{run['requests']}; "
        f"machine busy {run['busy']:.0%}, stolen {run['steal']:.1%}; "
        f"probe flush p99 {run['flush_p99'] * 1000:.1f} ms, "
        f"max {run['flush_max'] * 1000:.1f} ms; "
        f"other processes' CPU s: {others or 'none'}"
    )


def _stalls_beside_checkpoints(runs: dict[str, list[dict]], log: Path) -> None:
    """When each stalled request was sent, and PostgreSQL's checkpoints (logged by
    default since 15) and autovacuum's passes (logged here): a stall inside one
    is the database's work, not Club's code."""
    for tree, rows in runs.items():
        for run in rows:
            for sent, near in run["stalled_at"]:
                when = datetime.fromtimestamp(sent, UTC).strftime("%H:%M:%S.%f")[:-3]
                print(
                    f"stall: {tree} request sent {when} UTC; within 0.1 s: stolen "
                    f"{near.steal:.0%}, slowest probe flush "
                    f"{near.slowest_flush * 1000:.1f} ms"
                )
    for line in log.read_text(errors="replace").splitlines():
        if any(what in line for what in DATABASE_WORK):
            print(f"postgres: {line}")


if __name__ == "__main__":
    if len(sys.argv) < 4:
        print(__doc__.splitlines()[1], file=sys.stderr)
        sys.exit(2)
    main(
        float(sys.argv[1]),
        int(sys.argv[2]),
        [str(Path(t).resolve()) for t in sys.argv[3:]],
    )
