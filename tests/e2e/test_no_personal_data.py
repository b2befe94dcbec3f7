"""Issue #13: no e-mail address and no student's name outside the student directory.

`club up` runs every role as it does in production (on this module's PostgreSQL and
NATS, so the test can read them afterwards), its output captured to files. Students
with distinctive addresses and names enroll and are e-mailed, one buys a seat, one
address is refused for good by the provider (a dead letter, then replayed), a
roster is exported. Then the addresses and names are looked for in (1) every
stored event, (2) every message of CLUB_EVENTS, CLUB_DLQ and CLUB_REPLAY, data
and headers, (3) every line each role logged — the sandboxes excepted, they play
the provider — and what `club dlq` printed, (4) every notification's last_error,
and beyond the brief, every other text a table holds but the directory's own.

The logs are JSON lines, one object each, naming their role; the work done per
event names its event_id and correlation_id, a request its request_id.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import httpx
import sqlalchemy as sa
from nats.js.errors import NotFoundError

from adapters.embedded.process import free_port
from adapters.embedded.readiness import wait_ready
from adapters.embedded.scratch import scratch_dir
from adapters.nats.streams import DLQ_STREAM, EVENTS_STREAM, REPLAY_STREAM, connect
from entrypoints.runtime import bootstrap
from tests.api_client import ClubClient, bearer
from tests.identity import ADMIN
from tests.stack import FAST_SAGA, club_env, eventually

TOKEN = "pii-test-operator-token-0123456789"  # noqa: S105 - a test's token
RUN = uuid4().hex[:6]  # so that no earlier run's text can match
STUDENTS = {
    "kept": (f"quillon.zephyrine.{RUN}@example.org", f"Quillon Zephyrine{RUN}"),
    "unicode": (f"žofie.ptáčková.{RUN}@příklad.example", f"Žofie Ptáčková{RUN}"),
    "buyer": (f"ottoline.brack+{RUN}@example.net", f"Ottoline Brack{RUN}"),
    "refused": (f"brannock.vexley.{RUN}@example.org", f"Brannock Vexley{RUN}"),
}
SECRETS = [text for pair in STUDENTS.values() for text in pair]
# Every role but the two sandboxes, which play the provider and may hold addresses.
CLUB_ROLES = {" ".join(r.argv) for r in bootstrap.ROLES if r.kind != "sandbox"}
LOG_FIELDS = {"timestamp", "level", "event", "role"}


@contextmanager
def club_up(migrated: tuple[str, str], folder: Path) -> Iterator[dict[str, str]]:
    """`club up` on the module's servers; stdout and stderr kept apart in files."""
    env = club_env(
        *migrated,
        CLUB_DATA_DIR=str(folder / "data"),
        CLUB_HTTP_PORT=str(free_port()),
        CLUB_OPERATOR_TOKEN=TOKEN,
        **FAST_SAGA,
    )
    # Appending (O_APPEND): the `club dlq` commands add their lines to up.err too.
    with (folder / "up.out").open("ab") as out, (folder / "up.err").open("ab") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "entrypoints.cli", "up"],
            env=env,
            stdout=out,
            stderr=err,
        )
        try:
            wait_ready(f"http://127.0.0.1:{env['CLUB_HTTP_PORT']}", timeout=60)
            yield env
            proc.send_signal(signal.SIGINT)  # as a terminal's Ctrl-C
            assert proc.wait(60) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def club(env: dict[str, str], folder: Path, *argv: str) -> str:
    """A `club` command on the same servers; its stderr joins the role logs."""
    done = subprocess.run(
        [sys.executable, "-m", "entrypoints.cli", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    with (folder / "up.err").open("a") as err:
        err.write(done.stderr)
    assert done.returncode == 0, done.stderr
    return done.stdout


def notification(api: str, enrollment_id: str) -> dict[str, Any] | None:
    shown = httpx.get(
        f"{api}/enrollments/{enrollment_id}", timeout=5, headers=ADMIN
    ).json()
    return shown["notification"]  # type: ignore[no-any-return]


def notified(
    api: str, enrollment_id: str, state: str, kind: str = "confirmation"
) -> bool:
    found = notification(api, enrollment_id)
    return found is not None and (found["kind"], found["state"]) == (kind, state)


def test_no_address_or_name_leaves_the_student_directory(
    migrated: tuple[str, str],
) -> None:
    folder = scratch_dir("club-test_no_personal_data-")
    with club_up(migrated, folder) as env:
        api = f"http://127.0.0.1:{env['CLUB_HTTP_PORT']}"
        mail = env["CLUB_EMAIL_PROVIDER_URL"]
        refused_student = exercise(api, mail, env, folder)
    lines = role_lines(folder / "up.err")
    assert_logs_name_their_work(lines, migrated[0], refused_student)
    places = {
        "the event store": stored_events(migrated[0]),
        "the streams": asyncio.run(stream_messages(migrated[1])),
        "the role logs": [json.dumps(line, ensure_ascii=False) for line in lines],
        "club up's own output": [(folder / "up.out").read_text(errors="replace")],
        "club dlq's output": [(folder / "dlq.out").read_text()],
        "the notifications' last_error": last_errors(migrated[0]),
        "any other table": other_tables(migrated[0]),
    }
    found = {
        where: sorted({s for s in SECRETS for text in texts if s in text})
        for where, texts in places.items()
    }
    assert found == {where: [] for where in places}
    assert places["the streams"], "nothing was read from the streams"


def exercise(api: str, mail: str, env: dict[str, str], folder: Path) -> str:
    """Everything that could carry an address somewhere; returns the id of the
    student whose address the provider refused."""
    with ClubClient(api, timeout=10, patient=True) as client:
        lesson = client.lesson(capacity=8)
        ids = {
            who: client.student(email=address, name=name)
            for who, (address, name) in STUDENTS.items()
        }
        enrolled = {}
        for who in ("kept", "unicode"):
            answer = client.enroll(lesson, ids[who])
            assert answer.status_code == 201, answer.text
            enrolled[who] = answer.json()["enrollment_id"]
        for enrollment in enrolled.values():
            eventually(lambda e=enrollment: notified(api, e, "sent"), timeout=60)  # type: ignore[misc]
        # One cancelled: a second kind of e-mail, a second event type.
        kept = enrolled["kept"]
        cancelled = client.request("POST", f"/enrollments/{kept}/cancel")
        assert cancelled.status_code == 200, cancelled.text
        eventually(lambda: notified(api, kept, "sent", "cancellation"), timeout=60)
        # A bought seat: the saga, the payment sandbox, the purchase's two e-mails.
        bought = buy_a_seat(client, ids["buyer"])
        buyer = STUDENTS["buyer"][0]
        eventually(lambda: mailed(mail, buyer) == 2, timeout=90, interval=0.5)
        assert purchase_status(api, bought) == "confirmed"
        # Now the provider refuses everything for a while: the next address is
        # refused for good (a 400), dead-lettered with the provider's words.
        httpx.put(f"{mail}/knobs", json={"fail_rate": 1, "fail_status": 400})
        refused = client.enroll(lesson, ids["refused"]).json()["enrollment_id"]
        eventually(lambda: notified(api, refused, "dead-lettered"), timeout=60)
        httpx.put(f"{mail}/knobs", json={"fail_rate": 0})
        export = client.request("POST", f"/lessons/{lesson}/roster-exports")
        assert export.status_code == 202, export.text
        operation = f"{api}{export.headers['location']}"
        eventually(
            lambda: (
                httpx.get(operation, timeout=5, headers=ADMIN).json()["status"]
                == "succeeded"
            ),
            timeout=60,
        )
        # An operator with the wrong token: a log line the request names.
        forbidden = httpx.get(
            f"{api}/ops/status",
            headers=bearer("not-the-token") | {"X-Request-ID": f"pii-{RUN}"} | ADMIN,
            timeout=5,
        )
    assert forbidden.status_code == 403
    assert forbidden.headers["x-request-id"] == f"pii-{RUN}"
    (folder / "dlq.out").write_text(club(env, folder, "dlq", "list", "--json"))
    club(env, folder, "dlq", "replay", "--consumer", "notifications", "--reason", "t")
    eventually(lambda: notified(api, refused, "sent"), timeout=60)
    return ids["refused"]


def buy_a_seat(client: ClubClient, student_id: str) -> str:
    lesson = client.paid_lesson(capacity=2)
    answer = client.reserve(lesson, student_id)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["purchase_id"])


def purchase_status(api: str, purchase_id: str) -> str:
    return str(
        httpx.get(f"{api}/purchases/{purchase_id}", timeout=5, headers=ADMIN).json()[
            "status"
        ]
    )


def mailed(mail: str, address: str) -> int:
    """How many messages the sandbox accepted for `address` (payment received,
    seat confirmed: the purchase's two e-mails)."""
    listing = httpx.get(f"{mail}/messages", timeout=5).json()["messages"]
    return sum(1 for message in listing if message["to"] == address)


def role_lines(path: Path) -> list[dict[str, Any]]:
    """Every line the roles wrote to stderr: each must be one JSON object."""
    lines = []
    for number, text in enumerate(path.read_text().splitlines(), 1):
        if not text.strip():
            continue
        try:
            line = json.loads(text)
        except ValueError:
            raise AssertionError(f"up.err:{number} is not JSON: {text!r}") from None
        assert isinstance(line, dict), f"up.err:{number}: {text!r}"
        assert set(line) >= LOG_FIELDS, f"up.err:{number} lacks fields: {text!r}"
        lines.append(line)
    return [line for line in lines if not str(line["role"]).startswith("sandbox")]


def assert_logs_name_their_work(
    lines: list[dict[str, Any]], database_url: str, refused_student: str
) -> None:
    roles = {line["role"] for line in lines}
    assert roles >= CLUB_ROLES, f"no lines from {CLUB_ROLES - roles}"
    [dead] = [
        line
        for line in lines
        if line["event"] == "consumer.dead_lettered"
        and line["role"] == "worker notifications"
    ]
    assert dead["event_id"] == refused_notification(database_url, refused_student)
    assert dead["consumer"] == "notifications"
    UUID(dead["correlation_id"])  # the enrollment's aggregate id
    [forbidden] = [line for line in lines if line["event"] == "ops.forbidden"]
    assert (forbidden["role"], forbidden["request_id"]) == ("api", f"pii-{RUN}")


def engine(database_url: str) -> sa.Engine:
    return sa.create_engine(
        database_url.replace("postgresql://", "postgresql+psycopg://")
    )


def refused_notification(database_url: str, student_id: str) -> str:
    """The event id of the one notification to the refused student."""
    query = "SELECT event_id FROM notifications WHERE student_id = :id"
    with engine(database_url).connect() as conn:
        return str(conn.execute(sa.text(query), {"id": student_id}).scalar_one())


def stored_events(database_url: str) -> list[str]:
    """Each event's stored state as text (JSON parsed and written back unescaped,
    so that an escaped "\\u017e" cannot hide a "ž")."""
    with engine(database_url).connect() as conn:
        states = conn.execute(sa.text("SELECT state FROM club_events")).scalars()
        return [_readable(bytes(state)) for state in states]


async def stream_messages(nats_url: str) -> list[str]:
    """Every message still held by the three streams: its data and its headers."""
    nc = await connect(nats_url, name="pii-test")
    texts = []
    try:
        js = nc.jetstream()
        for stream in (EVENTS_STREAM, DLQ_STREAM, REPLAY_STREAM):
            state = (await js.stream_info(stream)).state
            for seq in range(state.first_seq, state.last_seq + 1):
                try:
                    msg = await js.get_msg(stream, seq)
                except NotFoundError:
                    continue
                texts.append(_readable(msg.data or b""))
                texts.append(json.dumps(msg.headers or {}, ensure_ascii=False))
    finally:
        await nc.close()
    return texts


def last_errors(database_url: str) -> list[str]:
    with engine(database_url).connect() as conn:
        query = "SELECT last_error FROM notifications WHERE last_error IS NOT NULL"
        errors = list(conn.execute(sa.text(query)).scalars())
    assert errors, "no notification failed: the refusal did not happen"
    return errors


def other_tables(database_url: str) -> list[str]:
    """Every row of every other table as text: only `students` may hold them."""
    with engine(database_url).connect() as conn:
        tables = conn.execute(
            sa.text(
                "SELECT quote_ident(table_schema) || '.' || quote_ident(table_name) "
                "FROM information_schema.tables WHERE table_type = 'BASE TABLE' "
                "AND table_schema NOT IN ('pg_catalog', 'information_schema') "
                "AND table_name NOT IN ('students', 'club_events')"
            )
        ).scalars()
        return [
            _readable(value) if isinstance(value, bytes | memoryview) else str(value)
            for table in list(tables)
            for row in conn.execute(sa.text(f"SELECT * FROM {table}"))
            for value in row
        ]


def _readable(raw: bytes | memoryview) -> str:
    text = bytes(raw).decode("utf-8", errors="replace")
    try:
        return json.dumps(json.loads(text), ensure_ascii=False)
    except ValueError:
        return text
