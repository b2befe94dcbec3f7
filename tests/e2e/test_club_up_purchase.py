"""Under `club up` a paid purchase completes on its own: the supervisor starts the
saga and the payment sandbox, and gives the sandbox and the API one generated
webhook secret (none is set here)."""

from __future__ import annotations

import httpx

from adapters.embedded.process import free_port
from tests.api_client import ClubClient
from tests.e2e.test_club_up import club_up, ctrl_c, started, up_log
from tests.identity import ADMIN
from tests.servers import scratch_dir
from tests.stack import eventually


def first_purchase(api: str, key: str, email: str | None = None) -> httpx.Response:
    """A new student's purchase of a seat in a new paid lesson, asked again (same
    key) until the roles `club up` starts are there to hold the seat."""
    with ClubClient(api, timeout=10) as club:
        lesson_id = club.paid_lesson(capacity=2, price_cents=4900)
        student_id = club.student(email=email)

        def reserved() -> httpx.Response | None:
            answer = club.reserve(lesson_id, student_id, key)
            return answer if answer.status_code == 201 else None

        return eventually(reserved, timeout=30, interval=0.5)


def test_a_purchase_completes_on_its_own_under_club_up() -> None:
    data_dir = scratch_dir("club-up-purchase-") / "data"
    provider = f"http://127.0.0.1:{free_port()}"
    with club_up(
        data_dir,
        free_port(),
        CLUB_PAYMENT_PROVIDER_URL=provider,
        CLUB_PAYMENT_WEBHOOK_SECRET="",  # the supervisor makes one
    ) as (api, proc):
        started(proc, lambda argv: argv[-1:] == ["saga"])
        started(proc, lambda argv: argv[-2:] == ["sandbox", "payment"])
        purchase = first_purchase(api, "first-purchase").json()
        path = f"{api}/purchases/{purchase['purchase_id']}"
        seen: list[dict[str, object]] = []

        def confirmed() -> dict[str, object] | None:
            seen.append(httpx.get(path, timeout=5, headers=ADMIN).json())
            return seen[-1] if seen[-1]["status"] == "confirmed" else None

        try:
            done = eventually(confirmed, timeout=60)
        except AssertionError:  # say where it stood, and what the saga logged
            raise AssertionError(
                f"not confirmed within 60 s; last: {seen[-1:]}\n"
                + _lines_about_payments(up_log(data_dir))
            ) from None
        assert done["enrollment_id"] is not None
        # The webhook reached the API signed with the generated secret: accepted.
        wait = httpx.get(f"{provider}/webhooks", timeout=5).json()
        delivered = [w for w in wait["webhooks"] if w["delivered_at"] is not None]
        assert delivered, wait
        assert all(w["last_error"] is None for w in delivered), wait
        ctrl_c(proc)


def _lines_about_payments(log: str) -> str:
    """The supervisor's log lines of the saga, the payment sandbox and webhooks."""
    words = ("saga", "payment", "webhook", "purchase")
    return "\n".join(line for line in log.splitlines() if any(w in line for w in words))
