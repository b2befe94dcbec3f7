"""What `club up` leaves for the operator's commands is believed only while sound."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from entrypoints.config.running import RUNNING_FILE, Running, announce, running_beside

pytestmark = pytest.mark.unit


def test_a_running_club_up_is_found_and_its_file_is_private(tmp_path: Path) -> None:
    running = Running(
        database_url="postgresql://x", nats_url="nats://y", pid=os.getpid()
    )
    announce(tmp_path, running)
    assert running_beside(tmp_path) == running
    assert oct((tmp_path / RUNNING_FILE).stat().st_mode & 0o777) == "0o600"


@pytest.mark.parametrize(
    "text",
    ["", "not json", "[]", '{"database_url": 1}', "\x00" * 10, '{"pid": "x"}'],
)
def test_a_file_that_is_no_record_is_ignored(tmp_path: Path, text: str) -> None:
    (tmp_path / RUNNING_FILE).write_text(text)
    assert running_beside(tmp_path) is None


def test_a_file_left_by_a_killed_club_up_is_ignored(tmp_path: Path) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    announce(tmp_path, Running(database_url="d", nats_url="n", pid=int(gone.stdout)))
    assert running_beside(tmp_path) is None
