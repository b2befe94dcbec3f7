"""The payment sandbox as a real process, and a real HTTP server that receives its
webhooks: tests start, SIGKILL and restart the one and read what the other got."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import attrs

from sandboxes.payment_knobs import PAYMENT_KNOBS
from tests.integration.sandbox_process import SandboxProcess

DEFAULT_PAYMENT_KNOBS = {knob.name: knob.default for knob in PAYMENT_KNOBS}
SECRET = "whsec_test_0123456789"  # noqa: S105 - a test secret


class PaymentSandboxProcess(SandboxProcess):
    module = "sandboxes.payment"
    default_knobs = DEFAULT_PAYMENT_KNOBS
    listing = "payments"

    def __init__(
        self, data_dir: Path, *knob_args: str, webhook_url: str | None = None
    ) -> None:
        super().__init__(data_dir, *knob_args)
        self.webhook_url = webhook_url

    def extra_args(self) -> list[str]:
        if not self.webhook_url:
            return []
        return ["--webhook-url", self.webhook_url, "--webhook-secret", SECRET]


@attrs.frozen
class Received:
    body: bytes
    signature: str | None


class WebhookReceiver:
    """Club's side of the webhook, kept minimal: it records every POST and answers
    `status` (200 unless a test makes it fail)."""

    def __init__(self) -> None:
        self.received: list[Received] = []
        self.status = 200
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                receiver.received.append(
                    Received(body, self.headers.get("Club-Signature"))
                )
                self.send_response(receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/webhooks/payment"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
