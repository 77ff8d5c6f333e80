"""Injected AWS faults: a botocore hook on every DynamoDB and SQS client (boto3's and
pynamodb's own) that fails a seeded fraction of the calls.

The faults are raised at ``before-call`` and ``after-call``, so botocore's and
pynamodb's retries never see them: every injected fault reaches cronhook's code, which
is harsher than AWS (where most throttles and 500s are absorbed by retries).

- ``throttle``: 400 ProvisionedThroughputExceededException / SQS RequestThrottled
- ``server``: 500 InternalServerError / SQS InternalError
- ``timeout``: a read timeout before the request was sent (nothing happened)
- ``lost_reply``: the request was applied, then the reply timed out: the caller cannot
  tell this from ``timeout``, which is what makes it the interesting one
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ReadTimeoutError

__all__ = ["FaultInjector", "KINDS"]

KINDS = ("throttle", "server", "timeout", "lost_reply")

_CODES = {
    ("dynamodb", "throttle"): (400, "ProvisionedThroughputExceededException"),
    ("dynamodb", "server"): (500, "InternalServerError"),
    ("sqs", "throttle"): (400, "RequestThrottled"),
    ("sqs", "server"): (500, "InternalError"),
}


class _Reply:
    """Just enough of an HTTP response for botocore's after-call handlers."""

    def __init__(self, status_code: int):
        self.status_code = status_code
        self.headers: dict = {}
        self.content = b""


@dataclass
class FaultInjector:
    """Fails ``rate`` of the DynamoDB and SQS calls while ``active``, with a seeded RNG."""

    seed: int
    rate: float = 0.10
    active: bool = False
    injected: Counter = field(default_factory=Counter)
    calls: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def register(self, client: Any) -> list:
        """A registrar for ``bench.hooks.hooked``."""
        service = client.meta.service_model.endpoint_prefix
        if service not in ("dynamodb", "sqs"):
            return []
        return [(f"before-call.{service}", self._before), (f"after-call.{service}", self._after)]

    def _before(self, model: Any, context: dict, **_: Any) -> Any:
        if not self.active:
            return None
        self.calls += 1
        if self.rng.random() >= self.rate:
            return None
        service = model.service_model.endpoint_prefix
        kind = self.rng.choice(KINDS)
        self.injected[(service, model.name, kind)] += 1
        if kind == "lost_reply":
            context["fault_lost_reply"] = True
            return None
        if kind == "timeout":
            raise ReadTimeoutError(endpoint_url=f"https://{service}.us-east-1.amazonaws.com")
        status, code = _CODES[(service, kind)]
        parsed = {
            "Error": {"Code": code, "Message": f"injected {kind}"},
            "ResponseMetadata": {"HTTPStatusCode": status},
        }
        return _Reply(status), parsed

    def _after(self, context: dict, **_: Any) -> None:
        if context.pop("fault_lost_reply", False):
            raise ReadTimeoutError(endpoint_url="https://aws.amazon.com (reply lost)")

    def total(self) -> int:
        return sum(self.injected.values())
