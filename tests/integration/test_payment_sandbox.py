"""The payment sandbox as a provider, over real HTTP to a real process: idempotency
across a SIGKILL, settling, signed webhooks (duplicated, reordered, late, retried),
each knob, refunds, and hostile input."""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
import time
from uuid import uuid4

import httpx
import pytest

from application.payment import SIGNATURE_HEADER, Webhook, WebhookType, verify_signature
from sandboxes.knobs import KnobError
from sandboxes.payment import create_app, parse_knob_args
from sandboxes.payment_provider import PaymentSandbox
from sandboxes.payment_request import read_charge
from sandboxes.payment_webhooks import WebhookSender
from tests.integration.payment_sandbox_process import (
    DEFAULT_PAYMENT_KNOBS,
    SECRET,
    PaymentSandboxProcess,
    WebhookReceiver,
)
from tests.integration.sandbox_contract import SandboxContract
from tests.servers import scratch_dir
from tests.stack import eventually

CHARGE = {"reference": "purchase-1", "amount_cents": 1500}


@pytest.fixture(scope="module")
def receiver():
    server = WebhookReceiver()
    yield server
    server.close()


@pytest.fixture(scope="module")
def sandbox(receiver):
    data = scratch_dir("club-payment-sandbox-") / "data"
    with PaymentSandboxProcess(data, webhook_url=receiver.url).running() as process:
        yield process


@pytest.fixture
def http(sandbox, receiver):
    with (
        sandbox.fresh_knobs(),
        httpx.Client(base_url=sandbox.url, timeout=10) as client,
    ):
        receiver.status = 200
        yield client
        receiver.status = 200


def charge(http: httpx.Client, key: str | None = None, body=None) -> httpx.Response:
    return http.post(
        "/payments",
        json=CHARGE if body is None else body,
        headers={"Idempotency-Key": key or str(uuid4())},
    )


def refund(http: httpx.Client, payment_id: str, amount: int, key: str | None = None):
    return http.post(
        "/refunds",
        json={"payment_id": payment_id, "amount_cents": amount},
        headers={"Idempotency-Key": key or str(uuid4())},
    )


def webhooks_for(receiver: WebhookReceiver, payment_id: str) -> list[Webhook]:
    return [
        w
        for w in (Webhook.from_json(r.body) for r in list(receiver.received))
        if w.payment_id == payment_id
    ]


# --- idempotency and the status lookup -----------------------------------------


def test_a_repeat_returns_the_first_result(http):
    key = str(uuid4())
    first = charge(http, key)
    again = charge(http, key)
    assert first.status_code == again.status_code == 201
    assert again.json()["id"] == first.json()["id"]
    assert first.headers["Idempotent-Replayed"] == "false"
    assert again.headers["Idempotent-Replayed"] == "true"
    listed = http.get("/payments").json()["payments"]
    assert [p["idempotency_key"] for p in listed].count(key) == 1


def test_with_no_knob_a_charge_is_pending_then_captured_and_reported(http, receiver):
    answer = charge(http).json()
    assert answer["status"] == "pending"
    key = answer["idempotency_key"]
    eventually(lambda: http.get(f"/payments/{key}").json()["status"] == "captured")
    [captured] = eventually(lambda: webhooks_for(receiver, answer["id"]), timeout=10)
    assert captured.type is WebhookType.PAYMENT_CAPTURED
    assert (captured.idempotency_key, captured.reference) == (key, "purchase-1")
    assert captured.amount_cents == 1500


def test_a_charge_survives_a_killed_sandbox_and_still_settles(receiver):
    process = PaymentSandboxProcess(
        scratch_dir("club-payment-restart-") / "data", "--settle-delay-ms", "1500",
        webhook_url=receiver.url,
    )  # fmt: skip
    with process.running():
        key = str(uuid4())
        first = httpx.post(
            f"{process.url}/payments", json=CHARGE, headers={"Idempotency-Key": key}
        ).json()
        assert first["status"] == "pending"
        process.kill()  # before it settled: the capture and its webhook are owed
        process.start()
        again = httpx.post(
            f"{process.url}/payments", json=CHARGE, headers={"Idempotency-Key": key}
        )
        assert again.status_code == 201
        assert again.json()["id"] == first["id"]
        assert again.headers["Idempotent-Replayed"] == "true"
        assert httpx.get(f"{process.url}/payments").json()["total"] == 1
        eventually(
            lambda: (
                httpx.get(f"{process.url}/payments/{key}").json()["status"]
                == "captured"
            )
        )
        eventually(lambda: webhooks_for(receiver, first["id"]), timeout=10)


