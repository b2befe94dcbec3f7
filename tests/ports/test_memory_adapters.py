"""The in-memory adapters keep the ports' contracts."""

from __future__ import annotations

import pytest

from adapters.memory.answers import InMemoryAnswerStore
from adapters.memory.notifications import InMemoryNotificationStore
from adapters.memory.students import InMemoryStudentDirectory
from application.club_store import OneByOne
from tests.ports.answer_store import AnswerStoreContract
from tests.ports.enrollment_lookups import EnrollmentLookupsContract, Stores
from tests.ports.notification_store import NotificationStoreContract
from tests.ports.student_directory import StudentDirectoryContract


class TestInMemoryStudentDirectory(StudentDirectoryContract):
    @pytest.fixture
    def directory(self) -> InMemoryStudentDirectory:
        return InMemoryStudentDirectory()


class TestInMemoryAnswerStore(AnswerStoreContract):
    @pytest.fixture
    def store(self) -> InMemoryAnswerStore:
        return InMemoryAnswerStore()


class TestOneByOneOverMemory(EnrollmentLookupsContract):
    @pytest.fixture
    def stores(self) -> Stores:
        answers, directory = InMemoryAnswerStore(), InMemoryStudentDirectory()
        return Stores(OneByOne(answers, directory), answers, directory)


class TestInMemoryNotificationStore(NotificationStoreContract):
    @pytest.fixture
    def store(self) -> InMemoryNotificationStore:
        return InMemoryNotificationStore()
