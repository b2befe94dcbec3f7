"""What every `EnrollmentLookups` must do; each adapter's test subclasses this."""

from __future__ import annotations

import attrs

from application.idempotency import Answer, Recorded, Request
from application.ports import AnswerStore, EnrollmentLookups, StudentDirectory
from domain.student import StudentProfile

ASKED = Request(scope="POST /x", key="k-1", fingerprint="f-1")
CREATED = Answer(status_code=201, body={"id": [1, "é"]}, headers={"location": "/x/1"})


@attrs.frozen
class Stores:
    """The lookups, and the two stores whose rows they read."""

    lookups: EnrollmentLookups
    answers: AnswerStore
    directory: StudentDirectory


def ann(directory: StudentDirectory) -> None:
    directory.save(StudentProfile.create(student_id="ann", email="a@b.org", name="A"))


class EnrollmentLookupsContract:
    """Not collected itself (no `Test` prefix); subclasses provide `stores`."""

    def test_nothing_answered_nobody_known(self, stores: Stores) -> None:
        assert stores.lookups.key_and_student(ASKED, "ann") == (None, False)

    def test_a_saved_student_is_known(self, stores: Stores) -> None:
        ann(stores.directory)
        assert stores.lookups.key_and_student(ASKED, "ann") == (None, True)
        assert stores.lookups.key_and_student(ASKED, "bo") == (None, False)

    def test_a_recorded_answer_is_found_whoever_asks(self, stores: Stores) -> None:
        stores.answers.record([(ASKED, CREATED)])
        expected = Recorded(fingerprint="f-1", answer=CREATED)
        assert stores.lookups.key_and_student(ASKED, "bo") == (expected, False)
        ann(stores.directory)
        assert stores.lookups.key_and_student(ASKED, "ann") == (expected, True)

    def test_only_the_same_route_and_key_are_found(self, stores: Stores) -> None:
        stores.answers.record([(ASKED, CREATED)])
        for other in (
            Request(scope="POST /y", key="k-1", fingerprint="f-1"),
            Request(scope="POST /x", key="k-2", fingerprint="f-1"),
        ):
            assert stores.lookups.key_and_student(other, "ann") == (None, False)
