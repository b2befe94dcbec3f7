"""`club up` on a machine with no services: embedded servers, every role, Ctrl-C."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import psutil

from adapters.embedded import placement
from adapters.embedded.process import NOBODY, free_port
from tests.api_client import ClubClient
from tests.identity import ADMIN
from tests.servers import scratch_dir
from tests.stack import club_env, eventually, wait_ready


@contextmanager
def club_up(
    data_dir: Path,
    port: int,
    python: str = sys.executable,
    ready_within: float = 60,
    **env: str,
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`env` may name CLUB_DATABASE_URL or CLUB_NATS_URL; unnamed ones are embedded."""
    env = club_env("", "", CLUB_DATA_DIR=str(data_dir), CLUB_HTTP_PORT=str(port)) | env
    for name in ("CLUB_DATABASE_URL", "CLUB_NATS_URL"):
        if not env[name]:
            del env[name]  # nothing runs: embed
    log = (data_dir.parent / "up.log").open("ab")
    proc = subprocess.Popen(
        [python, "-m", "entrypoints.cli", "up"], env=env, stdout=log, stderr=log
    )
    try:
        base = f"http://127.0.0.1:{port}"
        try:
            wait_ready(base, timeout=ready_within, process=proc)
        except (TimeoutError, RuntimeError) as not_ready:
            # What the supervisor and its roles printed is the only account of why.
            tail = up_log(data_dir)[-6000:]
            raise AssertionError(f"{not_ready}; club up printed:\n{tail}") from None
        yield base, proc
    finally:
        if proc.poll() is None:
            proc.kill()


def up_log(data_dir: Path) -> str:
    return (data_dir.parent / "up.log").read_text(errors="replace")


def ctrl_c(proc: subprocess.Popen[bytes]) -> list[psutil.Process]:
    """Interrupt the supervisor as a terminal would; returns what it had started."""
    tree = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(30) == 0
    return tree


def started(proc: subprocess.Popen[bytes], match: Callable[[list[str]], bool]) -> int:
    """The pid of the supervisor's child whose command line matches (waits for it)."""

    def find() -> int | None:
        for child in psutil.Process(proc.pid).children():
            try:
                if match(child.cmdline()):
                    return int(child.pid)
            except psutil.NoSuchProcess:
                continue
        return None

    return int(eventually(find, timeout=30))


def enroll_one(api: str) -> str:
    """A lesson with one student enrolled, asked as a client would (a 503 from a
    server just started is asked again)."""
    with ClubClient(api, timeout=10, patient=True) as club:
        lesson_id = club.lesson(capacity=4)
        assert club.enroll(lesson_id, club.student()).status_code == 201
    return lesson_id


def confirmed(api: str) -> int:
    return int(
        httpx.get(f"{api}/statistics", headers=ADMIN).json()["totals"][
            "enrollments_confirmed"
        ]
    )


def test_club_up_serves_stops_cleanly_and_keeps_its_data() -> None:
    data_dir = scratch_dir("club-up-") / "data"
    port = free_port()
    with club_up(data_dir, port) as (api, proc):
        lesson_id = enroll_one(api)
        eventually(lambda: confirmed(api) == 1)
        started = ctrl_c(proc)
    assert len(started) >= 5  # postgres, nats-server, api, relay, projector
    _, alive = psutil.wait_procs(started, timeout=5)
    assert alive == [], f"left behind: {alive}"

    with club_up(data_dir, port) as (api, proc):
        assert (
            httpx.get(f"{api}/lessons/{lesson_id}", headers=ADMIN).json()["seats_taken"]
            == 1
        )
        stats = httpx.get(f"{api}/statistics", headers=ADMIN).json()
        assert stats["totals"]["enrollments_confirmed"] == 1
        ctrl_c(proc)


def test_a_newcomer_sees_the_confirmation_arrive_and_can_export_the_roster() -> None:
    """Issue #11: `club up` runs the e-mail sandbox and both work classes."""
    data_dir = scratch_dir("club-up-mail-") / "data"
    sandbox = f"http://127.0.0.1:{free_port()}"
    with club_up(data_dir, free_port(), CLUB_EMAIL_PROVIDER_URL=sandbox) as (api, proc):
        with ClubClient(api, timeout=10, patient=True) as club:
            lesson_id = club.lesson(capacity=4)
            student = club.student(email="ann@example.org")
            enrolled = club.enroll(lesson_id, student)
        assert enrolled.status_code == 201, enrolled.text
        enrollment = enrolled.json()
        path = f"{api}/enrollments/{enrollment['enrollment_id']}"

        def notification_state() -> str | None:
            shown = httpx.get(path, timeout=5, headers=ADMIN).json()["notification"]
            return None if shown is None else shown["state"]

        eventually(lambda: notification_state() == "sent", timeout=60)
        inbox = httpx.get(f"{sandbox}/messages", timeout=5).json()["messages"]
        assert [m["to"] for m in inbox] == ["ann@example.org"]
        assert "Yoga" in inbox[0]["subject"]
        assert "ann@example.org" in httpx.get(f"{sandbox}/", timeout=5).text

        asked = httpx.post(
            f"{api}/lessons/{lesson_id}/roster-exports", timeout=10, headers=ADMIN
        )
        assert asked.status_code == 202
        operation = f"{api}{asked.headers['location']}"
        done = eventually(
            lambda: (
                (o := httpx.get(operation, timeout=5, headers=ADMIN).json())["status"]
                == "succeeded"
                and o
            ),
            timeout=60,
        )
        csv = httpx.get(f"{api}{done['result_url']}", timeout=5, headers=ADMIN)
        assert student in csv.text
        ctrl_c(proc)


