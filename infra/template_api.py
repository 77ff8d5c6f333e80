"""The API's part of the merge template: Chalice's REST API named, throttled (the webhook
ingress in a bucket of its own), traced and access-logged, with API Gateway's own answers in
the contract's error shape; the region's API Gateway CloudWatch role, when this stack owns it;
the URL webhooks are given."""

from __future__ import annotations

import json
from typing import Any

from chalicelib.gateway import GATEWAY_RESPONSES
from infra.stage import StageConfig
from infra.template_resources import log_group

__all__ = ["api_account_resources", "rest_api_resources", "gateway_responses", "public_url"]


def api_account_resources(stage: str) -> dict[str, Any]:
    """The access log group, and the API Gateway account setting (only when this stack owns
    it: condition ConfigureApiGatewayAccount)."""
    return {
        "ApiAccessLogGroup": log_group(f"/aws/apigateway/cronhook-{stage}-access"),
        "ApiGatewayCloudWatchRole": {
            "Type": "AWS::IAM::Role",
            "Condition": "ConfigureApiGatewayAccount",
            "Properties": {
                "AssumeRolePolicyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Principal": {"Service": "apigateway.amazonaws.com"},
                            "Action": "sts:AssumeRole",
                        }
                    ],
                },
                "ManagedPolicyArns": [
                    {
                        "Fn::Sub": "arn:${AWS::Partition}:iam::aws:policy/service-role/"
                        "AmazonAPIGatewayPushToCloudWatchLogs"
                    }
                ],
            },
        },
        "ApiGatewayAccount": {
            "Type": "AWS::ApiGateway::Account",
            "Condition": "ConfigureApiGatewayAccount",
            "Properties": {
                "CloudWatchRoleArn": {"Fn::GetAtt": ["ApiGatewayCloudWatchRole", "Arn"]}
            },
        },
    }


def rest_api_resources(stage: str) -> dict[str, Any]:
    """Chalice's ``RestAPI``, overridden, and the handle it waits on."""
    return {
        "RestAPI": {
            "DependsOn": ["ApiGatewayAccountReady"],
            "Properties": {
                # Merged into Chalice's swagger: part of the API definition, so every deployment
                # of the stage carries them (a separate GatewayResponse resource needs a redeploy).
                "DefinitionBody": {"x-amazon-apigateway-gateway-responses": gateway_responses()},
                "Name": f"cronhook-{stage}",
                # Any OpenApiVersion stops SAM adding a second stage named "Stage" (no throttling,
                # logs or alarms, webhook reachable); "2.0" leaves Chalice's swagger as it is.
                "OpenApiVersion": "2.0",
                "TracingEnabled": True,
                "MethodSettings": [
                    {
                        "ResourcePath": "/*",
                        "HttpMethod": "*",
                        "ThrottlingRateLimit": {"Ref": "ApiThrottleRateLimit"},
                        "ThrottlingBurstLimit": {"Ref": "ApiThrottleBurstLimit"},
                        "MetricsEnabled": {"Fn::If": ["ApiDetailedMetrics", True, False]},
                        "DataTraceEnabled": False,
                    },
                    # The webhook ingress has a bucket of its own: a flood of unauthenticated
                    # deliveries cannot spend /v1's, nor /v1 clients the providers'. (The path
                    # is written with "/" as "~1", as API Gateway's method settings want it.)
                    {
                        "ResourcePath": "/~1hooks~1{token}",
                        "HttpMethod": "POST",
                        "ThrottlingRateLimit": {"Ref": "HooksThrottleRateLimit"},
                        "ThrottlingBurstLimit": {"Ref": "HooksThrottleBurstLimit"},
                        "MetricsEnabled": {"Fn::If": ["ApiDetailedMetrics", True, False]},
                        "DataTraceEnabled": False,
                    },
                ],
                "AccessLogSetting": {
                    "DestinationArn": {"Fn::GetAtt": ["ApiAccessLogGroup", "Arn"]},
                    "Format": _access_log_format(),
                },
            },
        },
        # CloudFormation cannot DependsOn a resource whose condition is false; this handle
        # carries the dependency on the (optional) API Gateway account setting instead.
        "ApiGatewayAccountReady": {
            "Type": "AWS::CloudFormation::WaitConditionHandle",
            "Metadata": {
                "ApiGatewayAccount": {
                    "Fn::If": ["ConfigureApiGatewayAccount", {"Ref": "ApiGatewayAccount"}, ""]
                }
            },
        },
    }


def public_url(cfg: StageConfig) -> dict:
    """The base URL of webhook URLs: ``PublicUrl``, else the stage's execute-api URL."""
    return {
        "Fn::If": [
            "HasPublicUrl",
            {"Ref": "PublicUrl"},
            {
                "Fn::Sub": "https://${RestAPI}.execute-api.${AWS::Region}.${AWS::URLSuffix}/"
                + cfg.api_stage
            },
        ]
    }


def _access_log_format() -> str:
    # $context.resourcePath, never $context.path: the webhook path carries the trigger's token.
    fields = {
        "requestId": "$context.requestId",
        "ip": "$context.identity.sourceIp",
        "requestTime": "$context.requestTime",
        "httpMethod": "$context.httpMethod",
        "resourcePath": "$context.resourcePath",
        "status": "$context.status",
        "responseLength": "$context.responseLength",
        "latencyMs": "$context.responseLatency",
        "integrationLatencyMs": "$context.integrationLatency",
        "integrationError": "$context.integrationErrorMessage",
        "xrayTraceId": "$context.xrayTraceId",
    }
    return json.dumps(fields, separators=(",", ":"))


def gateway_responses() -> dict[str, dict]:
    """API Gateway's own answers (unknown route, bad key, throttled...) in the contract's shape."""
    out: dict[str, dict] = {}
    for response_type, answer in GATEWAY_RESPONSES.items():
        entry: dict[str, Any] = {"responseTemplates": {"application/json": answer.template()}}
        if answer.status is not None:
            entry["statusCode"] = str(answer.status)
        out[response_type] = entry
    return out
