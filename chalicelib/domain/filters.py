"""Event filters: which verified deliveries start a run (``event.filter`` of a trigger).

A filter is a dict of keys that must all match (AND); a list value means any of its
items (OR); strings compare casefolded. ``fields`` compares dotted JSON paths of the body
exactly (strings still casefolded). No filter, or ``{}``, matches everything. A value (or
an item of a list) may also be one of EventBridge's operators, ``{"prefix": "release/"}``,
``{"numeric": [">=", 100]}``... with EventBridge's meaning (``filter_ops``). Where the
event holds a list, a value matches if any element does (EventBridge's array rule).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from chalicelib.domain import filter_ops
from chalicelib.domain.errors import ValidationError

__all__ = [
    "FILTER_KEYS",
    "event_type",
    "validate_filter",
    "matches",
    "may_be_goodbye",
    "source_gone",
]

# Named keys per source; "fields" is allowed for every source on top of these.
FILTER_KEYS: dict[str, tuple[str, ...]] = {
    "github": ("github_event", "action", "branch", "repository"),
    "stripe": ("type",),
    "slack": ("type",),
    "shopify": ("topic",),
    "standard": ("type",),
    "webhook": ("type",),
    "linkedin": ("type",),
    "eventbridge": ("detail-type", "source"),
    "s3": (),
    # Addresses and the subject compare casefolded; "to" matches any recipient.
    "email": ("from", "to", "subject"),
    "file": (),
}

_FIELDS = "fields"
_MAX_STRING = 256
_MAX_VALUES = 50
_MAX_FIELDS = 20
_MAX_PATH_SEGMENTS = 16
_MISSING = filter_ops.MISSING

_Extractor = Callable[[dict[str, str], object], object]


def event_type(source: str, *, headers: Mapping[str, str], body_json: object | None) -> str | None:
    """The provider's name for this event (``push``, ``invoice.paid``, ``orders/create``...)."""
    lowered = _lower(headers)
    if source == "github":
        # GitHub names the event only in the header; the body has no type field.
        return _text(lowered.get("x-github-event"))
    if source == "shopify":
        return _text(lowered.get("x-shopify-topic"))
    if source == "slack":
        # Events API: the outer type is "event_callback", the inner event has the name.
        inner = _text(_path(body_json, ("event", "type")))
        return inner if inner is not None else _text(_path(body_json, ("type",)))
    if source == "eventbridge":
        return _text(_path(body_json, ("detail-type",)))
    if source == "s3":
        return _text(_path(body_json, ("reason",)))
    if source in ("email", "file"):
        return source
    if source in ("stripe", "standard", "webhook", "linkedin"):
        # LinkedIn names its notification type in "type" (e.g. LEAD_ACTION).
        # Stripe Event objects and Standard Webhooks payloads both carry "type".
        return _text(_path(body_json, ("type",)))
    return None


def may_be_goodbye(source: str, *, body_json: object | None) -> bool:
    """True if the *signed* content could be the provider's goodbye, whatever the headers say.

    A header the provider does not sign (``X-GitHub-Event``, ``X-Shopify-Topic``) can be
    changed on a captured request, so only the body decides whether a delivery may
    disable a trigger:

    - GitHub's ``meta`` event body: ``action: deleted`` with the ``hook_id`` and the
      ``hook`` object of the deleted webhook (a label or repository ``deleted`` event
      carries no hook).
    - Slack's ``app_uninstalled``: the inner ``event.type``, inside the signed body.
    - Shopify's ``app/uninstalled`` body is the shop object (``myshopify_domain`` and
      ``shop_owner`` present). So is ``shop/update``'s: Shopify signs no topic, so
      the two differ only by the unsigned header. The caller therefore records every
      shop body it sees, even filtered out, so such a body presented again under
      another topic is a replay.
    """
    if not isinstance(body_json, dict):
        return False
    if source == "github":
        return (
            body_json.get("action") == "deleted"
            and "hook_id" in body_json
            and isinstance(body_json.get("hook"), dict)
        )
    if source == "slack":
        return _path(body_json, ("event", "type")) == "app_uninstalled"
    if source == "shopify":
        return "myshopify_domain" in body_json and "shop_owner" in body_json
    return False


