"""``/hooks/{token}``: signed webhooks in (no API key: the provider's signature)."""

from __future__ import annotations

from chalice import Response

from chalicelib.declare import Query
from chalicelib.routes.resource import Resource, route

bp = Resource(__name__)


@route(
    bp,
    "/hooks/{token}",
    "POST",
    role=None,
    summary="Receive a signed webhook",
    answers={200: "HookAnswer", 202: "HookAnswer"},
    raw_body=True,
    errors=(400, 401, 404, 410, 413, 415, 422, 429, 503),
    description="Authenticated by the provider's signature, not by an API key; see the "
    "contract's Ingress section and docs/providers/.",
)
def receive_webhook(token):
    from chalicelib.services import events

    request = bp.current_request
    status, body = events.receive(
        token, body=request.raw_body or b"", headers=dict(request.headers), now=bp.now()
    )
    return Response(body=body, status_code=status, headers={"Content-Type": "application/json"})


@route(
    bp,
    "/hooks/{token}",
    "GET",
    role=None,
    summary="Answer LinkedIn's endpoint validation (a linkedin trigger's URL)",
    answers={200: "ChallengeAnswer"},
    query=(Query("challengeCode", "The code LinkedIn sends to validate the URL (a UUID)"),),
    errors=(401, 422, 429),
    description="`challengeResponse` is hex HMAC-SHA256 of `challengeCode` keyed with the "
    "trigger's client secret; any other token, and a code that is not a UUID (the endpoint "
    "signs nothing else), answer the same 401 as a bad signature.",
)
def answer_hook_challenge(token):
    from chalicelib.sources import linkedin

    return linkedin.answer_challenge(token, bp.params(), now=bp.now())
