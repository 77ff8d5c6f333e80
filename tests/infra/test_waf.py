"""The optional per-IP limit on /hooks: a WAF web ACL on the API's stage when HooksPerIpLimit > 0."""

from __future__ import annotations

import json
import re
from urllib.parse import unquote

import pytest

from infra.template import merge_template
from tests.infra.harness import Resolver

ACL, ASSOCIATION = "HooksWebAcl", "HooksWebAclAssociation"


@pytest.fixture(scope="module")
def template() -> dict:
    return merge_template("dev")


def _resolver(expanded: dict, deployed, limit: str) -> Resolver:
    resolver = Resolver(expanded, deployed.physical, deployed.client, deployed.stack_name)
    resolver.params["HooksPerIpLimit"] = limit
    return resolver


def test_the_web_acl_exists_only_with_a_limit_and_there_is_none_by_default(deployed):
    expanded = deployed.expanded
    assert expanded["Parameters"]["HooksPerIpLimit"]["Default"] == "0"
    for logical in (ACL, ASSOCIATION):
        assert expanded["Resources"][logical]["Condition"] == "HooksPerIpLimited"
        assert logical not in deployed.physical
    assert deployed.client("wafv2").list_web_acls(Scope="REGIONAL")["WebACLs"] == []
    # Made exactly when a limit is given.
    assert not _resolver(expanded, deployed, "0").condition("HooksPerIpLimited")
    assert _resolver(expanded, deployed, "300").condition("HooksPerIpLimited")


@pytest.mark.parametrize(
    ("value", "accepted"),
    [("0", True), ("10", True), ("300", True), ("1", False), ("9", False), ("05", False)]
    + [("-1", False), ("", False), ("1e3", False)],
)
def test_the_limit_is_0_or_at_least_wafs_minimum_of_10(template, value, accepted):
    pattern = template["Parameters"]["HooksPerIpLimit"]["AllowedPattern"]
    assert (re.fullmatch(pattern.strip("^$"), value) is not None) is accepted


def test_the_rule_limits_each_source_ip_per_minute_and_answers_429_in_the_contracts_shape(
    template,
):
    acl = template["Resources"][ACL]
    assert acl["Type"] == "AWS::WAFv2::WebACL"
    props = acl["Properties"]
    assert props["Scope"] == "REGIONAL" and props["DefaultAction"] == {"Allow": {}}
    (rule,) = props["Rules"]
    rate = rule["Statement"]["RateBasedStatement"]
    assert rate["Limit"] == {"Ref": "HooksPerIpLimit"}
    assert rate["AggregateKeyType"] == "IP" and rate["EvaluationWindowSec"] == 60
    block = rule["Action"]["Block"]["CustomResponse"]
    assert block["ResponseCode"] == 429
    body = json.loads(props["CustomResponseBodies"][block["CustomResponseBodyKey"]]["Content"])
    assert set(body) == {"error"} and body["error"]["code"] == "throttled"


def _counted(scope_down: dict, path: str) -> bool:
    """Whether WAF's scope-down statement counts a request to ``path``."""
    match = scope_down["ByteMatchStatement"]
    assert match["FieldToMatch"] == {"UriPath": {}}
    value = path
    for transformation in sorted(match["TextTransformations"], key=lambda t: t["Priority"]):
        assert transformation["Type"] in ("URL_DECODE", "NONE")
        if transformation["Type"] == "URL_DECODE":
            value = unquote(value)
    assert match["PositionalConstraint"] == "CONTAINS"
    return match["SearchString"] in value


def test_only_requests_to_the_webhook_path_are_counted(template):
    import app as app_module

    (rule,) = template["Resources"][ACL]["Properties"]["Rules"]
    scope_down = rule["Statement"]["RateBasedStatement"]["ScopeDownStatement"]
    for path in ("/api/hooks/trg_1_tok", "/hooks/trg_1_tok", "/api/%68ooks/trg_1_tok"):
        assert _counted(scope_down, path), path
    # On the execute-api URL (the stage first) and on a custom domain (no stage), every
    # route but the webhook's passes uncounted.
    for route in app_module.app.routes:
        concrete = re.sub(r"{\w+}", "x", route)
        for path in (concrete, "/api" + concrete):
            assert _counted(scope_down, path) is route.startswith("/hooks/"), path


def test_the_web_acl_is_associated_with_the_apis_own_stage(deployed, template):
    association = template["Resources"][ASSOCIATION]["Properties"]
    assert association["WebACLArn"] == {"Fn::GetAtt": [ACL, "Arn"]}
    # After the SAM transform, the stage reference is the one stage SAM made for the API.
    expanded = deployed.expanded["Resources"]
    arn = expanded[ASSOCIATION]["Properties"]["ResourceArn"]["Fn::Sub"]
    (stage_ref,) = re.findall(r"/stages/\${(\w+)}$", arn)
    assert expanded[stage_ref]["Type"] == "AWS::ApiGateway::Stage"
    assert expanded[stage_ref]["Properties"]["StageName"] == "api"
    assert arn.startswith("arn:${AWS::Partition}:apigateway:${AWS::Region}::/restapis/${RestAPI}")