def source_gone(source: str, *, headers: Mapping[str, str], body_json: object | None) -> str | None:
    """Why the provider says this webhook will never send again, or None.

    Signed deliveries only (the caller verified the signature), and only if the signed
    body is a goodbye (``may_be_goodbye``); where the provider names the event in a
    header, that must say so too: GitHub's ``meta`` event with ``action: deleted`` (the
    webhook itself was deleted), Slack's ``app_uninstalled`` and Shopify's
    ``app/uninstalled`` topic. Stripe and Standard Webhooks senders have no such event.
    The caller must also make sure the delivery is seen for the first time: a replay
    of a goodbye must not disable a trigger that was enabled again since.
    """
    if not may_be_goodbye(source, body_json=body_json):
        return None
    kind = event_type(source, headers=headers, body_json=body_json)
    if source == "github" and kind == "meta":
        return "GitHub deleted the webhook (meta event, action deleted)"
    if source == "slack" and kind == "app_uninstalled":
        return "the Slack app was uninstalled (app_uninstalled)"
    if source == "shopify" and kind == "app/uninstalled":
        return "the Shopify app was uninstalled (app/uninstalled)"
    return None


def validate_filter(source: str, flt: dict | None) -> None:
    """Raise ``ValidationError`` naming ``event.filter.<key>`` unless ``flt`` is usable."""
    if flt is None:
        return
    if source not in FILTER_KEYS:
        raise ValidationError(f"unknown event source {source!r}", field="event.source")
    if not isinstance(flt, dict):
        raise ValidationError("event.filter must be an object", field="event.filter")
    allowed = FILTER_KEYS[source]
    for key, value in flt.items():
        field = f"event.filter.{key}"
        if key == _FIELDS:
            _validate_fields(value)
        elif key in allowed:
            _validate_values(value, field, allowed=(str, dict))
        else:
            names = ", ".join((*allowed, _FIELDS))
            raise ValidationError(
                f"unknown filter key {key!r} for {source}; use one of {names}", field=field
            )


def matches(
    source: str, flt: dict | None, *, headers: Mapping[str, str], body_json: object | None
) -> bool:
    """True if the delivery passes every key of the filter (None or {} pass everything)."""
    if not flt:
        return True
    if not isinstance(flt, dict):
        return False
    lowered = _lower(headers)
    extractors = _EXTRACTORS.get(source, {})
    for key, expected in flt.items():
        if key == _FIELDS:
            if not isinstance(expected, dict):
                return False
            for dotted, wanted in expected.items():
                actual = _path(body_json, _segments(dotted)) if isinstance(dotted, str) else None
                if not _any_equal(actual, wanted):
                    return False
            continue
        extract = extractors.get(key)
        # A key this source does not know cannot be satisfied: fail closed.
        if extract is None:
            return False
        actual = extract(lowered, body_json)
        # A named key reads None where the event has no such thing (no header, a tag push
        # has no branch): absent, for "exists" and the operators.
        if not _any_equal(_MISSING if actual is None else actual, expected):
            return False
    return True


# --- what each named key reads ------------------------------------------------------


def _github_branch(headers: dict[str, str], body: object) -> object:
    """The branch a GitHub event is about, or None (tags, events without a branch)."""
    ref = _path(body, ("ref",))
    if isinstance(ref, str):
        # push: "refs/heads/main" (a tag push, "refs/tags/v1", has no branch);
        # create/delete: the short name, with ref_type telling branch from tag.
        if ref.startswith("refs/heads/"):
            return ref.removeprefix("refs/heads/")
        return ref if _path(body, ("ref_type",)) == "branch" else None
    # pull_request*: filter on the branch the PR targets, as GitHub Actions does.
    return _path(body, ("pull_request", "base", "ref"))


def _body_type(headers: dict[str, str], body: object) -> object:
    return _path(body, ("type",))


def _slack_type(headers: dict[str, str], body: object) -> object:
    return event_type("slack", headers=headers, body_json=body)


_EXTRACTORS: dict[str, dict[str, _Extractor]] = {
    "github": {
        "github_event": lambda headers, body: headers.get("x-github-event"),
        "action": lambda headers, body: _path(body, ("action",)),
        "branch": _github_branch,
        "repository": lambda headers, body: _path(body, ("repository", "full_name")),
    },
    "stripe": {"type": _body_type},
    "slack": {"type": _slack_type},
    "shopify": {"topic": lambda headers, body: headers.get("x-shopify-topic")},
    "standard": {"type": _body_type},
    "webhook": {"type": _body_type},
    "linkedin": {"type": _body_type},
    "eventbridge": {
        "detail-type": lambda headers, body: _path(body, ("detail-type",)),
        "source": lambda headers, body: _path(body, ("source",)),
    },
    "email": {
        "from": lambda headers, body: _path(body, ("from",)),
        # Any recipient: a list value matches if any element does.
        "to": lambda headers, body: _path(body, ("to",)),
        "subject": lambda headers, body: _path(body, ("subject",)),
    },
}


# --- comparison -----------------------------------------------------------------------


