"""The e-mail sandbox as a provider, over real HTTP to a real process: idempotency
across restarts, each knob, the rate limit, the inbox, and hostile input."""

from __future__ import annotations

import threading
import time
from datetime import datetime
from uuid import uuid4

import httpx
import pytest

from sandboxes.email import create_app, parse_knob_args
from sandboxes.knobs import KnobError
from tests.integration.sandbox_contract import SandboxContract
from tests.integration.sandbox_process import DEFAULT_KNOBS, SandboxProcess
from tests.servers import scratch_dir

MESSAGE = {"to": "ann@example.org", "subject": "Welcome", "body": "See you at Yoga."}


@pytest.fixture
def http(email_sandbox):
    with (
        email_sandbox.fresh_knobs(),
        httpx.Client(base_url=email_sandbox.url, timeout=10) as client,
    ):
        yield client


def send(http: httpx.Client, key: str | None = None, body=None) -> httpx.Response:
    return http.post(
        "/messages",
        json=MESSAGE if body is None else body,
        headers={"Idempotency-Key": key or str(uuid4())},
    )


def test_a_repeat_returns_the_first_result(http):
    key = str(uuid4())
    first = send(http, key)
    again = send(http, key)
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert first.headers["Idempotent-Replayed"] == "false"
    assert again.headers["Idempotent-Replayed"] == "true"
    listed = http.get("/messages").json()["messages"]
    assert [m["idempotency_key"] for m in listed].count(key) == 1


def test_the_first_result_survives_a_killed_sandbox(tmp_path):
    with SandboxProcess(
        scratch_dir("club-email-restart-") / "data"
    ).running() as process:
        key = str(uuid4())
        first = httpx.post(
            f"{process.url}/messages", json=MESSAGE, headers={"Idempotency-Key": key}
        ).json()
        process.kill()
        process.start()  # same data dir, same port
        again = httpx.post(
            f"{process.url}/messages", json=MESSAGE, headers={"Idempotency-Key": key}
        )
        assert again.status_code == 201
        assert again.json() == first
        assert again.headers["Idempotent-Replayed"] == "true"
        assert httpx.get(f"{process.url}/messages/{key}").json()["id"] == first["id"]
        assert httpx.get(f"{process.url}/messages").json()["total"] == 1


def test_status_lookup_by_key(http):
    key = str(uuid4())
    unknown = http.get(f"/messages/{key}")
    assert unknown.status_code == 404
    assert unknown.headers["content-type"] == "application/problem+json"
    accepted = send(http, key).json()
    found = http.get(f"/messages/{key}")
    assert found.status_code == 200
    assert found.json()["status"] == "accepted"
    assert found.json()["id"] == accepted["id"]


def test_messages_are_listed_newest_first(http):
    keys = [str(uuid4()) for _ in range(3)]
    for key in keys:
        send(http, key)
    listing = http.get("/messages", params={"limit": 3}).json()
    assert [m["idempotency_key"] for m in listing["messages"]] == keys[::-1]
    assert listing["total"] >= 3
    second = http.get("/messages", params={"limit": 1, "offset": 1}).json()
    assert [m["idempotency_key"] for m in second["messages"]] == [keys[1]]


@pytest.mark.parametrize(
    "params",
    [{"limit": "0"}, {"limit": "x"}, {"limit": "10001"}, {"limit": "9" * 5000},
     {"offset": "-1"}, {"offset": "1e3"}, {"offset": "9" * 5000}],
)  # fmt: skip
def test_a_bad_page_of_messages_is_422(http, params):
    refused = http.get("/messages", params=params)
    assert refused.status_code == 422
    assert refused.headers["content-type"] == "application/problem+json"


def test_the_html_inbox_escapes_attacker_text(http):
    hostile = {
        "to": "eve@example.org",
        "subject": "<script>alert('s')</script>",
        "body": '</pre><script>alert("b")</script><img src=x onerror=alert(1)>',
    }
    assert send(http, body=hostile).status_code == 201
    page = http.get("/")
    assert page.status_code == 200
    assert "<script>" not in page.text
    assert "<img" not in page.text
    assert "&lt;script&gt;alert(&#x27;s&#x27;)&lt;/script&gt;" in page.text
    assert "&lt;/pre&gt;&lt;script&gt;" in page.text
    assert "script-src" not in page.headers["content-security-policy"]  # none at all
    assert page.headers["content-security-policy"].startswith("default-src 'none'")