def test_status_lookup_by_key(http):
    key = str(uuid4())
    unknown = http.get(f"/payments/{key}")
    assert unknown.status_code == 404
    assert unknown.headers["content-type"] == "application/problem+json"
    made = charge(http, key).json()
    found = http.get(f"/payments/{key}")
    assert found.status_code == 200
    assert found.json()["id"] == made["id"]


def test_the_listing_shows_each_payment_with_its_refunds(http, sandbox):
    sandbox.set_knobs(settle_delay_ms=0)
    paid = charge(http).json()
    assert paid["status"] == "captured"
    assert refund(http, paid["id"], 500).status_code == 201
    assert refund(http, paid["id"], 300).status_code == 201
    [listed] = http.get("/payments", params={"limit": 1}).json()["payments"]
    assert listed["id"] == paid["id"]
    assert listed["refunded_cents"] == 800
    assert [r["amount_cents"] for r in listed["refunds"]] == [500, 300]
    assert {r["status"] for r in listed["refunds"]} == {"succeeded"}


@pytest.mark.parametrize(
    "params",
    [{"limit": "0"}, {"limit": "x"}, {"limit": "10001"}, {"limit": "9" * 5000},
     {"offset": "-1"}, {"offset": "9" * 5000}],
)  # fmt: skip
def test_a_bad_page_of_payments_is_422(http, params):
    refused = http.get("/payments", params=params)
    assert refused.status_code == 422
    assert refused.headers["content-type"] == "application/problem+json"


# --- refunds -------------------------------------------------------------------


def test_a_refund_is_pending_then_succeeds_and_is_reported(http, receiver, sandbox):
    sandbox.set_knobs(settle_delay_ms=0)
    paid = charge(http).json()
    sandbox.set_knobs(settle_delay_ms=200)
    key = str(uuid4())
    made = refund(http, paid["id"], 1500, key)
    assert made.status_code == 201
    assert made.json()["status"] == "pending"
    assert refund(http, paid["id"], 1500, key).json()["id"] == made.json()["id"]
    eventually(lambda: http.get(f"/refunds/{key}").json()["status"] == "succeeded")
    hooks = eventually(lambda: webhooks_for(receiver, paid["id"])[1:], timeout=10)
    assert [w.type for w in hooks] == [WebhookType.REFUND_SUCCEEDED]
    assert hooks[0].refund_id == made.json()["id"]


@pytest.mark.parametrize(
    ("amounts", "slug"),
    [([1501], "refund-exceeds-payment"), ([1000, 501], "refund-exceeds-payment")],
)
def test_never_more_is_refunded_than_was_paid(http, sandbox, amounts, slug):
    sandbox.set_knobs(settle_delay_ms=0)
    paid = charge(http).json()
    *allowed, refused = amounts
    for amount in allowed:
        assert refund(http, paid["id"], amount).status_code == 201
    answer = refund(http, paid["id"], refused)
    assert answer.status_code == 422
    assert answer.json()["type"] == f"/problems/{slug}"


def test_a_refund_of_an_unknown_or_uncaptured_payment_is_refused(http, sandbox):
    assert refund(http, "pay_nope", 1).status_code == 404
    sandbox.set_knobs(settle_delay_ms=60_000)
    pending = charge(http).json()
    answer = refund(http, pending["id"], 1)
    assert answer.status_code == 422
    assert answer.json()["type"] == "/problems/payment-not-captured"


def test_refunds_down_answers_503_for_refunds_only(http, sandbox):
    sandbox.set_knobs(settle_delay_ms=0)
    paid = charge(http).json()
    sandbox.set_knobs(refunds_down=True)
    key = str(uuid4())
    assert refund(http, paid["id"], 100, key).status_code == 503
    assert http.get(f"/refunds/{key}").status_code == 503
    assert charge(http).status_code == 201
    sandbox.set_knobs(refunds_down=False)
    assert http.get(f"/refunds/{key}").status_code == 404  # nothing was accepted
    assert refund(http, paid["id"], 100, key).status_code == 201


