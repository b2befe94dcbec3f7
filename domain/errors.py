"""One error per business rule, so callers can map each to a precise answer."""


class DomainError(Exception):
    """A business rule refused the command; nothing was recorded."""


class InvalidLessonError(DomainError):
    """A lesson's title, capacity, start or price is out of bounds."""


class LessonFullError(DomainError):
    """Every seat of the lesson is taken."""


class PaidLessonError(DomainError):
    """A paid lesson's seat is bought (a purchase), not taken by enrolling."""


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


class SeatNotHeldError(DomainError):
    """The purchase holds no seat in this lesson (released, expired or converted)."""


class InvalidPurchaseError(DomainError):
    """A purchase's price or hold is out of bounds (a free lesson needs no purchase)."""


class PurchaseStateError(DomainError):
    """The purchase is not in a state that allows this step; nothing was recorded."""


class NotAwaitingPaymentError(PurchaseStateError):
    """A payment step for a purchase that is not (or no longer) waiting for one."""


class PaymentStillCheckingError(PurchaseStateError):
    """The payment's outcome is unknown: the seat stays held until a check says."""


class HoldNotDueError(PurchaseStateError):
    """The hold has not reached its expiry time yet."""


class HoldNotActiveError(PurchaseStateError):
    """The purchase no longer holds its seat: it was released or converted."""


class NoCapturedPaymentError(PurchaseStateError):
    """Access, a refund or an alternative needs a captured payment first."""


class NotRefundableError(PurchaseStateError):
    """Only a captured payment that bought no seat is refunded."""


class RefundNotPendingError(PurchaseStateError):
    """A refund step for a purchase with no refund intent recorded."""


class StepNotDueError(PurchaseStateError):
    """The step's deadline moved since it was decided: another process took it."""


class NotInReviewError(PurchaseStateError):
    """Only a purchase waiting in manual review is settled by an operator."""


class ResolutionRefusedError(PurchaseStateError):
    """The decision does not fit what happened to the money (refund what was never
    captured, cancel what was); the message names the decision that fits."""


class NoAlternativeOfferedError(PurchaseStateError):
    """An alternative lesson is taken only while one is on offer."""


class PaymentMismatchError(DomainError):
    """A fact names another payment than the one the purchase recorded."""


class AlternativePriceError(DomainError):
    """The alternative lesson costs other than what the student paid."""