def test_as_root_the_roles_run_as_nobody_where_nobody_can_run_python() -> None:
    """No role runs as root where `nobody` can run the install: here a venv of the
    system's own interpreter, outside any closed home. The roster export proves
    they still write what they own. (As any other user, roles run as that user.)"""
    scratch = scratch_dir("club-up-nobody-")
    as_root = os.geteuid() == 0
    python = (
        venv_inside(scratch / ".venv", base=reachable_python())
        if as_root
        else sys.executable
    )
    data_dir = scratch / "data"
    with club_up(data_dir, free_port(), python=python) as (api, proc):
        lesson_id = enroll_one(api)
        asked = httpx.post(
            f"{api}/lessons/{lesson_id}/roster-exports", timeout=10, headers=ADMIN
        )
        operation = f"{api}{asked.headers['location']}"
        eventually(
            lambda: (
                httpx.get(operation, timeout=5, headers=ADMIN).json()["status"]
                == "succeeded"
            ),
            timeout=60,
        )
        uids = {uid for _, uid in role_users(proc)}
        ctrl_c(proc)
    assert uids == {NOBODY if as_root else os.geteuid()}
    if as_root:
        assert "roles          run as 'nobody' (you are root)" in up_log(data_dir)


def reachable_python() -> Path:
    """This Python's version, installed where `nobody` may run it (this one may sit
    in a closed home, as pyenv's /root/.pyenv does)."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    for where in ("/usr/bin", "/usr/local/bin"):
        python = Path(where) / f"python{version}"
        if python.exists() and placement.reachable_by_others(python):
            return python
    msg = (
        f"as root this test needs a Python {version} that 'nobody' may run, "
        f"e.g. apt-get install python{version}"
    )
    raise AssertionError(msg)


def role_users(proc: subprocess.Popen[bytes]) -> list[tuple[str, int]]:
    """(command line, real uid) of each role `club up` started."""
    tree = psutil.Process(proc.pid).children(recursive=True)
    return [
        (" ".join(p.cmdline()), p.uids().real)
        for p in tree
        if "entrypoints.cli" in p.cmdline()
    ]


def test_a_killed_embedded_server_is_restarted_under_club_up() -> None:
    """Issue #9, 8b: SIGKILL the embedded PostgreSQL, then NATS; Club serves again."""
    data_dir = scratch_dir("club-up-kill-") / "data"
    with club_up(data_dir, free_port()) as (api, proc):
        enroll_one(api)
        eventually(lambda: confirmed(api) == 1)
        postgres = started(proc, lambda argv: "-D" in argv and "postgres" in argv[0])
        psutil.Process(postgres).kill()
        eventually(lambda: "embedded PostgreSQL exited (-9)" in up_log(data_dir))
        wait_ready(api, timeout=60)
        enroll_one(api)
        eventually(lambda: confirmed(api) == 2, timeout=60)

        nats = started(proc, lambda argv: argv[0].endswith("nats-server"))
        psutil.Process(nats).kill()
        eventually(lambda: "embedded NATS exited (-9)" in up_log(data_dir))
        wait_ready(api, timeout=60)
        enroll_one(api)
        eventually(lambda: confirmed(api) == 3, timeout=60)
        ctrl_c(proc)
    assert "is back" in up_log(data_dir)


def test_ctrl_c_ends_a_restart_pause_at_once() -> None:
    """A role that keeps crashing waits longer each time; a stop does not wait."""
    data_dir = scratch_dir("club-up-pause-") / "data"
    with club_up(data_dir, free_port()) as (_, proc):
        for crash in range(5):  # pauses of 0.5, 1, 2, 4, then 8 s
            relay = started(proc, lambda argv: argv[-1] == "relay")
            psutil.Process(relay).kill()
            eventually(lambda n=crash: up_log(data_dir).count("relay exited") > n)
        assert "restarting in 8.0s" in up_log(data_dir)
        asked = time.monotonic()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
        assert time.monotonic() - asked < 4  # not 8 s of pause, then a start


