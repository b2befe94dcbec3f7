"""The in-memory adapters keep the ports' contracts."""

from __future__ import annotations

import pytest

from adapters.memory.answers import InMemoryAnswerStore
from adapters.memory.notifications import InMemoryNotificationStore
from adapters.memory.students import InMemoryStudentDirectory
from tests.ports.answer_store import AnswerStoreContract
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


class TestInMemoryNotificationStore(NotificationStoreContract):
    @pytest.fixture
    def store(self) -> InMemoryNotificationStore:
        return InMemoryNotificationStore()
