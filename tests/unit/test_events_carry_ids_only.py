"""Published events carry ids, times, amounts and a lesson's title: never a
student's address or name (docs/guarantees.md, "Personal data").

A new text field in a published event fails here until someone decides, in the
list below, that it can hold nothing personal."""

from __future__ import annotations

import typing
from collections.abc import Iterator

import pytest

import application.contracts.events
import application.contracts.purchase_events  # the types, as subclasses
from application.contracts.codec import PublishedContract
from domain.errors import InvalidStudentProfileError
from domain.student import check_student_id

# Each text field a published event may carry, and why it is not personal.
TEXT_FIELDS = {
    "student_id": "the caller's id for a student: letters, digits, '.', '_', '-'",
    "title": "a lesson's title",
    "payment_id": "the payment provider's id",
    "refund_id": "the payment provider's id",
    "decision": "refund, confirm or cancel: an operator's choice, never their words",
}
PERSONAL_WORDS = ("email", "mail", "name", "address", "phone", "recipient")


def published_types() -> Iterator[type[PublishedContract]]:
    def below(cls: type[PublishedContract]) -> Iterator[type[PublishedContract]]:
        for sub in cls.__subclasses__():
            yield sub
            yield from below(sub)

    yield from below(PublishedContract)


def fields_of(cls: type) -> dict[str, object]:
    hints = typing.get_type_hints(cls)
    return {
        name: hint
        for name, hint in hints.items()
        if typing.get_origin(hint) is not typing.ClassVar
    }


TYPES = {f"{cls.__name__}": cls for cls in published_types()}


def test_every_published_type_is_looked_at() -> None:
    assert {"EnrollmentConfirmedV2", "PurchaseReservedV1", "RefundedV1"} <= set(TYPES)
    assert application.contracts.events.READERS  # the module the types live in


@pytest.mark.parametrize("name", sorted(TYPES))
def test_a_published_event_has_no_personal_field(name: str) -> None:
    assert fields_of(TYPES[name]), f"{name} has no fields to check"
    assert undecided(TYPES[name]) == []


def test_the_check_sees_a_personal_field() -> None:
    class Leaky:
        student_id: str
        recipient_email: str | None
        student_name: str

    assert undecided(Leaky) == ["recipient_email", "student_name"]


def undecided(cls: type) -> list[str]:
    """The fields that may hold text or that sound personal, not in TEXT_FIELDS."""
    return sorted(
        field
        for field, hint in fields_of(cls).items()
        if field not in TEXT_FIELDS
        and (str in _types_in(hint) or any(w in field for w in PERSONAL_WORDS))
    )


def test_a_student_id_cannot_be_an_address() -> None:
    with pytest.raises(InvalidStudentProfileError):
        check_student_id("ann@example.org")


def _types_in(hint: object) -> set[object]:
    """`str | None` -> {str, NoneType}; a plain type -> {it}."""
    inner = typing.get_args(hint)
    return {hint} if not inner else {t for arg in inner for t in _types_in(arg)}
