"""An open provider circuit, as the operator sees it: one line in `club status`
(and its `--json`), on `/ops/status` and on the `/ops` page — "e-mail provider
down since …, N waiting, next probe at …" — read from the shared row."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from fastapi.testclient import TestClient

from adapters.postgres.provider_circuits import SqlProviderCircuit
from application.provider_circuit import CircuitPolicy
from entrypoints.ops.access import OpsConfig
from entrypoints.runtime.api import create_app
from tests.identity import VERIFIER

TOKEN = "provider-status-operator-token"  # noqa: S105 - a test value
OPS = OpsConfig(operator_token=TOKEN, promise_seconds=10, email_rate_per_s=100)
DOWN = "e-mail provider down since "


@pytest.fixture(scope="module")
def opened(container) -> None:
    circuit = SqlProviderCircuit(
        container.engine, "email", CircuitPolicy(failures_to_open=1, probe_every_s=60)
    )
    assert circuit.failed("provider answered 503: knob down=true")


def club(migrated, *args: str) -> subprocess.CompletedProcess[str]:
    database_url, nats_url = migrated
    env = {
        **os.environ,
        "CLUB_DATABASE_URL": database_url,
        "CLUB_NATS_URL": nats_url,
        "COLUMNS": "200",
    }
    return subprocess.run(
        [sys.executable, "-m", "entrypoints.cli", *args],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_club_status_says_the_provider_is_down_and_when_it_is_probed(
    migrated, opened
) -> None:
    shown = club(migrated, "status")
    assert shown.returncode == 0, shown.stderr
    [line] = [line for line in shown.stdout.splitlines() if DOWN in line]
    assert ", 0 waiting, next probe at " in line
    document = json.loads(club(migrated, "status", "--json").stdout)
    [email] = document["providers"]
    assert email["provider"] == "email"
    assert email["open"] is True
    assert email["waiting"] == 0
    assert email["line"].startswith(DOWN)
    assert email["next_probe_at"] > email["down_since"]


def test_ops_status_and_the_page_say_it_too(migrated, container, opened) -> None:
    app = create_app(container, migrated[1], ops=OPS, verifier=VERIFIER)
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    with TestClient(app) as api:
        status = api.get("/ops/status", headers=bearer)
        page = api.get("/ops/", headers=bearer)
    assert status.status_code == 200
    assert status.json()["providers"][0]["line"].startswith(DOWN)
    assert page.status_code == 200
    assert DOWN in page.text
