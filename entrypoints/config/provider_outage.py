"""How the notifications work class waits out an e-mail provider that fails for
everyone: `CLUB_NOTIFY_GIVE_UP_AFTER`, `CLUB_NOTIFY_CIRCUIT_FAILURES`,
`CLUB_NOTIFY_PROBE_SECONDS` (README, "Configuration")."""

from __future__ import annotations

import math
from collections.abc import Mapping

import attrs

from application import retention
from application.provider_circuit import CircuitPolicy
from application.retention import RetentionError

GIVE_UP_AFTER = "CLUB_NOTIFY_GIVE_UP_AFTER"
FAILURES = "CLUB_NOTIFY_CIRCUIT_FAILURES"
PROBE = "CLUB_NOTIFY_PROBE_SECONDS"
# Half the provider's 24 h key lifetime: every resend of a message happens while
# the provider still knows its key, and a dead letter given up at 12 h can still
# be replayed for 12 h without being held back (docs/decisions/
# 2026-12-02-provider-circuit-in-postgresql.md).
DEFAULT_GIVE_UP_AFTER_S = 12 * 3600.0


class OutageSettingError(ValueError):
    """A setting of this module is malformed; the message names the fix."""


@attrs.frozen(kw_only=True)
class ProviderOutage:
    give_up_after_s: float = DEFAULT_GIVE_UP_AFTER_S
    circuit: CircuitPolicy = attrs.Factory(CircuitPolicy)


def provider_outage(env: Mapping[str, str], key_lifetime_s: float) -> ProviderOutage:
    try:
        give_up = retention.duration(
            GIVE_UP_AFTER, env.get(GIVE_UP_AFTER), DEFAULT_GIVE_UP_AFTER_S
        )
    except RetentionError as e:
        raise OutageSettingError(str(e)) from None
    if give_up >= key_lifetime_s:
        msg = (
            f"{GIVE_UP_AFTER}={retention.shown(give_up)} must be shorter than "
            f"CLUB_EMAIL_KEY_LIFETIME={retention.shown(key_lifetime_s)}: a resend "
            "after the provider forgot its key could send the e-mail twice; "
            f"set {GIVE_UP_AFTER} to half the key lifetime or less"
        )
        raise OutageSettingError(msg)
    base = CircuitPolicy()
    return ProviderOutage(
        give_up_after_s=give_up,
        circuit=CircuitPolicy(
            failures_to_open=int(_positive(env, FAILURES, base.failures_to_open)),
            probe_every_s=_positive(env, PROBE, base.probe_every_s),
        ),
    )


def _positive(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise OutageSettingError(f"{name}={raw!r} is not a number") from None
    if not 0 < value < math.inf or (name == FAILURES and value != int(value)):
        kind = "a whole number" if name == FAILURES else "a number"
        raise OutageSettingError(f"{name}={raw!r} must be {kind} above 0")
    return value
