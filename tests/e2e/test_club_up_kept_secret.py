"""`club up` checks the secret it keeps for callers' tokens before starting anything."""

from __future__ import annotations

import os
import subprocess
import sys

from adapters.embedded.process import free_port
from adapters.identity.tokens import MIN_SECRET_BYTES
from entrypoints.config.auth_settings import secret_file
from tests.servers import scratch_dir


def test_a_kept_secret_too_short_stops_club_up_in_one_line() -> None:
    """Handed to the roles, it would fail each at start and `club up` would restart
    them for ever. Unreachable servers: were the check gone, this fails fast."""
    data_dir = scratch_dir("club-up-secret-") / "data"
    path = secret_file(data_dir)
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_text("too-short\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLUB_")} | {
        "CLUB_DATA_DIR": str(data_dir),
        "CLUB_HTTP_PORT": str(free_port()),
        "CLUB_DATABASE_URL": "postgresql://club@127.0.0.1:1/club",
        "CLUB_NATS_URL": "nats://127.0.0.1:1",
    }
    answer = subprocess.run(
        [sys.executable, "-m", "entrypoints.cli", "up"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert answer.returncode == 2, answer.stderr
    [line] = answer.stderr.splitlines()
    assert line.startswith(f"club: {path} must hold a secret of at least ")
    assert f"{MIN_SECRET_BYTES} bytes" in line
    assert "delete it to have a new one generated" in line
    assert answer.stdout == ""  # no banner, no server started
    assert path.read_text() == "too-short\n"