def test_the_html_inbox_shows_the_newest_first(http):
    subjects = [f"Lesson {uuid4().hex[:6]}" for _ in range(2)]
    for subject in subjects:
        send(http, body=MESSAGE | {"subject": subject})
    page = http.get("/").text
    assert page.index(subjects[1]) < page.index(subjects[0])


def test_knobs_are_shown_and_changed_together(http):
    assert http.get("/knobs").json() == DEFAULT_KNOBS
    changed = http.put("/knobs", json={"latency_ms": 5, "fail_rate": 0.25})
    assert changed.status_code == 200
    assert changed.json() == DEFAULT_KNOBS | {"latency_ms": 5, "fail_rate": 0.25}
    assert http.get("/knobs").json() == changed.json()


@pytest.mark.parametrize(
    ("change", "status"),
    [
        ({"no_such_knob": 1}, 422),
        ({"latency_ms": -1}, 422),
        ({"latency_ms": 1.5}, 422),
        ({"fail_rate": 1.5}, 422),
        ({"fail_rate": "0.3"}, 422),
        ({"fail_rate": True}, 422),
        ({"fail_status": 200}, 422),
        ({"rate_limit_per_s": 0}, 422),
        ({"down": 1}, 422),
        ({"down": "yes"}, 422),
        (["latency_ms"], 422),
    ],
)
def test_bad_knobs_are_refused_and_nothing_changes(http, change, status):
    refused = http.put("/knobs", json=change)
    assert refused.status_code == status
    assert refused.headers["content-type"] == "application/problem+json"
    assert http.get("/knobs").json() == DEFAULT_KNOBS


def test_malformed_knobs_are_400(http):
    refused = http.put("/knobs", content=b"{latency", headers={"content-type": "x"})
    assert refused.status_code == 400


def test_knobs_are_taken_from_the_command_line():
    assert parse_knob_args(
        ["--fail-rate", "0.3", "--fail-status", "400", "--down", "--latency-ms", "7"]
    ) == {"fail_rate": 0.3, "fail_status": 400, "down": True, "latency_ms": 7}
    assert parse_knob_args([]) == {}


