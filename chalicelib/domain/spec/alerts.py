"""The bodies of ``/v1/alerts``: an alert policy, its match and its channels.

``parse_alert`` is the one validation of a policy body (the route, and tools that keep
policies as files, call it); it checks shape only: a channel URL's address is checked by
the service, which resolves it.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from chalicelib.domain.errors import ValidationError
from chalicelib.domain.spec.base import Strict, printable
from chalicelib.domain.spec.parse import parse_model

__all__ = [
    "AlertMatchIn",
    "EmailChannelIn",
    "SlackChannelIn",
    "WebhookChannelIn",
    "SnsChannelIn",
    "AlertIn",
    "AlertPatch",
    "parse_alert",
    "parse_alert_patch",
    "ALERT_KINDS",
]

ALERT_KINDS = ("failed", "disabled", "recovered", "late", "no_event", "budget")
AlertKind = Literal["failed", "disabled", "recovered", "late", "no_event", "budget"]

_Short = Annotated[str, Field(min_length=1, max_length=200)]
_Url = Annotated[str, Field(min_length=8, max_length=2000)]
# An address as SES and mail clients take it: one @, no spaces, no angle brackets.
_EMAIL = re.compile(r"^[^@\s<>,;\"]{1,64}@[A-Za-z0-9.-]{1,253}\.[A-Za-z]{2,63}$")
_TOPIC = re.compile(r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$")


class AlertMatchIn(Strict):
    """Which triggers a policy covers: each non-empty list must match (empty: all)."""

    tags: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(
        default_factory=list, max_length=50
    )
    workflows: list[_Short] = Field(default_factory=list, max_length=50)
    trigger_ids: list[Annotated[str, Field(min_length=1, max_length=40)]] = Field(
        default_factory=list, max_length=100
    )


class EmailChannelIn(Strict):
    type: Literal["email"]
    to: list[Annotated[str, Field(min_length=3, max_length=320)]] = Field(
        min_length=1, max_length=20
    )

    @field_validator("to")
    @classmethod
    def _addresses(cls, value: list[str]) -> list[str]:
        for address in value:
            if not _EMAIL.match(address):
                raise ValueError(f"{address!r} is not an email address")
        return value


class SlackChannelIn(Strict):
    type: Literal["slack"]
    webhook_url: _Url


class WebhookChannelIn(Strict):
    type: Literal["webhook"]
    url: _Url


class SnsChannelIn(Strict):
    type: Literal["sns"]
    topic_arn: Annotated[str, Field(min_length=20, max_length=300)]

    @field_validator("topic_arn")
    @classmethod
    def _arn(cls, value: str) -> str:
        if not _TOPIC.match(value):
            raise ValueError("must be an SNS topic ARN (arn:aws:sns:<region>:<account>:<name>)")
        return value


Channel = Annotated[
    EmailChannelIn | SlackChannelIn | WebhookChannelIn | SnsChannelIn,
    Field(discriminator="type"),
]


class AlertIn(Strict):
    """The body of ``POST /v1/alerts``."""

    name: _Short
    match: AlertMatchIn = Field(default_factory=AlertMatchIn)
    on: list[AlertKind] = Field(min_length=1, max_length=6)
    failures_in_a_row: int = Field(default=1, ge=1, le=1000)
    late_after_s: int = Field(default=300, ge=60, le=7 * 86400)
    no_event_for_s: int = Field(default=86400, ge=60, le=90 * 86400)
    budget_percent: int = Field(default=80, ge=1, le=100)
    quiet_s: int = Field(default=3600, ge=0, le=7 * 86400)
    # A policy without channels still puts its late/no_event findings on the bus.
    channels: list[Channel] = Field(default_factory=list, max_length=10)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return printable(value) or value

    @field_validator("on")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))


class AlertPatch(Strict):
    """The body of ``PATCH /v1/alerts/{id}``: the fields given replace the stored ones
    (``channels`` as a whole: a Slack URL is sent again, since it is never shown)."""

    name: _Short | None = None
    match: AlertMatchIn | None = None
    on: list[AlertKind] | None = Field(default=None, min_length=1, max_length=6)
    failures_in_a_row: int | None = Field(default=None, ge=1, le=1000)
    late_after_s: int | None = Field(default=None, ge=60, le=7 * 86400)
    no_event_for_s: int | None = Field(default=None, ge=60, le=90 * 86400)
    budget_percent: int | None = Field(default=None, ge=1, le=100)
    quiet_s: int | None = Field(default=None, ge=0, le=7 * 86400)
    channels: list[Channel] | None = Field(default=None, max_length=10)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        return printable(value)


# pydantic names a tagged union's branch in an error's location (``channels.0.webhook.url``):
# the branch is the channel's ``type``, not a field of the body.
_BRANCH = re.compile(r"\b(channels\.\d+)\.(?:email|slack|webhook|sns)\b")


def _parsed(model: type[Strict], body: Any) -> Any:
    """``parse_model``; a channel's field named as it is in the body (``channels.0.url``)."""
    try:
        return parse_model(model, body)
    except ValidationError as exc:
        if exc.field and _BRANCH.search(exc.field):
            raise ValidationError(
                _BRANCH.sub(r"\1", exc.message), field=_BRANCH.sub(r"\1", exc.field)
            ) from None
        raise


def parse_alert(body: Any) -> dict:
    """A policy body, validated (422 naming the field), as plain JSON with every default."""
    return _parsed(AlertIn, body).model_dump(mode="json")


def parse_alert_patch(body: Any) -> dict:
    """The fields a PATCH gives, validated; null for a field that cannot be null is a 422."""
    parsed = _parsed(AlertPatch, body)
    # The fields sent, each dumped whole: ``exclude_unset`` would also drop the defaults
    # inside a sent ``match`` (``{"tags": [...]}`` must be stored with its empty lists).
    dumped = parsed.model_dump(mode="json")
    given = {name: dumped[name] for name in parsed.model_fields_set}
    for name, value in given.items():
        if value is None:
            raise ValidationError(f"{name}: must not be null", field=name)
    if not given:
        raise ValidationError("the body names no field to change", field=None)
    return given