# --- webhooks --------------------------------------------------------------------


def test_webhooks_arrive_signed_and_a_tampered_one_does_not_verify(http, receiver):
    paid = charge(http).json()
    eventually(lambda: webhooks_for(receiver, paid["id"]), timeout=10)
    [got] = [r for r in receiver.received if paid["id"].encode() in r.body]
    assert got.signature is not None
    assert verify_signature(SECRET, got.body, got.signature)
    tampered = got.body.replace(b"1500", b"9999")
    assert tampered != got.body
    assert not verify_signature(SECRET, tampered, got.signature)
    assert not verify_signature("not-the-secret", got.body, got.signature)


def test_a_failing_receiver_gets_the_webhook_again_until_it_answers_2xx(
    http, receiver, sandbox
):
    sandbox.set_knobs(settle_delay_ms=0)
    receiver.status = 500
    paid = charge(http).json()
    eventually(lambda: len(webhooks_for(receiver, paid["id"])) >= 3, timeout=10)
    receiver.status = 200
    log = http.get("/webhooks").json()["webhooks"]

    def delivered() -> bool:
        entries = http.get("/webhooks").json()["webhooks"]
        mine = [e for e in entries if e["payload"]["payment_id"] == paid["id"]]
        return bool(mine) and mine[0]["delivered_at"] is not None

    eventually(delivered, timeout=15)
    tries = webhooks_for(receiver, paid["id"])
    assert len({w.event_id for w in tries}) == 1  # the same event every time
    [mine] = [e for e in log if e["payload"]["payment_id"] == paid["id"]]
    assert mine["last_error"] == "answered 500"
    assert mine["gave_up_at"] is None


def test_duplicates_send_each_webhook_again_with_the_same_event_id(
    http, receiver, sandbox
):
    sandbox.set_knobs(settle_delay_ms=0, webhook_duplicates=2)
    paid = charge(http).json()
    copies = eventually(
        lambda: (
            len(webhooks_for(receiver, paid["id"])) == 3
            and webhooks_for(receiver, paid["id"])
        ),
        timeout=10,
    )
    assert len({w.event_id for w in copies}) == 1
    time.sleep(0.5)
    assert len(webhooks_for(receiver, paid["id"])) == 3  # no more than asked


def test_out_of_order_delivers_a_later_webhook_before_an_earlier_one(
    http, receiver, sandbox
):
    sandbox.set_knobs(settle_delay_ms=0, webhook_out_of_order=True)
    paid = charge(http).json()  # payment.captured, then at once...
    assert refund(http, paid["id"], 1500).status_code == 201  # ...refund.succeeded
    hooks = eventually(
        lambda: (
            len(webhooks_for(receiver, paid["id"])) == 2
            and webhooks_for(receiver, paid["id"])
        ),
        timeout=10,
    )
    assert [w.type for w in hooks] == [
        WebhookType.REFUND_SUCCEEDED,
        WebhookType.PAYMENT_CAPTURED,
    ]


def test_a_lone_webhook_is_not_held_for_ever_out_of_order(http, receiver, sandbox):
    sandbox.set_knobs(settle_delay_ms=0, webhook_out_of_order=True)
    paid = charge(http).json()
    eventually(lambda: webhooks_for(receiver, paid["id"]), timeout=10)


def test_a_late_webhook_comes_after_the_lookup_already_says_captured(
    http, receiver, sandbox
):
    # 3 s: the absence below is read after a charge and a lookup, which a busy
    # box may take a second over.
    sandbox.set_knobs(settle_delay_ms=0, webhook_delay_ms=3000)
    started = time.monotonic()
    paid = charge(http).json()
    assert http.get(f"/payments/{paid['idempotency_key']}").json()["status"] == (
        "captured"
    )
    assert webhooks_for(receiver, paid["id"]) == []
    eventually(lambda: webhooks_for(receiver, paid["id"]), timeout=10)
    assert time.monotonic() - started >= 3.0


