"""The payment sandbox's knobs: the e-mail sandbox's common ones, plus the ways a
payment provider misbehaves (declines, late, repeated or reordered webhooks, a
refund endpoint that is down) and how long a payment takes to settle."""

from __future__ import annotations

from sandboxes.knobs import Knob

PAYMENT_KNOBS = (
    Knob(name="latency_ms", default=0, low=0, high=600_000,
         help="every provider answer waits this long"),
    Knob(name="fail_rate", default=0.0, low=0, high=1,
         help="share of charges and refunds answered fail_status, accepting nothing"),
    Knob(name="fail_status", default=503, low=400, high=599,
         help="status of those failures (400 makes them permanent)"),
    Knob(name="drop_rate", default=0.0, low=0, high=1,
         help="share of charges and refunds accepted, then answered by closing the "
              "connection (captured, but the response is lost)"),
    Knob(name="rate_limit_per_s", default=100, low=1, high=1_000_000,
         help="new charges and refunds per second; above it 429 with Retry-After"),
    Knob(name="down", default=False, help="every provider request is answered 503"),
    Knob(name="decline_rate", default=0.0, low=0, high=1,
         help="share of new charges declined (402, and a payment.declined webhook)"),
    Knob(name="decline_every", default=0, low=0, high=1_000_000,
         help="also decline every Nth new charge (0: none): declines a test counts on"),
    Knob(name="settle_delay_ms", default=200, low=0, high=3_600_000,
         help="a charge or refund answers pending and settles this much later "
              "(0: at once)"),
    Knob(name="webhook_delay_ms", default=0, low=0, high=3_600_000,
         help="each webhook is sent this long after its event (late webhooks)"),
    Knob(name="webhook_duplicates", default=0, low=0, high=10,
         help="send each delivered webhook this many extra times"),
    Knob(name="webhook_out_of_order", default=False,
         help="hold each webhook until a later one is due, then send the later first"),
    Knob(name="refunds_down", default=False,
         help="the refund endpoints answer 503; charges still work"),
    Knob(name="hostile_id_length", default=0, low=0, high=10_000,
         help="new payments get ids of this many characters (at least 38), with "
              "a space and non-ASCII letters (0: pay_<hex>)"),
)  # fmt: skip
