"""CPU time per event of the relay, the projection catch-up and the rebuild, code
before a change against after.

`python -m bench.python_work TREE [TREE ...]` starts one PostgreSQL and one NATS
server (the server's default sync, where the relay's Python work is the whole gap),
fills the event store with a backlog as `make bench` does, then measures the relay
(publish the whole outbox to a fresh stream), the catch-up of `statistics`'s runner
over that stream (a fresh durable) and the rebuild of `statistics` with the
code of each TREE (a checkout or `git archive` of a commit), round-robin, ROUNDS
rounds. Each measurement is its own process (`bench/python_work_child.py`), so the
trees never share imports.

The figure is CPU seconds of that process per event (all its threads), not wall
time: the machine is shared with other test runs, whose bursts swing wall-clock
rates by ±50% but do not count in this process's CPU time. Wall rates are printed
beside, for shape only.

Environment: CLUB_WORK_NOTIFICATIONS (default 40,000: ~20,000 published events),
CLUB_WORK_ROUNDS (default 3), CLUB_WORK_WHAT (default relay,catchup,rebuild; the
catch-up needs the relay before it), CLUB_WORK_PROFILE=1 records each measurement with
py-spy into the scratch directory (its path is printed). `--stages` measures only
the Python steps per published event (map, to_json, decode, meaning digest) on the
in-memory workload of bench/codecs.py, no servers.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from adapters.embedded.nats import EmbeddedNats
from adapters.embedded.postgres import EmbeddedPostgres
from adapters.embedded.scratch import fresh_database, scratch_dir
from bench.rebuild import load_notifications
from entrypoints.runtime import bootstrap

NOTIFICATIONS = int(os.environ.get("CLUB_WORK_NOTIFICATIONS", "40000"))
ROUNDS = int(os.environ.get("CLUB_WORK_ROUNDS", "3"))
PROFILE = os.environ.get("CLUB_WORK_PROFILE") == "1"
# The catch-up reads the stream the relay before it published.
WHAT = os.environ.get("CLUB_WORK_WHAT", "relay,catchup,rebuild").split(",")
CHILD = Path(__file__).with_name("python_work_child.py")
PY_SPY = Path(sys.executable).with_name("py-spy")


def measure(
    tree: Path, what: str, urls: tuple[str, str], *, scratch: Path, tag: str
) -> dict[str, float]:
    database_url, nats_url = urls
    command = [sys.executable, "-P", str(CHILD), what, database_url, nats_url]
    if PROFILE:
        out = scratch / f"{tag}-{what}.txt"
        # --gil: the samples of whichever thread holds the GIL, i.e. Python work.
        command = [str(PY_SPY), "record", "--gil", "-r", "250", "-f", "raw",
                   "-o", str(out), "--", *command]  # fmt: skip
    env = os.environ | {"PYTHONPATH": str(tree)}
    done = subprocess.run(
        command, cwd=tree, env=env, capture_output=True, text=True, check=True
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(done.stdout + done.stderr)
    return json.loads(lines[-1])  # type: ignore[no-any-return]


def stages(trees: list[Path]) -> None:
    """`--stages`: the Python steps alone, no servers, each tree in turn."""
    results: dict[str, dict[str, list[float]]] = {}
    for _ in range(ROUNDS):
        for i, tree in enumerate(trees):
            got = measure(tree, "stages", ("", ""), scratch=Path(), tag="")
            row = results.setdefault(f"{i}:{tree.name}", {})
            for step, per_event in got.items():
                row.setdefault(step, []).append(per_event)
            print(f"{i}:{tree.name}", {k: round(v, 2) for k, v in got.items()})
    print("medians (µs CPU per published event):")
    for key, row in results.items():
        print(f"  {key}:", {k: round(statistics.median(v), 2) for k, v in row.items()})


def main(trees: list[Path]) -> None:
    scratch = scratch_dir("club-python-work-")
    pg = EmbeddedPostgres(scratch / "pg")
    nats = EmbeddedNats(scratch / "nats", sync_always=False)
    server_url, nats_url = pg.start(), nats.start()
    try:
        with fresh_database(server_url) as url:
            bootstrap.migrate(url, nats_url)
            container = bootstrap.build(url, pool_size=5)
            load_notifications(container, NOTIFICATIONS)
            container.close()
            results: dict[str, dict[str, list[float]]] = {}
            for round_ in range(ROUNDS):
                for what in WHAT:
                    for i, tree in enumerate(trees):
                        tag = f"{i}-{tree.name}-r{round_}"
                        got = measure(
                            tree, what, (url, nats_url), scratch=scratch, tag=tag
                        )
                        key = f"{what} {i}:{tree.name}"
                        per_event = 1e6 * got["cpu"] / got["events"]
                        rate = got["events"] / got["wall"]
                        row = results.setdefault(key, {"cpu_us": [], "rate": []})
                        row["cpu_us"].append(per_event)
                        row["rate"].append(rate)
                        print(f"{key}: {per_event:.1f} µs CPU/event, {rate:,.0f}/s "
                              f"({got['events']:.0f} events)", flush=True)  # fmt: skip
            print("medians:")
            for key, row in results.items():
                print(f"  {key}: {statistics.median(row['cpu_us']):.1f} µs CPU/event "
                      f"({min(row['cpu_us']):.1f}-{max(row['cpu_us']):.1f}), "
                      f"{statistics.median(row['rate']):,.0f}/s")  # fmt: skip
            if PROFILE:
                print(f"profiles in {scratch}")
    finally:
        pg.stop()
        nats.stop()


if __name__ == "__main__":
    args = sys.argv[1:]
    chosen = [Path(arg).resolve() for arg in args if arg != "--stages"] or [Path.cwd()]
    (stages if "--stages" in args else main)(chosen)
