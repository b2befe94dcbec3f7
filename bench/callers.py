"""Who the bench calls the API as (contract §4.1), the way clients will: each
student with its own bearer token, an admin where an admin would act.

Every API role the bench starts verifies HS256 tokens with `AUTH_SECRET`
(`AUTH_ENV` in its environment). Tokens are signed before the clock starts: a
client holds its token before it calls, and signing is the identity provider's
work, not the server's.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence

from adapters.identity.tokens import SharedSecret, TokenVerifier, sign

AUTH_SECRET = "club-bench-auth-secret-0123456789abcdef"  # noqa: S105 - bench only
AUTH_ENV = {"CLUB_AUTH_SECRET": AUTH_SECRET}
TTL_S = 12 * 3600  # longer than any bench run
ADMIN_SUB = "bench-admin"


def token(sub: str, *roles: str) -> str:
    return sign(AUTH_SECRET.encode(), sub=sub, roles=roles, ttl_s=TTL_S)


def authorization(sub: str, *roles: str) -> str:
    """The `Authorization` header's value for `sub` holding `roles`."""
    return f"Bearer {token(sub, *roles)}"


def students_authorizations(who: Sequence[str]) -> list[str]:
    """Each student's own `Authorization` value, in `who`'s order."""
    return [authorization(student_id, "student") for student_id in who]


def admin() -> dict[str, str]:
    return {"Authorization": authorization(ADMIN_SUB, "admin")}


def verification_us(calls: int = 5000, distinct: int = 100) -> float:
    """µs per `TokenVerifier.caller` (HS256, a student's token as the API gets
    it), the median of `calls` timed one by one, in this process."""
    verifier = TokenVerifier(keys=SharedSecret(AUTH_SECRET.encode()))
    tokens = [token(f"b-{i:010d}", "student") for i in range(distinct)]
    for t in tokens * 2:  # warm
        verifier.caller(t)
    each = []
    clock = time.perf_counter_ns
    for i in range(calls):
        t = tokens[i % distinct]
        began = clock()
        verifier.caller(t)
        each.append(clock() - began)
    return statistics.median(each) / 1000