def test_a_decline_is_402_with_its_reason_and_reported(http, receiver, sandbox):
    sandbox.set_knobs(decline_rate=1.0)
    key = str(uuid4())
    declined = charge(http, key)
    assert declined.status_code == 402
    assert declined.headers["content-type"] == "application/problem+json"
    problem = declined.json()
    assert problem["decline_reason"] == "card_declined"
    sandbox.set_knobs(decline_rate=0.0)
    again = charge(http, key)  # the first result, even with the knob off
    assert again.status_code == 402
    assert again.json()["payment_id"] == problem["payment_id"]
    assert http.get(f"/payments/{key}").json()["status"] == "declined"
    [hook] = eventually(lambda: webhooks_for(receiver, problem["payment_id"]))
    assert hook.type is WebhookType.PAYMENT_DECLINED


def test_decline_rate_is_a_share_of_new_charges(http, sandbox):
    sandbox.set_knobs(decline_rate=0.5, rate_limit_per_s=1_000_000)
    statuses = [charge(http).status_code for _ in range(200)]
    time.sleep(1.05)  # let these charges leave the default limit's window
    assert set(statuses) == {201, 402}
    assert 60 <= statuses.count(402) <= 140  # binomial(200, .5): 7 sigma either way


# --- the common knobs ----------------------------------------------------------


def test_knobs_are_shown_and_changed_together(http):
    assert http.get("/knobs").json() == DEFAULT_PAYMENT_KNOBS
    changed = http.put("/knobs", json={"webhook_duplicates": 3, "refunds_down": True})
    assert changed.status_code == 200
    assert changed.json() == DEFAULT_PAYMENT_KNOBS | {
        "webhook_duplicates": 3,
        "refunds_down": True,
    }


@pytest.mark.parametrize(
    "change",
    [{"no_such_knob": 1}, {"decline_rate": 1.5}, {"decline_rate": "0.3"},
     {"webhook_duplicates": -1}, {"webhook_duplicates": 11},
     {"webhook_duplicates": 0.5}, {"webhook_out_of_order": 1},
     {"refunds_down": "yes"}, {"webhook_delay_ms": -1}, {"settle_delay_ms": 1e30},
     ["down"]],
)  # fmt: skip
def test_bad_knobs_are_422_and_nothing_changes(http, change):
    refused = http.put("/knobs", json=change)
    assert refused.status_code == 422
    assert refused.headers["content-type"] == "application/problem+json"
    assert http.get("/knobs").json() == DEFAULT_PAYMENT_KNOBS


def test_malformed_knobs_are_400(http):
    assert http.put("/knobs", content=b"{decline").status_code == 400


def test_knobs_are_taken_from_the_command_line():
    assert parse_knob_args(
        ["--decline-rate", "0.3", "--webhook-duplicates", "2", "--refunds-down",
         "--webhook-out-of-order", "--webhook-delay-ms", "500", "--drop-rate", "1"]
    ) == {
        "decline_rate": 0.3, "webhook_duplicates": 2, "refunds_down": True,
        "webhook_out_of_order": True, "webhook_delay_ms": 500, "drop_rate": 1.0,
    }  # fmt: skip
    assert parse_knob_args([]) == {}


@pytest.mark.parametrize(
    "argv",
    [["--decline-rate", "2"], ["--webhook-duplicates", "x"], ["--nope"],
     ["--webhook-url", "http://127.0.0.1:1/hook"],  # a URL without a secret
     ["--webhook-url", "ftp://x", "--webhook-secret", "s"]],
)  # fmt: skip
def test_bad_command_lines_exit_2_naming_the_fix(argv, tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "sandboxes.payment", "--data-dir",
         str(tmp_path), "--port", "1", *argv],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "error:" in done.stderr


def test_a_bad_start_up_knob_is_refused_before_anything_listens(tmp_path):
    with pytest.raises(KnobError, match="decline_rate"):
        create_app(tmp_path, {"decline_rate": 2})


def test_a_dropped_charge_was_captured_all_the_same(http, sandbox):
    sandbox.set_knobs(drop_rate=1.0, settle_delay_ms=0)
    key = str(uuid4())
    with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
        charge(http, key)
    sandbox.set_knobs(drop_rate=0.0)
    assert http.get(f"/payments/{key}").json()["status"] == "captured"


