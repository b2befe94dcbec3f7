"""The payment sandbox's webhook sender: settles what is due, then POSTs each queued
webhook, signed, to Club until it answers 2xx.

Like a real provider it retries with exponential backoff and jitter, and gives up
after `MAX_ATTEMPTS` (about ten minutes), recording why: the receiver must also be
able to ask (`GET /payments/{key}`). It reads the queue from SQLite, so a restarted
sandbox goes on where it stopped. The knobs make it misbehave on purpose: duplicates
(each delivered webhook sent again, same event id) and out-of-order delivery (a
webhook is held until a later one is due, then the later goes first).
"""

from __future__ import annotations

import asyncio
import logging
import random

import httpx

from application.backoff import BackoffPolicy, Jitter
from application.payment import SIGNATURE_HEADER, sign
from sandboxes.payment_outbox import QueuedWebhook
from sandboxes.payment_provider import PaymentSandbox

TICK_S = 0.05
MAX_ATTEMPTS = 12
FIRST_BACKOFF_S = 0.25
MAX_BACKOFF_S = 120.0
OUT_OF_ORDER_HOLD_S = 2.0  # the longest a lone webhook waits for one to overtake it
SEND_TIMEOUT_S = 5.0

log = logging.getLogger(__name__)


class WebhookSender:
    def __init__(
        self, sandbox: PaymentSandbox, url: str | None, secret: str, *,
        max_attempts: int = MAX_ATTEMPTS, first_backoff_s: float = FIRST_BACKOFF_S,
    ) -> None:  # fmt: skip
        self._max_attempts = max_attempts
        self._first_backoff_s = first_backoff_s
        self._sandbox = sandbox
        self._url = url
        self._secret = secret
        self._jitter = random.Random()  # noqa: S311 - spreading retries, not secrets

    async def run(self) -> None:
        """Until cancelled; a failure of one round is logged, never the end."""
        async with httpx.AsyncClient(timeout=SEND_TIMEOUT_S) as client:
            while True:
                try:
                    self._sandbox.settle_due()
                    if self._url is not None:
                        await self._deliver_due(client, self._url)
                except Exception:  # a sandbox keeps serving; the log says what broke
                    log.exception("webhook round failed")
                await asyncio.sleep(TICK_S)

    async def _deliver_due(self, client: httpx.AsyncClient, url: str) -> None:
        now = self._sandbox.clock()
        due = self._sandbox.store.outbox.due(now)
        if self._sandbox.knobs["webhook_out_of_order"] and due:
            fresh = [w for w in due if w.attempts == 0]
            if len(fresh) == 1 and now - fresh[0].created_at < OUT_OF_ORDER_HOLD_S:
                due = [w for w in due if w.attempts > 0]  # wait to be overtaken
            due.reverse()
        for webhook in due:
            await self._deliver(client, url, webhook)

    async def _deliver(
        self, client: httpx.AsyncClient, url: str, webhook: QueuedWebhook
    ) -> None:
        outbox, clock = self._sandbox.store.outbox, self._sandbox.clock
        error = await self._post(client, url, webhook.body)
        if error is None:
            outbox.delivered(webhook.seq, clock())
            for _ in range(self._sandbox.knobs["webhook_duplicates"]):
                await self._post(client, url, webhook.body)  # best effort, as sent
            return
        attempts = webhook.attempts + 1
        retry_at = None
        if attempts < self._max_attempts:
            backoff = BackoffPolicy(
                first=self._first_backoff_s, cap=MAX_BACKOFF_S, jitter=Jitter.EQUAL
            )
            retry_at = clock() + backoff.delay(attempts, self._jitter)
        outbox.failed(webhook.seq, error, retry_at, clock())

    async def _post(
        self, client: httpx.AsyncClient, url: str, body: bytes
    ) -> str | None:
        """None when the receiver answered 2xx, else what went wrong."""
        headers = {
            "Content-Type": "application/json",
            SIGNATURE_HEADER: sign(self._secret, body, int(self._sandbox.clock())),
        }
        try:
            answer = await client.post(url, content=body, headers=headers)
        except httpx.HTTPError as error:
            return f"{type(error).__name__}: {error}"
        if answer.is_success:
            return None
        return f"answered {answer.status_code}"
