"""Callers for the tests: tokens signed with the suite's own secret, the way an
identity provider would issue them, so tests act through tokens as clients do."""

from __future__ import annotations

from adapters.identity.tokens import SharedSecret, TokenVerifier, sign

# What every test server verifies (CLUB_AUTH_SECRET in the roles' environment).
TEST_AUTH_SECRET = "club-test-auth-secret-0123456789abcdef"  # noqa: S105 - tests only
VERIFIER = TokenVerifier(keys=SharedSecret(TEST_AUTH_SECRET.encode()))
TEACHER = "teacher-1"  # who schedules the tests' lessons


def token(sub: str, *roles: str, ttl_s: float = 7 * 86_400) -> str:
    """Valid for a week: tokens made when the tests load must outlast the suite."""
    return sign(TEST_AUTH_SECRET.encode(), sub=sub, roles=roles, ttl_s=ttl_s)


def as_caller(sub: str, *roles: str) -> dict[str, str]:
    """The Authorization header of `sub` holding `roles`."""
    return {"Authorization": f"Bearer {token(sub, *roles)}"}


def as_student(student_id: str) -> dict[str, str]:
    return as_caller(student_id, "student")


def as_teacher(teacher_id: str = TEACHER) -> dict[str, str]:
    return as_caller(teacher_id, "teacher")


ADMIN = as_caller(
    "admin-1", "admin"
)  # what a test acts as when the role is not its point
