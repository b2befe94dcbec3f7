"""What every `AnswerStore` must do; each adapter's test subclasses this."""

from __future__ import annotations

from application.idempotency import Answer, Recorded, Request
from application.ports import AnswerStore

FIRST = Request(scope="POST /x", key="k-1", fingerprint="f-1")
CREATED = Answer(status_code=201, body={"id": 1}, headers={"location": "/x/1"})
REFUSED = Answer(status_code=409, body={"type": "/problems/full"})


class AnswerStoreContract:
    """Not collected itself (no `Test` prefix); subclasses provide `store`."""

    def test_an_unanswered_request_is_not_found(self, store: AnswerStore) -> None:
        assert store.find([FIRST]) == {}

    def test_a_recorded_answer_is_found_with_its_fingerprint(
        self, store: AnswerStore
    ) -> None:
        recorded = store.record([(FIRST, CREATED)])
        expected = Recorded(fingerprint="f-1", answer=CREATED)
        assert recorded == {("POST /x", "k-1"): expected}
        assert store.find([FIRST]) == {("POST /x", "k-1"): expected}

    def test_the_first_answer_stays(self, store: AnswerStore) -> None:
        again = Request(scope="POST /x", key="k-2", fingerprint="f-2")
        store.record([(again, CREATED)])
        raced = Request(scope="POST /x", key="k-2", fingerprint="other")
        [kept] = store.record([(raced, REFUSED)]).values()
        assert kept == Recorded(fingerprint="f-2", answer=CREATED)

    def test_keys_of_other_routes_never_meet(self, store: AnswerStore) -> None:
        store.record([(Request(scope="POST /a", key="k", fingerprint="f"), CREATED)])
        other = Request(scope="POST /b", key="k", fingerprint="f")
        assert store.find([other]) == {}
