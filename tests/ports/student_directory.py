"""What every `StudentDirectory` must do; each adapter's test subclasses this."""

from __future__ import annotations

from application.ports import StudentDirectory
from domain.student import StudentProfile


class StudentDirectoryContract:
    """Not collected itself (no `Test` prefix); subclasses provide `directory`."""

    def test_an_unknown_student_is_none(self, directory: StudentDirectory) -> None:
        assert directory.get("nobody") is None

    def test_a_saved_profile_is_found(self, directory: StudentDirectory) -> None:
        profile = StudentProfile.create(student_id="ann", email="a@b.org", name="Ann")
        directory.save(profile)
        assert directory.get("ann") == profile

    def test_saving_again_replaces_the_profile(
        self, directory: StudentDirectory
    ) -> None:
        directory.save(
            StudentProfile.create(student_id="bo", email="a@b.org", name="B")
        )
        moved = StudentProfile.create(student_id="bo", email="new@b.org", name="Bo")
        directory.save(moved)
        assert directory.get("bo") == moved
