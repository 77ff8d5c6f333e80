"""LinkedIn's endpoint validation: ``GET /hooks/{token}?challengeCode=...``.

LinkedIn ("Webhook validation") validates a webhook URL before it sends to it, and again
every 2 hours: a GET with ``challengeCode``, answered within 3 s with JSON
``{"challengeCode", "challengeResponse"}`` where the response is the hex HMAC-SHA256 of
the code keyed with the app's client secret (the trigger's ``event.secret``). POSTs are
verified (``X-LI-Signature``) and deduped (the notification id) like any webhook
(``domain/signatures.py``, ``services/events/ingress.py``).
"""

from __future__ import annotations

from datetime import datetime

from chalicelib.domain import signatures
from chalicelib.domain.errors import InvalidSignature
from chalicelib.domain.trigger_spec import TriggerSpec
from chalicelib.services import events

__all__ = ["answer_challenge"]


def answer_challenge(token: str, params: dict, *, now: datetime) -> dict:
    """The challenge answer; 401 (as for a bad signature) for anything but a linkedin hook."""
    item = events.trigger_for_token(token)
    code = params.get("challengeCode")
    if item is None or not isinstance(code, str):
        raise InvalidSignature()
    source = TriggerSpec.from_json(item.spec).event_source
    if source != "linkedin":
        raise InvalidSignature()
    answer = signatures.linkedin_challenge(code, secrets=events.secrets_of(item, now=now))
    if answer is None:
        raise InvalidSignature()
    return answer