@pytest.mark.parametrize(
    "argv",
    [["--fail-rate", "2"], ["--fail-rate", "x"], ["--latency-ms", "0.5"], ["--nope"]],
)
def test_bad_command_line_knobs_exit_2_naming_the_fix(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        parse_knob_args(argv)
    assert exit_.value.code == 2
    assert "--" in capsys.readouterr().err


def test_a_sandbox_started_with_knobs_uses_them(tmp_path):
    process = SandboxProcess(
        scratch_dir("club-email-knobs-") / "data", "--fail-rate", "1", "--fail-status",
        "400", "--rate-limit-per-s", "7",
    )  # fmt: skip
    with process.running():
        knobs = httpx.get(f"{process.url}/knobs").json()
        assert knobs == DEFAULT_KNOBS | {
            "fail_rate": 1.0, "fail_status": 400, "rate_limit_per_s": 7,
        }  # fmt: skip
        refused = httpx.post(
            f"{process.url}/messages", json=MESSAGE, headers={"Idempotency-Key": "k"}
        )
        assert refused.status_code == 400


class TestEmailSandbox(SandboxContract):
    resource = "/messages"
    other_body = MESSAGE | {"subject": "Something else"}
    limited = (5, 3)

    @pytest.fixture
    def sandbox(self, email_sandbox: SandboxProcess) -> SandboxProcess:
        return email_sandbox

    def accept(self, http, key=None, body=None):
        return send(http, key, body)


def test_fail_rate_is_a_share_of_sends(http, email_sandbox):
    email_sandbox.set_knobs(fail_rate=0.5, rate_limit_per_s=1_000_000)
    statuses = [send(http).status_code for _ in range(200)]
    time.sleep(1.05)  # let these sends leave the default limit's window
    assert set(statuses) == {201, 503}
    assert 60 <= statuses.count(503) <= 140  # binomial(200, .5): 7 sigma either way


def test_a_dropped_response_was_accepted_all_the_same(http, email_sandbox):
    email_sandbox.set_knobs(drop_rate=1.0)
    key = str(uuid4())
    with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
        send(http, key)
    email_sandbox.set_knobs(drop_rate=0.0)
    found = http.get(f"/messages/{key}")
    assert found.status_code == 200
    assert found.json()["status"] == "accepted"


def test_down_refuses_every_provider_request_but_not_the_knobs(http, email_sandbox):
    email_sandbox.set_knobs(down=True)
    assert send(http).status_code == 503
    assert http.get(f"/messages/{uuid4()}").status_code == 503
    assert http.get("/knobs").json()["down"] is True
    email_sandbox.set_knobs(down=False)
    assert send(http).status_code == 201


def test_the_rate_limit_holds_in_every_window_of_a_second(http, email_sandbox):
    limit = 20
    email_sandbox.set_knobs(rate_limit_per_s=limit)
    started = time.time()
    stop = time.monotonic() + 2.5

    def hammer() -> None:
        with httpx.Client(base_url=email_sandbox.url, timeout=10) as client:
            while time.monotonic() < stop:
                send(client)

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    time.sleep(1.05)  # let these sends leave the window before the next test
    accepted = sorted(
        datetime.fromisoformat(m["accepted_at"]).timestamp()
        for m in http.get("/messages").json()["messages"]
        if datetime.fromisoformat(m["accepted_at"]).timestamp() >= started
    )
    assert len(accepted) >= 2 * limit  # the hammer did reach the limit
    for i, at in enumerate(accepted):  # each window (at - 1 s, at] holds <= limit
        in_window = [a for a in accepted[: i + 1] if a > at - 1.0]
        assert len(in_window) <= limit


@pytest.mark.parametrize(
    ("headers", "body", "status"),
    [
        ({}, MESSAGE, 400),  # no Idempotency-Key
        ({"Idempotency-Key": "k" * 256}, MESSAGE, 400),
        ({"Idempotency-Key": "has space"}, MESSAGE, 400),
        ({"Idempotency-Key": ""}, MESSAGE, 400),
        ({"Idempotency-Key": "k"}, b'{"to": "a@b.c", ', 400),  # malformed JSON
        ({"Idempotency-Key": "k"}, b'{"to": "a@b.c\x00"}', 400),  # raw NUL
        ({"Idempotency-Key": "k"}, b"\xff\xfe", 400),  # not UTF-8
        ({"Idempotency-Key": "k"}, b"[" * 100_000, 400),  # nesting bomb
        ({"Idempotency-Key": "k"}, [MESSAGE], 422),
        ({"Idempotency-Key": "k"}, {"to": "a@b.c"}, 422),
        ({"Idempotency-Key": "k"}, MESSAGE | {"body": "a\u0000b"}, 422),
        ({"Idempotency-Key": "k"}, MESSAGE | {"subject": "a\r\nBcc: x@y.z"}, 422),
        ({"Idempotency-Key": "k"}, MESSAGE | {"to": "not an address"}, 422),
        ({"Idempotency-Key": "k"}, MESSAGE | {"to": 7}, 422),
        ({"Idempotency-Key": "k"}, MESSAGE | {"cc": "x@y.z"}, 422),
        ({"Idempotency-Key": "k"}, MESSAGE | {"body": "x" * 300_000}, 422),
        (
            {"Idempotency-Key": "k"},
            b'{"to":"a@b.c","subject":"\\ud800","body":""}',
            422,
        ),
        ({"Idempotency-Key": "k"}, b"x" * (2 * 1024 * 1024), 413),
    ],
)
def test_bad_sends_are_4xx_problems_and_accept_nothing(http, headers, body, status):
    before = http.get("/messages").json()["total"]
    if isinstance(body, bytes):
        answer = http.post("/messages", content=body, headers=headers)
    else:
        answer = http.post("/messages", json=body, headers=headers)
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["detail"]
    assert http.get("/messages").json()["total"] == before


def test_a_chunked_huge_body_is_413(http):
    def chunks():
        for _ in range(40):
            yield b"x" * 65536

    answer = http.post("/messages", content=chunks(), headers={"Idempotency-Key": "k"})
    assert answer.status_code == 413


@pytest.mark.parametrize(
    ("knobs", "named"),
    [({"fail_rate": 2}, "fail_rate"), ({"latency": 5}, "unknown knob")],
)
def test_a_bad_start_up_knob_is_refused_before_anything_listens(tmp_path, knobs, named):
    with pytest.raises(KnobError, match=named):
        create_app(tmp_path, knobs)
