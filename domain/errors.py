"""One error per business rule, so callers can map each to a precise answer."""


class DomainError(Exception):
    """A business rule refused the command; nothing was recorded."""


class InvalidLessonError(DomainError):
    """A lesson's title, capacity, start or price is out of bounds."""


class LessonFullError(DomainError):
    """Every seat of the lesson is taken."""


class AlreadyEnrolledError(DomainError):
    """The student already holds a seat in this lesson."""


class EnrollmentCancelledError(DomainError):
    """The enrollment was cancelled before; a cancelled seat stays released."""


class InvalidStudentProfileError(DomainError):
    """A student's id, email or name is malformed."""


class InvalidTextError(DomainError):
    """Text Club does not store: see domain/text.py for the rule and its reasons."""


class ControlCharacterError(InvalidTextError):
    """The text holds a control character (NUL included) or a line separator."""


class UnpairedSurrogateError(InvalidTextError):
    """The text holds half of a UTF-16 surrogate pair, which UTF-8 cannot encode."""


class TextLengthError(InvalidTextError):
    """The text is blank, or longer than its limit once normalised and trimmed."""
