"""Under `club up` a purchase that completes on its own sends its e-mails: the real
supervisor, saga, relay, notifications worker (as its own broker user, on the
widened filter) and both sandboxes — one e-mail per event that asks for one."""

from __future__ import annotations

import time
from uuid import uuid4

import httpx

from adapters.embedded.process import free_port
from tests.e2e.test_club_up import club_up, ctrl_c, started
from tests.e2e.test_club_up_purchase import first_purchase
from tests.identity import ADMIN
from tests.servers import scratch_dir
from tests.stack import eventually


def test_a_paid_seat_sends_payment_received_and_access_granted_once_each() -> None:
    data_dir = scratch_dir("club-up-purchase-mail-") / "data"
    payments = f"http://127.0.0.1:{free_port()}"
    mail = f"http://127.0.0.1:{free_port()}"
    with club_up(
        data_dir,
        free_port(),
        CLUB_PAYMENT_PROVIDER_URL=payments,
        CLUB_EMAIL_PROVIDER_URL=mail,
        CLUB_PAYMENT_WEBHOOK_SECRET="",  # the supervisor makes one
    ) as (api, proc):
        started(proc, lambda argv: argv[-1:] == ["saga"])
        started(proc, lambda argv: argv[-1:] == ["notifications"])
        address = f"s-{uuid4().hex[:10]}@example.org"
        purchase = first_purchase(api, "paid-seat", email=address).json()
        path = f"{api}/purchases/{purchase['purchase_id']}"
        eventually(
            lambda: (
                httpx.get(path, timeout=5, headers=ADMIN).json()["status"]
                == "confirmed"
            ),
            timeout=60,
        )

        def subjects() -> list[str]:
            listing = httpx.get(f"{mail}/messages", timeout=5).json()["messages"]
            return sorted(m["subject"] for m in listing if m["to"] == address)

        # Not "You are enrolled" as well: the bought seat's confirmation says it.
        expected = ["Payment received: Intensive", "Your seat is confirmed: Intensive"]
        eventually(lambda: subjects() == expected, timeout=60, interval=0.5)
        time.sleep(2)  # a duplicate sent late would show up here
        assert subjects() == expected
        ctrl_c(proc)