def test_club_up_never_prints_a_password(database_url: str) -> None:
    """Issue #9, 5: the banner, the roles' logs and the supervisor's own lines."""
    data_dir = scratch_dir("club-up-secret-") / "data"
    secret = urlsplit(database_url).password  # the embedded server's own
    if secret is None:  # a trusting server ignores one; a leak would still show it
        secret = "hunter2-db"  # noqa: S105 - a stand-in, to be masked
        with_password = database_url.replace("postgres@", f"postgres:{secret}@", 1)
    else:
        with_password = database_url
    assert f":{secret}@" in with_password
    with club_up(data_dir, free_port(), CLUB_DATABASE_URL=with_password) as (api, proc):
        enroll_one(api)
        eventually(lambda: confirmed(api) == 1)
        for role, user in [("relay", "relay"), ("statistics", "consumer-statistics")]:
            pid = started(proc, lambda argv, r=role: argv[-1] == r)
            url = psutil.Process(pid).environ()["CLUB_NATS_URL"]
            assert url.startswith(f"nats://{user}:"), role  # its own user, no other
        relay = started(proc, lambda argv: argv[-1] == "relay")
        psutil.Process(relay).kill()  # a restart line too
        eventually(lambda: "relay exited" in up_log(data_dir))
        ctrl_c(proc)
    printed = up_log(data_dir)
    assert "postgres:***@" in printed
    assert secret not in printed
    nats_passwords = json.loads((data_dir / "nats/credentials.json").read_text())
    assert nats_passwords.keys() >= {"admin", "api", "relay"}
    for password in nats_passwords.values():
        assert password not in printed


def test_club_up_from_a_home_only_root_can_enter_serves() -> None:
    """Issue #9, item 9: `make run` in /root/club, as root, with the clone's own
    .venv (the project's packages, hard-linked) behind the closed door."""
    home = scratch_dir("club-up-root-") / "root"
    home.mkdir()
    home.chmod(0o700)
    clone = home / "club"
    python = venv_inside(clone / ".venv")
    data_dir = clone / ".club"
    moved = placement.OUTSIDE / _digest(data_dir / "postgres")
    try:
        with club_up(data_dir, free_port(), python=python) as (api, proc):
            assert httpx.get(f"{api}/readyz").status_code == 200
            enroll_one(api)
            eventually(lambda: confirmed(api) == 1)
            ctrl_c(proc)
        printed = up_log(data_dir)
        if os.geteuid() == 0:
            assert "roles          run as root: 'nobody' cannot run" in printed
            assert f"cannot enter {home}: its data is kept in {moved}" in printed
            assert f"binaries copied to {moved}/pginstall/" in printed
            assert (moved / "server/pgdata/PG_VERSION").exists()
    finally:
        shutil.rmtree(moved, ignore_errors=True)
        with contextlib.suppress(OSError):  # only if nothing else lives there
            placement.OUTSIDE.rmdir()


def venv_inside(venv: Path, base: Path | None = None) -> str:
    """A virtualenv at `venv` of the interpreter `base` (this one's by default)
    with this one's packages and nats-server, linked."""
    base = base or Path(sysconfig.get_config_var("BINDIR")) / "python3"
    subprocess.run([str(base), "-m", "venv", "--without-pip", str(venv)], check=True)
    here = Path(sysconfig.get_path("purelib"))
    there = venv / here.relative_to(sys.prefix)
    shutil.rmtree(there)
    shutil.copytree(here, there, copy_function=os.link, symlinks=True)
    os.link(
        Path(sysconfig.get_path("scripts")) / "nats-server", venv / "bin/nats-server"
    )
    return str(venv / "bin/python")


def _digest(path: Path) -> str:
    return hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]


def test_operator_commands_beside_club_up_find_it_by_themselves() -> None:
    """A second terminal with only CLUB_DATA_DIR: `club status` and `club dlq list`
    answer without a URL or password to dig out; once `club up` stops they say
    no Club runs there, in one line."""
    data_dir = scratch_dir("club-up-beside-") / "data"
    beside = {k: v for k, v in os.environ.items() if not k.startswith("CLUB_")}
    beside["CLUB_DATA_DIR"] = str(data_dir)

    def club(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "entrypoints.cli", *argv],
            env=beside, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip

    with club_up(data_dir, free_port()) as (_, proc):
        running = data_dir / "running.json"
        assert oct(running.stat().st_mode & 0o777) == "0o600"
        status = club("status", "--json")
        assert status.returncode == 0, status.stderr
        assert "delivery" in json.loads(status.stdout)
        listed = club("dlq", "list", "--json")
        assert listed.returncode == 0, listed.stderr
        ctrl_c(proc)
    assert not running.exists()
    after = club("status")
    assert after.returncode == 2
    assert "no Club is running on" in after.stderr
    assert "Traceback" not in after.stderr