def test_down_refuses_every_provider_request_but_not_the_knobs(http, sandbox):
    sandbox.set_knobs(down=True)
    assert charge(http).status_code == 503
    assert http.get(f"/payments/{uuid4()}").status_code == 503
    assert refund(http, "pay_x", 1).status_code == 503
    assert http.get("/knobs").json()["down"] is True
    assert http.get("/payments").status_code == 200  # the dashboard stays readable
    sandbox.set_knobs(down=False)
    assert charge(http).status_code == 201


# --- hostile input ---------------------------------------------------------------

KEYED = {"Idempotency-Key": "k"}


@pytest.mark.parametrize(
    ("path", "headers", "body", "status"),
    [
        ("/payments", {}, CHARGE, 400),  # no Idempotency-Key
        ("/payments", {"Idempotency-Key": "k" * 256}, CHARGE, 400),
        ("/payments", {"Idempotency-Key": "has space"}, CHARGE, 400),
        ("/payments", KEYED, b'{"reference": "p", ', 400),  # malformed JSON
        ("/payments", KEYED, b'{"reference": "p\x00"}', 400),  # raw NUL
        ("/payments", KEYED, b"\xff\xfe", 400),  # not UTF-8
        ("/payments", KEYED, b"[" * 100_000, 400),  # nesting bomb
        (
            "/payments",
            KEYED,
            b'{"reference":"p","amount_cents":' + b"9" * 5000 + b"}",
            400,
        ),  # an int() too long to parse
        ("/payments", KEYED, CHARGE | {"amount_cents": 10**30}, 422),
        ("/payments", KEYED, CHARGE | {"amount_cents": -1500}, 422),
        ("/payments", KEYED, CHARGE | {"amount_cents": 0}, 422),
        ("/payments", KEYED, CHARGE | {"amount_cents": 15.5}, 422),
        ("/payments", KEYED, CHARGE | {"amount_cents": "1500"}, 422),
        ("/payments", KEYED, CHARGE | {"amount_cents": True}, 422),
        ("/payments", KEYED, CHARGE | {"reference": "a\u0000b"}, 422),
        ("/payments", KEYED, CHARGE | {"reference": "a\r\nb"}, 422),
        ("/payments", KEYED, CHARGE | {"reference": "r" * 256}, 422),
        ("/payments", KEYED, CHARGE | {"reference": ""}, 422),
        ("/payments", KEYED, CHARGE | {"currency": "XXX"}, 422),
        ("/payments", KEYED, [CHARGE], 422),
        ("/payments", KEYED, b'{"reference":"\\ud800","amount_cents":1}', 422),
        ("/payments", KEYED, b"x" * (2 * 1024 * 1024), 413),
        ("/refunds", {}, {"payment_id": "p", "amount_cents": 1}, 400),
        ("/refunds", KEYED, b"{", 400),
        ("/refunds", KEYED, {"payment_id": "p", "amount_cents": -1}, 422),
        ("/refunds", KEYED, {"payment_id": "p", "amount_cents": 10**30}, 422),
        ("/refunds", KEYED, {"payment_id": "p\u0000", "amount_cents": 1}, 422),
        ("/refunds", KEYED, {"payment_id": 7, "amount_cents": 1}, 422),
    ],
)
def test_bad_requests_are_4xx_problems_and_accept_nothing(
    http, path, headers, body, status
):
    before = http.get("/payments").json()["total"]
    if isinstance(body, bytes):
        answer = http.post(path, content=body, headers=headers)
    else:
        answer = http.post(path, json=body, headers=headers)
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["detail"]
    assert http.get("/payments").json()["total"] == before


@pytest.mark.parametrize("key", ["k" * 256, "has space", "nul%00"])
def test_a_bad_lookup_key_is_400(http, key):
    for path in ("/payments/", "/refunds/"):
        answer = http.get(path + key)
        assert answer.status_code == 400, answer.text
        assert answer.headers["content-type"] == "application/problem+json"


class TestPaymentSandbox(SandboxContract):
    resource = "/payments"
    other_body = CHARGE | {"amount_cents": 1}
    limited = (3, 2)

    def accept(self, http, key=None, body=None):
        return charge(http, key, body)