def _any_equal(actual: object, expected: object) -> bool:
    """True if the value at a key satisfies any of the filter's values (plain or operator)."""
    for item in expected if isinstance(expected, list) else [expected]:
        if isinstance(item, dict):  # an operator (validated on create)
            if filter_ops.match_operator(item, actual):
                return True
        elif _equal(actual, item) or (
            isinstance(actual, list) and any(_equal(value, item) for value in actual)
        ):
            return True
    return False


def _equal(actual: object, expected: object) -> bool:
    """Strings casefold; bools, numbers and null exactly, without bool/int crossover."""
    # An absent path is _MISSING, which equals nothing: {"x": null} needs x present.
    if isinstance(expected, str):
        return isinstance(actual, str) and actual.casefold() == expected.casefold()
    if isinstance(expected, bool) or expected is None:
        return actual is expected
    if isinstance(expected, int | float):
        return (
            isinstance(actual, int | float) and not isinstance(actual, bool) and actual == expected
        )
    return False


def _path(doc: object, segments: tuple[str, ...]) -> object:
    """The value at ``segments`` in a JSON document, or ``_MISSING``.

    A segment that meets an array reads it as EventBridge does: a number picks that
    element; a name is read in every element (an array of objects), and what the
    elements hold is flattened into one list. So ``a.b`` in ``{"a": [{"b": 1}, {"b": 2}]}``
    is ``[1, 2]``: a filter value matches if any of them does, and ``exists`` sees it.
    Arrays inside arrays flatten too (``[[1, 2], [3]]`` holds 3).
    """
    nodes, spread = [doc], False
    for segment in segments:
        found: list[object] = []
        for node in nodes:
            if isinstance(node, dict):
                if segment in node:
                    found.append(node[segment])
            elif isinstance(node, list):
                if segment.isdecimal():
                    if int(segment) < len(node):
                        found.append(node[int(segment)])
                else:
                    spread = True
                    found += [
                        e[segment] for e in _flat(node) if isinstance(e, dict) and segment in e
                    ]
        if not found:
            return _MISSING
        nodes = found
    value = nodes if spread else nodes[0]
    return _flat(value) if isinstance(value, list) else value


def _flat(values: list) -> list:
    """``values`` with the elements of nested arrays in their place."""
    out: list[object] = []
    for value in values:
        out += _flat(value) if isinstance(value, list) else [value]
    return out


def _segments(dotted: str) -> tuple[str, ...]:
    return tuple(dotted.split("."))


# --- validation -----------------------------------------------------------------------


def _validate_fields(value: object) -> None:
    field = f"event.filter.{_FIELDS}"
    if not isinstance(value, dict):
        raise ValidationError('fields must be an object of {"dotted.path": value}', field=field)
    if len(value) > _MAX_FIELDS:
        raise ValidationError(f"at most {_MAX_FIELDS} fields", field=field)
    for dotted, wanted in value.items():
        segments = _segments(dotted) if isinstance(dotted, str) else ()
        if (
            not segments
            or len(dotted) > _MAX_STRING
            or len(segments) > _MAX_PATH_SEGMENTS
            or not all(segments)
        ):
            raise ValidationError(
                f"{dotted!r} is not a dotted JSON path like 'pull_request.merged'", field=field
            )
        _validate_values(
            wanted,
            f"{field}.{dotted}",
            allowed=(str, int, float, bool, type(None), dict),
            blank_ok=True,
        )


def _validate_values(
    value: object, field: str, *, allowed: tuple[type, ...], blank_ok: bool = False
) -> None:
    """A scalar of an allowed type or an operator, or a non-empty list of them."""
    items = value if isinstance(value, list) else [value]
    if not items:
        raise ValidationError("an empty list would never match", field=field)
    if len(items) > _MAX_VALUES:
        raise ValidationError(f"at most {_MAX_VALUES} values", field=field)
    for item in items:
        if isinstance(item, dict) and dict in allowed:
            filter_ops.validate_operator(item, field)
            continue
        if not isinstance(item, allowed):
            names = " or ".join(dict.fromkeys(_TYPE_NAMES[kind] for kind in allowed))
            raise ValidationError(f"must be {names}, or a list of them", field=field)
        if isinstance(item, float) and not math.isfinite(item):
            raise ValidationError("numbers must be finite", field=field)
        if isinstance(item, str):
            if len(item) > _MAX_STRING:
                raise ValidationError(f"at most {_MAX_STRING} characters", field=field)
            if not blank_ok and not item.strip():
                raise ValidationError("must not be blank", field=field)


_TYPE_NAMES: dict[type, str] = {
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
    dict: "an operator object",
}


def _lower(headers: Mapping[str, str] | None) -> dict[str, str]:
    if not isinstance(headers, Mapping):
        return {}
    return {
        name.lower(): value
        for name, value in headers.items()
        if isinstance(name, str) and isinstance(value, str)
    }


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
