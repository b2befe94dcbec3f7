"""`club saga` and `club sandbox payment` refuse a bad setting with one line that
names the fix, before anything starts (exit 2, no traceback)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.stack import club_env


def club(*argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "entrypoints.cli", *argv],
        env=club_env("postgresql://127.0.0.1:1/x", "nats://127.0.0.1:1") | env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("argv", "env", "names"),
    [
        (("sandbox", "payment"), {"CLUB_PAYMENT_WEBHOOK_SECRET": ""},
         "CLUB_PAYMENT_WEBHOOK_SECRET"),
        (("saga",), {"CLUB_SAGA_OFFER_WINDOW_SECONDS": "-1"},
         "CLUB_SAGA_OFFER_WINDOW_SECONDS"),
        (("saga",), {"CLUB_SAGA_LEASE_SECONDS": "soon"}, "CLUB_SAGA_LEASE_SECONDS"),
        (("saga",), {"CLUB_SAGA_MAX_CHECKS": "0"}, "CLUB_SAGA_MAX_CHECKS"),
        (("saga",), {"CLUB_PAYMENT_PROVIDER_URL": "ftp://pay"},
         "CLUB_PAYMENT_PROVIDER_URL"),
        (("saga",), {"CLUB_CRASH_AT": "saga.after_lunch"},
         "saga.after_refund_accepted"),
    ],
)  # fmt: skip
def test_a_bad_saga_setting_is_one_line_naming_the_fix(
    argv: tuple[str, ...], env: dict[str, str], names: str
) -> None:
    done = club(*argv, **env)
    assert done.returncode == 2, done.stderr
    assert names in done.stderr
    assert "Traceback" not in done.stderr
