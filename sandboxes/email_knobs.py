"""The e-mail sandbox's knobs: how a provider misbehaves (slow, failing, dropping
answers, rate limited, down). Apart from the sandbox, so `club` reads them without
importing the web framework the sandbox runs on."""

from __future__ import annotations

from sandboxes.knobs import Knob

EMAIL_KNOBS = (
    Knob(name="latency_ms", default=0, low=0, high=600_000,
         help="every provider answer waits this long"),
    Knob(name="fail_rate", default=0.0, low=0, high=1,
         help="share of sends answered fail_status without accepting"),
    Knob(name="fail_status", default=503, low=400, high=599,
         help="status of those failures (400 makes them permanent)"),
    Knob(name="drop_rate", default=0.0, low=0, high=1,
         help="share of sends accepted, then answered by closing the connection"),
    Knob(name="rate_limit_per_s", default=100, low=1, high=1_000_000,
         help="accepted sends per second; above it 429 with Retry-After"),
    Knob(name="down", default=False, help="every provider request is answered 503"),
)  # fmt: skip
