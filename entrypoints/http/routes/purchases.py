"""Purchases: hold a seat for a paid lesson (required key), read where it stands,
consent to another lesson for a payment that came too late."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from application.idempotency import (
    Answer,
    AnswerFor,
    replay,
    request_id,
)
from application.idempotency import Request as KeyedRequest
from application.identity import may_act_for_student, may_read_own
from application.purchase_view import PurchaseView
from domain.errors import NoAlternativeOfferedError
from domain.purchase import Status
from domain.student import check_student_id
from entrypoints.http.api_docs import links, merged, problems
from entrypoints.http.auth import CallerDep
from entrypoints.http.deps import ContainerDep, RequiredIdempotencyKey
from entrypoints.http.idempotent import run_once
from entrypoints.http.schemas import AlternativeIn, PurchaseIn, PurchaseOut

router = APIRouter()
DEFAULT_HOLD_SECONDS = 900

PURCHASE_ID = "$response.body#/purchase_id"
PURCHASE_LINKS = links(
    GetPurchase=("get_purchase", {"purchase_id": PURCHASE_ID}),
    AcceptAlternative=("accept_alternative", {"purchase_id": PURCHASE_ID}),
)


@router.post(
    "/lessons/{lesson_id}/purchases",
    status_code=201,
    operation_id="reserve_purchase",
    response_model=PurchaseOut,
    responses=merged(
        {201: PURCHASE_LINKS}, problems(400, 401, 403, 404, 409, 413, 422, 503)
    ),
)
def post_purchase(
    lesson_id: UUID,
    body: PurchaseIn,
    request: Request,
    *,
    container: ContainerDep,
    caller: CallerDep,
    key: RequiredIdempotencyKey,
) -> Response:
    may_act_for_student(caller, body.student_id)  # a seat for itself only
    student_id = check_student_id(body.student_id)
    hold_seconds = getattr(request.app.state, "hold_seconds", DEFAULT_HOLD_SECONDS)
    answers = container.app.answers
    deadlines = container.deadlines

    def reserve_once(keyed: KeyedRequest, answer_for: AnswerFor) -> Answer:
        """The purchase's id comes from the key, so a retry finds what the first
        attempt committed; its answer is stored after, for the replay."""
        assert answers is not None  # noqa: S101 - the API's container has one
        recorded = answers.find([keyed]).get(request_id(keyed))
        if recorded is not None:
            return replay(keyed, recorded)
        outcome: object
        try:
            outcome = container.app.reserve_purchase(
                lesson_id=lesson_id,
                student_id=student_id,
                request_id=key,
                now=datetime.now(UTC),
                hold_seconds=hold_seconds,
            )
        except Exception as error:  # a rule's answer, or re-raised below
            outcome = error
        if isinstance(outcome, PurchaseView):
            # Wake the saga at once; its log feed would find the purchase anyway.
            deadlines.nudge_now([outcome.purchase_id])
        answer = answer_for(outcome)
        if answer is None:
            if isinstance(outcome, BaseException):
                raise outcome
            raise RuntimeError("a reservation must have an answer")
        stored = answers.record([(keyed, answer)])
        return replay(keyed, stored[request_id(keyed)])

    return run_once(request, key, body.model_dump(mode="json"), reserve_once, created)


@router.get(
    "/purchases/{purchase_id}",
    operation_id="get_purchase",
    responses=problems(401, 404, 422, 503),
)
def get_purchase(
    purchase_id: UUID, container: ContainerDep, caller: CallerDep
) -> PurchaseOut:
    view = container.app.view_purchase(purchase_id)
    may_read_own(caller, view.student_id, "purchase", purchase_id)
    return purchase_out(view)


@router.post(
    "/purchases/{purchase_id}/alternative",
    operation_id="accept_alternative",
    responses=problems(401, 404, 409, 413, 422, 503),
)
def post_alternative(
    purchase_id: UUID,
    body: AlternativeIn,
    container: ContainerDep,
    caller: CallerDep,
) -> PurchaseOut:
    """The student's consent: the late payment buys a new seat in `lesson_id`
    (never an added one: a full lesson answers 409 and the offer stands)."""
    current = container.app.get_purchase(purchase_id)
    may_read_own(caller, current.student_id, "purchase", purchase_id)
    if current.status is not Status.ALTERNATIVE_OFFERED and (
        current.alternative_purchase_id is None
    ):
        # Named before the use case's price check, which would otherwise compare
        # the lesson's price with a payment that never came.
        msg = f"purchase {purchase_id} is {current.status}: no alternative is on offer"
        raise NoAlternativeOfferedError(msg)
    view = container.app.accept_alternative(
        purchase_id, lesson_id=body.lesson_id, now=datetime.now(UTC)
    )
    if view.alternative_purchase_id is not None:
        container.deadlines.nudge_now([purchase_id, view.alternative_purchase_id])
    return purchase_out(view)


def created(view: object) -> JSONResponse:
    assert isinstance(view, PurchaseView)  # noqa: S101 - the use case's result
    body = purchase_out(view).model_dump(mode="json")
    location = f"/purchases/{view.purchase_id}"
    return JSONResponse(body, status_code=201, headers={"Location": location})


def purchase_out(view: PurchaseView) -> PurchaseOut:
    return PurchaseOut(
        purchase_id=view.purchase_id,
        lesson_id=view.lesson_id,
        student_id=view.student_id,
        status=view.status,
        price_cents=view.price_cents,
        hold_expires_at=view.hold_expires_at,
        seat_held=view.seat_held,
        payment_open=view.payment_open,
        payment_id=view.payment_id,
        enrollment_id=view.enrollment_id,
        checks=view.checks,
        next_check_at=view.next_check_at,
        refund_state=view.refund_state,
        review_reason=view.review_reason,
        review_owner=view.review_owner,
        offer_expires_at=view.offer_expires_at,
        alternative_purchase_id=view.alternative_purchase_id,
        next_step=view.next_step,
        version=view.version,
    )
