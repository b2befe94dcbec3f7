"""`club demo` is a client of the running API: a teacher's token schedules the lesson,
each student's own token registers and enrolls it; without an API it says to start
`club up`, and a refusal is one line, never a traceback."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import httpx

from adapters.embedded.process import free_port
from tests.identity import ADMIN, TEST_AUTH_SECRET, as_student
from tests.stack import Stack, eventually

LESSON = re.compile(
    r"lesson ([0-9a-f-]{36}): (\d+) student\(s\) registered and enrolled, "
    r"(\d+) seat\(s\) taken"
)


def club_demo(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "entrypoints.cli", "demo", *args],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def no_club_env(**settings: str) -> dict[str, str]:
    """This machine's environment less its CLUB_* settings, plus `settings`."""
    return {k: v for k, v in os.environ.items() if not k.startswith("CLUB_")} | settings


def roster_call(stdout: str) -> tuple[str, dict[str, str]]:
    """The printed roster line, taken as a shell would: `curl URL -H "name: value"`."""
    line = next(line for line in stdout.splitlines() if "curl " in line)
    curl, url, flag, header = shlex.split(line[line.index("curl ") :])
    assert (curl, flag) == ("curl", "-H"), line
    name, value = header.split(": ", 1)
    return url, {name: value}


def test_club_demo_enrolls_each_student_through_the_api(stack: Stack) -> None:
    done = club_demo(stack.env, "--students", "4")
    assert done.returncode == 0, done.stderr
    found = LESSON.search(done.stdout)
    assert found, done.stdout
    lesson_id, enrolled, taken = found[1], int(found[2]), int(found[3])
    assert (enrolled, taken) == (4, 4)

    lesson = httpx.get(f"{stack.base}/lessons/{lesson_id}", headers=ADMIN).json()
    assert (lesson["capacity"], lesson["seats_taken"]) == (4, 4)
    # The roster line works as written: its URL, and the lesson's teacher's token.
    url, teacher = roster_call(done.stdout)
    assert url == f"{stack.base}/lessons/{lesson_id}/roster"

    def roster() -> list[dict[str, str]]:
        students = httpx.get(url, headers=teacher).json()["students"]
        return students if len(students) == 4 else []

    for row in eventually(roster):  # each student's own enrollment, confirmed
        mine = httpx.get(
            f"{stack.base}/enrollments/{row['enrollment_id']}",
            headers=as_student(row["student_id"]),
        ).json()
        assert (mine["lesson_id"], mine["status"]) == (lesson_id, "confirmed")


def test_club_demo_signs_with_the_secret_club_up_made(
    stack: Stack, tmp_path: Path
) -> None:
    (tmp_path / "auth").mkdir()
    (tmp_path / "auth" / "secret").write_text(TEST_AUTH_SECRET + "\n")
    env = {k: v for k, v in stack.env.items() if k != "CLUB_AUTH_SECRET"}
    done = club_demo(env | {"CLUB_DATA_DIR": str(tmp_path)}, "--students", "1")
    assert done.returncode == 0, done.stderr
    found = LESSON.search(done.stdout)
    assert found, done.stdout
    assert (found[2], found[3]) == ("1", "1")


def test_club_demo_says_to_start_club_up_when_no_api_answers(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    env = no_club_env(
        CLUB_HTTP_PORT=str(port),
        CLUB_DATA_DIR=str(tmp_path),
        CLUB_AUTH_SECRET=TEST_AUTH_SECRET,
    )
    refused = club_demo(env, "--students", "2")
    assert refused.returncode == 2
    assert refused.stdout == ""
    assert refused.stderr == (
        f"club: no Club API answers at http://127.0.0.1:{port}; start `club up` "
        "first (CLUB_HTTP_HOST and CLUB_HTTP_PORT say where it listens)\n"
    )


def test_club_demo_stops_on_a_refusal_with_one_line(stack: Stack) -> None:
    other = "not-the-api-secret-0123456789abcdefgh"
    refused = club_demo(stack.env | {"CLUB_AUTH_SECRET": other}, "--students", "2")
    assert refused.returncode == 1
    assert refused.stdout == ""
    [line] = refused.stderr.splitlines()
    assert line.startswith("club: demo stopped: POST /lessons answered 401"), line


def test_club_demo_refuses_a_count_it_cannot_seed(tmp_path: Path) -> None:
    refused = club_demo(no_club_env(CLUB_DATA_DIR=str(tmp_path)), "--students", "-3")
    assert refused.returncode == 2
    assert "give a whole number from 0 to 1000, not '-3'" in refused.stderr