def test_every_webhook_body_is_json_the_port_reads(http, receiver):
    # A guard on the whole run above: nothing the sandbox sent is unreadable.
    for got in list(receiver.received):
        Webhook.from_json(got.body)
        assert verify_signature(SECRET, got.body, got.signature)
        assert json.loads(got.body)["id"].startswith("evt_")
    assert SIGNATURE_HEADER == "Club-Signature"


def test_a_webhook_is_given_up_after_bounded_attempts(tmp_path, receiver):
    sandbox = PaymentSandbox(tmp_path, {"settle_delay_ms": 0}, time.time)
    paid = sandbox.charge({}, read_charge("bounded", json.dumps(CHARGE).encode()))
    payment_id = json.loads(paid.body)["id"]
    sender = WebhookSender(
        sandbox, receiver.url, SECRET, max_attempts=3, first_backoff_s=0.05
    )

    async def run_until_given_up() -> dict[str, object]:
        task = asyncio.create_task(sender.run())
        try:
            for _ in range(200):
                [entry] = sandbox.store.outbox.log(1)
                if entry["gave_up_at"] is not None:
                    await asyncio.sleep(0.5)  # would a fourth attempt come?
                    return sandbox.store.outbox.log(1)[0]
                await asyncio.sleep(0.05)
            raise AssertionError("never gave up")
        finally:
            task.cancel()

    receiver.status = 500
    try:
        entry = asyncio.run(run_until_given_up())
    finally:
        receiver.status = 200
        sandbox.store.close()
    assert entry["attempts"] == 3
    assert entry["last_error"] == "answered 500"
    assert len(webhooks_for(receiver, payment_id)) == 3


def test_the_rate_limit_holds_across_a_restart(tmp_path):
    def at_once() -> float:
        return 1_800_000_000.0  # every acceptance in the same second

    def charge_in(sandbox: PaymentSandbox) -> int:
        wanted = read_charge(str(uuid4()), json.dumps(CHARGE).encode())
        return sandbox.charge({}, wanted).status_code

    first = PaymentSandbox(tmp_path, {"rate_limit_per_s": 2}, at_once)
    assert [charge_in(first), charge_in(first)] == [201, 201]
    first.store.close()
    restarted = PaymentSandbox(tmp_path, {"rate_limit_per_s": 2}, at_once)
    try:
        assert charge_in(restarted) == 429
    finally:
        restarted.store.close()


def test_an_undelivered_webhook_survives_a_killed_sandbox(receiver):
    process = PaymentSandboxProcess(
        scratch_dir("club-payment-outbox-") / "data", "--settle-delay-ms", "0",
        webhook_url=receiver.url,
    )  # fmt: skip
    receiver.status = 503  # Club is down: the webhook stays owed
    process.start()
    try:
        paid = httpx.post(
            f"{process.url}/payments", json=CHARGE, headers={"Idempotency-Key": "o"}
        ).json()
        eventually(lambda: webhooks_for(receiver, paid["id"]), timeout=10)
        process.kill()
        tries_before = len(webhooks_for(receiver, paid["id"]))
        receiver.status = 200
        process.start()

        def delivered_after_restart() -> bool:
            [entry] = httpx.get(f"{process.url}/webhooks").json()["webhooks"]
            return entry["delivered_at"] is not None

        eventually(delivered_after_restart, timeout=15)
        tries = webhooks_for(receiver, paid["id"])
        assert len(tries) > tries_before  # sent again by the restarted process
        assert len({w.event_id for w in tries}) == 1  # the same event, owed
    finally:
        receiver.status = 200
        process.stop()


def test_decline_every_declines_exactly_every_nth_new_charge(http, sandbox):
    sandbox.set_knobs(decline_every=3, rate_limit_per_s=1_000_000)
    statuses = [charge(http).status_code for _ in range(12)]
    sandbox.set_knobs(decline_every=0)
    time.sleep(1.05)  # let these charges leave the default limit's window
    declined = [i for i, status in enumerate(statuses) if status == 402]
    assert len(declined) == 4  # 12 new charges, every third
    assert [b - a for a, b in itertools.pairwise(declined)] == [3, 3, 3]
