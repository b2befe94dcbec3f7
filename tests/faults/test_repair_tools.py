"""`club audit` finds what a broker lost; `club relay rewind` puts it back."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from uuid import uuid4

import httpx

from adapters.nats.streams import EVENTS_STREAM, ensure_streams
from adapters.postgres.audit_records import PostgresAuditRecords
from adapters.postgres.lease import RELAY_LEASE, RelayLease
from tests.faults.facts import enroll, settled, setup_lesson
from tests.faults.workload import confirmed_totals
from tests.identity import ADMIN
from tests.integration.helpers import with_js
from tests.stack import eventually


def club(stack, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "entrypoints.cli", *args],
        env=stack.env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_audit_finds_lost_events_and_rewind_restores_them(
    stack, container, migrated
) -> None:
    nats_url = migrated[1]
    lease = RelayLease(container.engine, name=RELAY_LEASE, owner="test", ttl=1)
    lesson_id, student = setup_lesson(stack.base, capacity=5)
    key = str(uuid4())
    assert enroll(stack.base, lesson_id, student, key).status_code == 201
    settled(container, nats_url, lesson_id, key)
    clean = club(stack, "audit")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "never saw: 0" in clean.stdout

    stack.stop("projector")
    stack.stop("rosters")
    before_loss = lease.position()
    for _ in range(2):
        other = f"s-{uuid4().hex[:10]}"
        profile = {"email": "a@b.org", "name": "B"}
        assert httpx.put(
            f"{stack.base}/students/{other}", json=profile, headers=ADMIN
        ).is_success
        assert enroll(stack.base, lesson_id, other, str(uuid4())).status_code == 201
    newest = container.app.recorder.max_notification_id()
    eventually(lambda: lease.position() == newest)

    async def lose_everything(js, _) -> None:  # the broker's disk is gone
        await js.delete_stream(EVENTS_STREAM)
        await ensure_streams(js)

    asyncio.run(with_js(nats_url, lose_everything))
    lost = club(stack, "audit")
    assert lost.returncode == 1
    assert "never saw: 4" in lost.stdout  # 2 enrollments x 2 consumers
    suggested = re.search(r"club relay rewind --to (\d+)", lost.stdout)
    assert suggested is not None, lost.stdout
    first_lost = int(suggested[1])
    # The first lost id itself, not the one before it:
    lost_ids = [
        nid
        for nid, *_ in PostgresAuditRecords(
            container.engine, container.app.recorder, container.app.mapper
        ).published_up_to_position()
    ]
    assert first_lost == min(nid for nid in lost_ids if nid > before_loss)

    rewound = club(stack, "relay", "rewind", "--to", str(first_lost))
    assert rewound.returncode == 0, rewound.stderr
    # The position is the last id published, so --to N publishes N itself again
    # (the running relay may already have moved it on: read what the command did).
    assert f"to {first_lost - 1}; " in rewound.stdout
    assert f"republishes from notification {first_lost} on" in rewound.stdout
    stack.start("projector")
    stack.start("rosters")
    totals = eventually(
        lambda: (t := confirmed_totals(container))["projection"] == t["store"] and t
    )
    assert totals["store"] >= 3
    healed = club(stack, "audit")
    assert healed.returncode == 0, healed.stdout
    bad = club(stack, "relay", "rewind", "--to", "-1")
    assert bad.returncode == 2
    assert "--to must be from 1 to" in bad.stderr
    assert club(stack, "relay", "rewind", "--to", "0").returncode == 2
