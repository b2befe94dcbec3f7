"""`club demo` seeds a lesson with students enrolled, and refuses a bad count."""

from __future__ import annotations

import re
import subprocess
import sys
from uuid import UUID

from entrypoints.config.role_env import role_env


def club_demo(
    database_url: str, nats_url: str, *args: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "entrypoints.cli", "demo", *args],
        env=role_env(database_url, nats_url), capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip


def test_club_demo_enrolls_the_students_it_names(migrated, container) -> None:
    done = club_demo(*migrated, "--students", "4")
    assert done.returncode == 0, done.stderr
    found = re.search(r"lesson ([0-9a-f-]{36}): 4 student\(s\) enrolled", done.stdout)
    assert found, done.stdout
    lesson = container.app.get_lesson(UUID(found[1]))
    assert lesson.capacity == 4
    assert len(lesson.seats) == 4


def test_club_demo_refuses_a_count_it_cannot_seed(migrated) -> None:
    refused = club_demo(*migrated, "--students", "-3")
    assert refused.returncode == 2
    assert "give a whole number from 0 to 1000, not '-3'" in refused.stderr
