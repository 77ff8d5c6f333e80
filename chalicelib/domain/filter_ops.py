"""EventBridge's content-filter operators, for ``event.filter`` values.

A filter value may be an operator object instead of a plain value, with the meaning
EventBridge gives it ("Content filtering in Amazon EventBridge event patterns"; the
matcher behind it is AWS's open-source event-ruler):

- ``{"prefix": "release/"}``, ``{"suffix": ".png"}``: a string value starts / ends so,
  case-sensitive; ``{"prefix": {"equals-ignore-case": "EventB"}}`` ignores case.
- ``{"equals-ignore-case": "alice"}``: a string value equal but for case.
- ``{"wildcard": "dir/*.png"}``: ``*`` stands for any run of characters (none too);
  ``\\*`` is a literal star and ``\\\\`` a backslash; two stars in a row are refused.
- ``{"anything-but": x}``: the value is present and is not ``x`` (a string, a number, a
  list of only strings or only numbers), or does not start / end / equal-ignoring-case /
  wildcard-match: ``{"anything-but": {"prefix": "init"}}``.
- ``{"numeric": [">", 0, "<=", 5]}``: a JSON number in the range (``=`` alone, or at most
  one lower and one upper bound); booleans are not numbers.
- ``{"cidr": "10.0.0.0/24"}``: a string value that is an IPv4 or IPv6 address in the block.
- ``{"exists": true|false}``: whether the value is there as a leaf (a string, number,
  boolean, null or a non-empty list). An object is not a leaf: ``exists`` on it is false,
  as in EventBridge, where "exists matching only works on leaf nodes".

Every operator but ``exists`` needs the value present; on a list value it matches if any
element does (EventBridge's array rule). Plain values stay cronhook's own: casefolded
equality (see ``filters``).
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Callable

from chalicelib.domain.errors import ValidationError

__all__ = [
    "OPERATORS",
    "MISSING",
    "validate_operator",
    "match_operator",
    "leaf_values",
]

OPERATORS = (
    "prefix",
    "suffix",
    "equals-ignore-case",
    "wildcard",
    "anything-but",
    "numeric",
    "cidr",
    "exists",
)
# Inside anything-but, EventBridge takes these forms besides plain values.
_ANYTHING_BUT_FORMS = ("prefix", "suffix", "equals-ignore-case", "wildcard")
_COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    "=": lambda a, b: a == b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}
# event-ruler's numeric range: numbers beyond it cannot be compared exactly.
NUMERIC_LIMIT = 5.0e9
_MAX_STRING = 256
_MAX_VALUES = 50


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()  # the value at a path the event does not have


# --- validation -------------------------------------------------------------------------


def validate_operator(value: dict, field: str) -> None:
    """Raise ``ValidationError`` (field ``<field>.<operator>``) unless ``value`` is usable."""
    names = ", ".join(OPERATORS)
    if len(value) != 1:
        raise ValidationError(
            f"an operator is an object with exactly one key, one of {names}", field=field
        )
    ((name, argument),) = value.items()
    if name not in OPERATORS:
        raise ValidationError(f"unknown operator {name!r}; use one of {names}", field=field)
    _VALIDATORS[name](argument, f"{field}.{name}")


def _string(value: object, field: str) -> str:
    if not isinstance(value, str):
        raise ValidationError("must be a string", field=field)
    if len(value) > _MAX_STRING:
        raise ValidationError(f"at most {_MAX_STRING} characters", field=field)
    return value


def _number(value: object, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError("must be a number", field=field)
    if not math.isfinite(value) or abs(value) > NUMERIC_LIMIT:
        raise ValidationError(
            f"numbers must lie between -{NUMERIC_LIMIT:.0e} and {NUMERIC_LIMIT:.0e}", field=field
        )
    return float(value)


def _affix(value: object, field: str) -> None:
    """prefix / suffix: a string, or ``{"equals-ignore-case": string}``."""
    if isinstance(value, dict):
        if set(value) != {"equals-ignore-case"}:
            raise ValidationError('must be a string or {"equals-ignore-case": string}', field=field)
        _string(value["equals-ignore-case"], f"{field}.equals-ignore-case")
        return
    _string(value, field)


def _wildcard(value: object, field: str) -> None:
    text = _string(value, field)
    index, star_before = 0, False
    while index < len(text):
        char = text[index]
        if char == "\\":
            if index + 1 >= len(text) or text[index + 1] not in "*\\":
                raise ValidationError(
                    "a backslash may only escape * or another backslash", field=field
                )
            index += 1
        elif char == "*" and star_before:
            raise ValidationError("consecutive wildcard characters are not allowed", field=field)
        star_before = char == "*"
        index += 1


def _strings_or_one(value: object, field: str, check: Callable[[object, str], object]) -> None:
    items = value if isinstance(value, list) else [value]
    if not items or len(items) > _MAX_VALUES:
        raise ValidationError(f"give 1 to {_MAX_VALUES} values", field=field)
    for item in items:
        check(item, field)


def _anything_but(value: object, field: str) -> None:
    if isinstance(value, dict):
        if len(value) != 1 or next(iter(value)) not in _ANYTHING_BUT_FORMS:
            forms = ", ".join(_ANYTHING_BUT_FORMS)
            raise ValidationError(f"an object here takes one key, one of {forms}", field=field)
        ((form, argument),) = value.items()
        where = f"{field}.{form}"
        if form in ("prefix", "suffix"):
            _string(argument, where)
        elif form == "wildcard":
            _strings_or_one(argument, where, _wildcard)
        else:
            _strings_or_one(argument, where, _string)
        return
    items = value if isinstance(value, list) else [value]
    if not items or len(items) > _MAX_VALUES:
        raise ValidationError(f"give 1 to {_MAX_VALUES} values", field=field)
    if all(isinstance(item, str) for item in items):
        for item in items:
            _string(item, field)
        return
    if any(isinstance(item, str) for item in items):
        raise ValidationError("a list holds only strings or only numbers", field=field)
    for item in items:
        _number(item, field)


def _numeric(value: object, field: str) -> None:
    if not isinstance(value, list) or len(value) not in (2, 4):
        raise ValidationError(
            'must be [op, number] or [op, number, op, number], e.g. [">", 0, "<=", 5]',
            field=field,
        )
    ops = value[0::2]
    for op in ops:
        if op not in _COMPARISONS:
            raise ValidationError(
                f"unknown comparison {op!r}; use one of =, <, <=, >, >=", field=field
            )
    for number in value[1::2]:
        _number(number, field)
    if len(ops) == 2:
        lower = [op for op in ops if op in (">", ">=")]
        upper = [op for op in ops if op in ("<", "<=")]
        if len(lower) != 1 or len(upper) != 1:
            raise ValidationError(
                "a range is one lower bound (> or >=) and one upper bound (< or <=)", field=field
            )


def _cidr(value: object, field: str) -> None:
    try:
        ipaddress.ip_network(_string(value, field), strict=False)
    except ValueError:
        raise ValidationError("must be an IP address block like 10.0.0.0/24", field=field) from None


def _exists(value: object, field: str) -> None:
    if not isinstance(value, bool):
        raise ValidationError("must be true or false", field=field)


_VALIDATORS: dict[str, Callable[[object, str], None]] = {
    "prefix": _affix,
    "suffix": _affix,
    "equals-ignore-case": lambda value, field: _strings_or_one(value, field, _string),
    "wildcard": _wildcard,
    "anything-but": _anything_but,
    "numeric": _numeric,
    "cidr": _cidr,
    "exists": _exists,
}


# --- matching ---------------------------------------------------------------------------


def leaf_values(actual: object) -> list:
    """The leaf values at a path: none if absent or an object, each element of a list."""
    if actual is MISSING or isinstance(actual, dict):
        return []
    if isinstance(actual, list):
        return [item for item in actual if not isinstance(item, dict | list)]
    return [actual]


def match_operator(operator: dict, actual: object) -> bool:
    """True if the value at a path (``MISSING`` if absent) satisfies a validated operator."""
    ((name, argument),) = operator.items()
    values = leaf_values(actual)
    if name == "exists":
        return bool(values) is argument
    return any(_MATCHERS[name](argument, value) for value in values)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _lower(text: str) -> str:
    # event-ruler lower-cases both sides (Java's toLowerCase): not casefold, so "ß" != "ss".
    return text.lower()


def _prefix(argument: object, value: object) -> bool:
    if not isinstance(value, str):
        return False
    if isinstance(argument, dict):
        return _lower(value).startswith(_lower(argument["equals-ignore-case"]))
    return value.startswith(str(argument))


def _suffix(argument: object, value: object) -> bool:
    if not isinstance(value, str):
        return False
    if isinstance(argument, dict):
        return _lower(value).endswith(_lower(argument["equals-ignore-case"]))
    return value.endswith(str(argument))


def _equals_ignore_case(argument: object, value: object) -> bool:
    items = argument if isinstance(argument, list) else [argument]
    return isinstance(value, str) and any(_lower(value) == _lower(str(i)) for i in items)


def _wildcard_regex(pattern: str) -> re.Pattern[str]:
    parts: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            parts.append(re.escape(pattern[index + 1]))
            index += 2
            continue
        parts.append(".*" if char == "*" else re.escape(char))
        index += 1
    return re.compile("".join(parts), re.DOTALL)


def _wildcard_match(argument: object, value: object) -> bool:
    items = argument if isinstance(argument, list) else [argument]
    return isinstance(value, str) and any(
        _wildcard_regex(str(item)).fullmatch(value) is not None for item in items
    )


def _same(expected: object, value: object) -> bool:
    """EventBridge's exact equality: strings case-sensitive, numbers by value, no bool/int."""
    if isinstance(expected, str) or isinstance(value, str):
        return expected == value
    return _is_number(expected) and _is_number(value) and expected == value


def _anything_but_match(argument: object, value: object) -> bool:
    if isinstance(argument, dict):
        ((form, inner),) = argument.items()
        return not _MATCHERS[form](inner, value)
    items = argument if isinstance(argument, list) else [argument]
    return not any(_same(item, value) for item in items)


def _cidr_match(argument: object, value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        return ipaddress.ip_address(value) in ipaddress.ip_network(str(argument), strict=False)
    except ValueError:
        return False


def _numeric_match(argument: object, value: object) -> bool:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    if not isinstance(argument, list):
        return False
    pairs = zip(argument[0::2], argument[1::2], strict=True)
    return all(_COMPARISONS[op](float(value), float(bound)) for op, bound in pairs)


_MATCHERS: dict[str, Callable[[object, object], bool]] = {
    "prefix": _prefix,
    "suffix": _suffix,
    "equals-ignore-case": _equals_ignore_case,
    "wildcard": _wildcard_match,
    "anything-but": _anything_but_match,
    "numeric": _numeric_match,
    "cidr": _cidr_match,
}
