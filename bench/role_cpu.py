"""The CPU each role spends per enrollment at a steady open-loop rate, and the
commit -> projection latency it gives, with the roles started from several work
trees in turn: `python -m bench.role_cpu RATE ROUNDS TREE [TREE ...]`.

At a trickle a role's cost is its per-batch work (a read, a transaction, a wake-up
per event), which the backlog benchmarks never see. Each tree is a checkout
(`git worktree add /tmp/a COMMIT`); its API, `club relay` and `club projector
statistics` run with the tree as the working directory, so they import its code.
Rounds interleave the trees, so load from elsewhere falls on all alike. A round:
3 s of warm-up, then 10 s at RATE into one lesson; each role's CPU (user + system,
from the kernel) over the measured window divided by its enrollments, the whole
machine's busy share and the share the host stole, and occurred -> applied
percentiles (as bench.chain), split where JetStream stored the event (bench.chain.hops).
CLUB_PROFILE_ROLE=relay (or api, projector) also samples that role with py-spy;
CLUB_PRELOAD=N first saves N enrollments in-process (a database that has history).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from contextlib import ExitStack, chdir, contextmanager
from pathlib import Path

import psutil

from adapters.embedded.process import free_port
from adapters.embedded.readiness import wait_ready
from adapters.embedded.scratch import fresh_database
from bench.callers import students_authorizations
from bench.chain import enrollments_applied, hops, occurred_to_applied
from bench.common import (
    embedded_servers,
    new_lesson,
    percentiles,
    role,
    students,
    wait_until_projected,
)
from bench.http import raw_saves, steady_posts
from bench.machine_sampler import cpu_between
from bench.run import club
from projections import statistics as statistics_projection

WARM_UP_S = 3
MEASURED_S = 10
ROLES = {
    "api": ("api",),
    "relay": ("relay",),
    "projector": ("projector", statistics_projection.NAME),
}


def cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def one_round(container, url: str, nats_url: str, tree: str, rate: float) -> dict:
    port = free_port()
    api = f"http://127.0.0.1:{port}"
    with ExitStack() as running:
        with chdir(tree):  # each role's process imports the tree's code
            procs = {
                name: psutil.Process(
                    running.enter_context(
                        role(url, nats_url, *args, CLUB_HTTP_PORT=str(port))
                    ).pid
                )
                for name, args in ROLES.items()
            }
        wait_ready(api)
        for seconds in (WARM_UP_S, MEASURED_S):  # the last round is the measure
            wait_until_projected(container)
            count = int(rate * seconds)
            lesson = new_lesson(container.app, count)
            who = students(container, count)
            after = container.app.recorder.max_notification_id() or 0
            authorizations = students_authorizations(who)
            before = {name: cpu_seconds(p) for name, p in procs.items()}
            busy_before = psutil.cpu_times()
            with _profiled(procs, seconds, tree):
                steady_posts(api, lesson, who, rate, authorizations)
            wait_until_projected(container)
            spent = {name: cpu_seconds(p) - before[name] for name, p in procs.items()}
            total, busy, stolen = cpu_between(busy_before, psutil.cpu_times())
    applied = enrollments_applied(container, after, lesson)
    return {
        "cpu_ms": {name: 1000 * s / count for name, s in spent.items()},
        "busy": busy / total,
        "stolen": stolen / total,
        "chain": percentiles(occurred_to_applied(applied)),
        "hops": hops(applied, nats_url),
    }


@contextmanager
def _profiled(procs: dict[str, psutil.Process], seconds: int, tree: str):
    """With CLUB_PROFILE_ROLE=NAME, py-spy samples that role (raw stacks, CPU
    only) into `<tree>/<role>.<pid>.spy` while the load runs."""
    name = os.environ.get("CLUB_PROFILE_ROLE")
    if name is None:
        yield
        return
    pid = procs[name].pid
    out = Path(tree) / f"{name}.{pid}.{seconds}s.spy"
    spy = subprocess.Popen(
        [str(Path(sys.executable).parent / "py-spy"), "record", "-p", str(pid),
         "-d", str(seconds), "-f", "raw", "-o", str(out), "-r", "200"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        yield
    finally:
        spy.wait(seconds + 30)


def main(rate: float, rounds: int, trees: list[str]) -> None:
    runs: dict[str, list[dict]] = {tree: [] for tree in trees}
    with (
        embedded_servers("club-bench-role-cpu-") as (_, pg_url, nats_url),
        fresh_database(pg_url) as url,
        club(url, nats_url) as container,
    ):
        if preload := int(os.environ.get("CLUB_PRELOAD", "0")):
            raw_saves(container.app, 8, total=preload)()  # drained by round 1
        for _ in range(rounds):
            for tree in trees:
                run = one_round(container, url, nats_url, tree, rate)
                runs[tree].append(run)
                print(f"{tree}: {_line(run)}", flush=True)
                time.sleep(1)
    for tree, rows in runs.items():
        median = {
            "cpu_ms": {
                name: statistics.median(r["cpu_ms"][name] for r in rows)
                for name in ROLES
            },
            "busy": statistics.median(r["busy"] for r in rows),
            "stolen": statistics.median(r["stolen"] for r in rows),
            "chain": {
                k: statistics.median(r["chain"][k] for r in rows)
                for k in ("p50_ms", "p99_ms")
            },
            "hops": {
                hop: {
                    k: statistics.median(r["hops"][hop][k] for r in rows)
                    for k in ("p50_ms", "p99_ms")
                }
                for hop in rows[0]["hops"]
            },
        }
        print(f"{tree}: median {_line(median)}")


def _line(run: dict) -> str:
    cpu = ", ".join(f"{name} {ms:.2f}" for name, ms in run["cpu_ms"].items())
    chain = run["chain"]
    split = "; ".join(
        f"{hop} p50 {p['p50_ms']:.1f}, p99 {p['p99_ms']:.1f} ms"
        for hop, p in run["hops"].items()
    )
    return (
        f"CPU ms/enrollment {cpu}; machine {100 * run['busy']:.0f}% busy, "
        f"{100 * run['stolen']:.1f}% stolen; "
        f"occurred->applied p50 {chain['p50_ms']:.1f} ms, p99 {chain['p99_ms']:.1f} ms"
        f" ({split})"
    )


if __name__ == "__main__":
    if len(sys.argv) < 4:
        print(__doc__.splitlines()[2], file=sys.stderr)
        sys.exit(2)
    main(
        float(sys.argv[1]),
        int(sys.argv[2]),
        [str(Path(t).resolve()) for t in sys.argv[3:]],
    )
