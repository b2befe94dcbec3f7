"""The lean lane takes the bearer token by the rules of FastAPI's HTTPBearer (the
generic lane's), without the model HTTPBearer builds for each request."""

from __future__ import annotations

import asyncio

from hypothesis import given
from hypothesis import strategies as st
from starlette.requests import Request

from entrypoints.http.auth import _BEARER, bearer_token


def _generic(authorization: str | None) -> str | None:
    headers = (
        []
        if authorization is None
        else [(b"authorization", authorization.encode("latin-1"))]
    )
    request = Request({"type": "http", "headers": headers})
    taken = asyncio.run(_BEARER(request))
    return None if taken is None else taken.credentials


HEADERS = [
    None, "", "Bearer", "Bearer ", "Bearer t0k.en", "bearer t0k.en", "BEARER x",
    "Basic YW5uOnB3", "Bearer  two-spaces", "Bearer a b", " Bearer x", "Token x",
]  # fmt: skip


def test_each_known_shape_is_taken_as_the_generic_lane_takes_it() -> None:
    for authorization in HEADERS:
        assert bearer_token(authorization) == _generic(authorization), authorization
    assert bearer_token("bearer t0k.en") == "t0k.en"
    assert bearer_token("Basic YW5uOnB3") is None


@given(
    st.one_of(
        st.none(),
        st.text(alphabet=st.characters(max_codepoint=255), max_size=40),
        st.builds(
            "{} {}".format,
            st.sampled_from(["Bearer", "bearer", "Basic", ""]),
            st.text(alphabet=st.characters(max_codepoint=255), max_size=20),
        ),
    )
)
def test_any_header_is_taken_as_the_generic_lane_takes_it(
    authorization: str | None,
) -> None:
    assert bearer_token(authorization) == _generic(authorization)
