"""An optional per-sender limit on the webhook ingress: a WAF rate-based rule per source IP.

API Gateway's throttle for ``/hooks/{token}`` is one bucket for every sender: one client
can spend it and get every tenant's deliveries throttled. With ``HooksPerIpLimit`` > 0 the
stack adds a regional WAF web ACL on the API's stage with one rate-based rule: a source
IP that sends more than that many requests to ``/hooks/...`` within a minute gets ``429``
until its rate falls back under the limit. Everything else passes (the ACL's default
action is Allow, and the rule is scoped down to the webhook path).

WAF costs money even when idle (about $5 a month per web ACL, $1 per rule, and $0.60 per
million requests the ACL inspects: every request to the stage, not only ``/hooks``), so
it is off by default (``0``). WAF's smallest limit is 10 per window, hence the parameter's
pattern: ``0`` or 10 and more.

The locally served stack applies the same rule in its gateway when
``CRONHOOK_HOOKS_PER_IP_PER_MIN`` is set (``devstack/gateway.py``).
"""

from __future__ import annotations

import json

from chalicelib.gateway import GATEWAY_RESPONSES

__all__ = ["waf_parameters", "waf_conditions", "waf_resources", "HOOKS_WINDOW_S", "WEB_ACL"]

HOOKS_WINDOW_S = 60  # WAF evaluates rates over 60, 120, 300 or 600 s; the limit is per minute
WEB_ACL = "HooksWebAcl"
ASSOCIATION = "HooksWebAclAssociation"
CONDITION = "HooksPerIpLimited"


def waf_parameters() -> dict:
    return {
        "HooksPerIpLimit": {
            # A String with a pattern, not a Number: WAF refuses limits from 1 to 9, and
            # a pattern lets CloudFormation refuse them before anything is created.
            "Type": "String",
            "Default": "0",
            "AllowedPattern": "^(0|[1-9][0-9]{1,8})$",
            "ConstraintDescription": "0 (no WAF), or 10 and more requests per minute",
            "Description": (
                "Requests per source IP per minute to /hooks/* before WAF answers 429 (10 or "
                "more). 0: no web ACL. WAF costs about $6 a month plus $0.60 per million "
                "requests to the stage (docs/security.md)."
            ),
        }
    }


def waf_conditions() -> dict:
    return {CONDITION: {"Fn::Not": [{"Fn::Equals": [{"Ref": "HooksPerIpLimit"}, "0"]}]}}


def _visibility(name: str) -> dict:
    return {
        "SampledRequestsEnabled": True,
        "CloudWatchMetricsEnabled": True,
        "MetricName": name,
    }


def _throttled_body() -> str:
    # The contract's shape, as API Gateway's own throttle answers (chalicelib/gateway.py).
    answer = GATEWAY_RESPONSES["THROTTLED"]
    return json.dumps(
        {"error": {"code": answer.code, "message": "too many requests from this address"}},
        separators=(",", ":"),
    )


def waf_resources(stage: str) -> dict[str, dict]:
    """The web ACL and its association with the API's stage (only when the limit is > 0)."""
    name = f"cronhook-{stage}-hooks"
    return {
        WEB_ACL: {
            "Type": "AWS::WAFv2::WebACL",
            "Condition": CONDITION,
            "Properties": {
                "Name": name,
                "Description": f"cronhook {stage}: per-IP rate limit on the webhook ingress",
                "Scope": "REGIONAL",
                "DefaultAction": {"Allow": {}},
                "VisibilityConfig": _visibility(name),
                "CustomResponseBodies": {
                    "throttled": {"ContentType": "APPLICATION_JSON", "Content": _throttled_body()}
                },
                "Rules": [_per_ip_rule(name)],
            },
        },
        ASSOCIATION: {
            "Type": "AWS::WAFv2::WebACLAssociation",
            "Condition": CONDITION,
            "Properties": {
                # ${RestAPI.Stage}: SAM's reference to the stage it makes, so the
                # association waits for the stage to exist.
                "ResourceArn": {
                    "Fn::Sub": "arn:${AWS::Partition}:apigateway:${AWS::Region}::/restapis/"
                    "${RestAPI}/stages/${RestAPI.Stage}"
                },
                "WebACLArn": {"Fn::GetAtt": [WEB_ACL, "Arn"]},
            },
        },
    }


def _per_ip_rule(name: str) -> dict:
    """The one rule: a source IP over ``HooksPerIpLimit`` requests to ``/hooks/`` a minute
    gets a 429 in the contract's error shape."""
    hooks_path = {
        # "/hooks/" anywhere in the path: the stage name comes first on the execute-api
        # URL (/api/hooks/...), not on a custom domain; no other route has it. The path
        # is URL-decoded first, so /api/%68ooks/... is counted too.
        "ByteMatchStatement": {
            "SearchString": "/hooks/",
            "FieldToMatch": {"UriPath": {}},
            "PositionalConstraint": "CONTAINS",
            "TextTransformations": [{"Priority": 0, "Type": "URL_DECODE"}],
        }
    }
    return {
        "Name": "hooks-per-ip",
        "Priority": 0,
        # WAF prefixes custom response headers with x-amzn-waf-, so no
        # Retry-After: providers retry a 429 with their own backoff.
        "Action": {
            "Block": {
                "CustomResponse": {
                    "ResponseCode": 429,
                    "CustomResponseBodyKey": "throttled",
                }
            }
        },
        "Statement": {
            "RateBasedStatement": {
                "Limit": {"Ref": "HooksPerIpLimit"},
                "EvaluationWindowSec": HOOKS_WINDOW_S,
                "AggregateKeyType": "IP",
                "ScopeDownStatement": hooks_path,
            }
        },
        "VisibilityConfig": _visibility(f"{name}-per-ip"),
    }
