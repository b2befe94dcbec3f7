"""The notifier's lesson lookup on the Club event store: a lesson's title and
start, read once per lesson."""

from __future__ import annotations

import functools
from collections.abc import Callable
from uuid import UUID

from application.club import ClubApplication
from application.notifications import LessonFacts

# Lessons whose facts a notifications worker keeps: a few KiB.
LESSON_FACTS_CACHED = 1024


def lesson_facts_from(app: ClubApplication) -> Callable[[UUID], LessonFacts]:
    """A lesson's title and start are fixed when it is scheduled (no event changes
    them), so they are read once: loading the lesson copies its whole seat map,
    which made each e-mail of a big lesson dearer than the one before."""

    @functools.lru_cache(maxsize=LESSON_FACTS_CACHED)
    def lesson_facts(lesson_id: UUID) -> LessonFacts:
        lesson = app.get_lesson(lesson_id)
        return LessonFacts(title=lesson.title, starts_at=lesson.starts_at)

    return lesson_facts
