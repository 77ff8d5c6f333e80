"""Remote targets: ``lambda:<name-or-arn>``, ``http:<https-url>``, the AWS service targets
(``sqs:``, ``sns:``, ``states:``, ``events:``; ``aws_targets``) and ``github:`` (a confirmed
``workflow_dispatch``; ``github_target``).

Both get the fire as JSON (``Fire.to_json()``) and may answer ``{state, next_fire_at,
cost_usd, output, error}`` (``targets.to_result`` turns it into a ``Result``).

- **Lambda**: ``Invoke`` with ``RequestResponse``. A function error (``FunctionError``)
  fails the run with the function's own ``errorType: errorMessage``. The call is not
  retried by botocore: a read timeout on a function that is still running would start it
  a second time (the fire id is there for outside dedupe, but cronhook does not add runs).
  A tenant's functions are named ``cronhook-<stage>-<tenant>-*``: any other name is a
  422 on create; the call is made under a session of the target-invoke role tagged with
  the trigger's tenant, which AWS lets invoke only that tenant's functions.
- **HTTP**: a POST signed with Standard Webhooks headers (``webhook-id`` = the fire id,
  stable across retries, so the receiver can dedupe) under the trigger's own outbound
  secret, made on create and shown once. Redirects are not followed, anything but 2xx
  fails the run, and the call has a timeout. One address policy in every stage (below):
  private, loopback, link-local, CGNAT, multicast and reserved addresses are refused,
  on create (422) and on the address actually connected to. Plain ``http://`` and
  private addresses only with ``CRONHOOK_ALLOW_PRIVATE_TARGETS`` in the local and test
  stages (a receiver on the developer's machine); the metadata addresses and the
  embedded AWS endpoint never.

The URL of an HTTP target never appears in a run's error or a log line, and views and
the audit log show it with its query values masked (``display_target``): users put
tokens in query strings.

Modules (none imports this package): ``answers`` (the fire as sent, reading an answer),
``addresses`` (the address policy), ``http_target``, ``lambda_target`` (names, tenant
sessions, the call), ``display`` (masked targets), ``prepare`` (the check on create).
"""

from __future__ import annotations

from chalicelib.workflows.remote.addresses import (
    TargetRefused,
    address_refused,
    check_http_url,
    resolve_target,
)
from chalicelib.workflows.remote.answers import MAX_ANSWER_BYTES
from chalicelib.workflows.remote.display import MASK, display_target, mask_targets
from chalicelib.workflows.remote.http_target import HTTP_TIMEOUT_S, USER_AGENT, invoke_http
from chalicelib.workflows.remote.lambda_target import (
    TENANT_TAG,
    check_lambda_target,
    invoke_lambda,
    lambda_function_name,
    lambda_prefix,
    reset_clients,
    tenant_session_tags,
)
from chalicelib.workflows.remote.prepare import TARGET_PREFIXES, prepare_target

__all__ = [
    "invoke_lambda",
    "invoke_http",
    "prepare_target",
    "TARGET_PREFIXES",
    "check_http_url",
    "check_lambda_target",
    "lambda_function_name",
    "lambda_prefix",
    "tenant_session_tags",
    "address_refused",
    "resolve_target",
    "display_target",
    "mask_targets",
    "TargetRefused",
    "HTTP_TIMEOUT_S",
    "MAX_ANSWER_BYTES",
    "USER_AGENT",
    "MASK",
    "TENANT_TAG",
    "reset_clients",
]
