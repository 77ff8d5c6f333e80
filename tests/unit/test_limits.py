"""What a request may hold: nesting depth, the answer for a body too deep, secret names."""

from __future__ import annotations

import json

import pytest

from chalicelib.domain.errors import ValidationError
from chalicelib.domain.limits import (
    MAX_JSON_DEPTH,
    depth_over,
    nested_too_deep,
    secret_path_problem,
    too_deep_error,
)


def nested(depth: int, inner: object = 1) -> object:
    """A value `depth` levels deep, alternating lists and objects."""
    value = inner
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


@pytest.mark.parametrize(
    ("value", "limit", "over"),
    [
        (1, 0, False),  # a scalar has no depth
        ({}, 1, False),
        ({}, 0, True),
        (nested(3), 3, False),
        (nested(4), 3, True),
        ([1, [2, [3]]], 3, False),
        ([1, [2, [3, []]]], 3, True),
        ({"a": 1, "b": {"c": [{"d": 0}]}}, 4, False),
        ({"a": 1, "b": {"c": [{"d": {}}]}}, 4, True),
        (nested(MAX_JSON_DEPTH), MAX_JSON_DEPTH, False),
        (nested(MAX_JSON_DEPTH + 1), MAX_JSON_DEPTH, True),
        (nested(5000), MAX_JSON_DEPTH, True),  # iterative: no RecursionError
    ],
)
def test_depth_over_counts_the_nesting_of_lists_and_objects(value, limit, over):
    assert depth_over(value, limit) is over


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('{"state": ' + "[" * 2000 + "]" * 2000 + "}", "state"),
        ('{"workflow": "echo", "payload": ' + '{"a":' * 2000 + "1" + "}" * 2000 + "}", "payload"),
        # A key that looks like a string inside another value is not the field.
        ('{"note": "\\"x\\": [", "filter": ' + "[" * 100 + "]" * 100 + "}", "filter"),
        ("[" * 2000 + "]" * 2000, None),  # not an object: the body itself
    ],
)
def test_too_deep_error_names_the_top_level_field_that_nests_too_deep(body, field):
    error = too_deep_error(body.encode())
    assert isinstance(error, ValidationError)
    assert error.field == field
    assert error.STATUS_CODE == 422
    assert f"nested more than {MAX_JSON_DEPTH} levels deep" in str(error)


def test_too_deep_error_reads_text_and_bytes_alike():
    body = '{"state": ' + "[" * 100 + "]" * 100 + "}"
    assert too_deep_error(body).field == too_deep_error(body.encode()).field == "state"


def test_a_body_json_cannot_parse_for_depth_is_one_too_deep_error_can_name():
    body = '{"state": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(RecursionError):
        json.loads(body)
    assert too_deep_error(body).field == "state"


@pytest.mark.parametrize(
    ("field", "text"),
    [
        ("state", "state is nested more than 64 levels deep"),
        (None, "the body is nested more than 64 levels deep"),
    ],
)
def test_nested_too_deep_says_what_and_how_deep(field, text):
    error = nested_too_deep(field)
    assert str(error) == text
    assert error.field == field


@pytest.mark.parametrize(
    "name",
    ["db", "team-a/db", "team_a/prod.db/password", "a" * 200, "x.y", "..a", "v1.2-final"],
)
def test_valid_secret_names_have_no_problem(name):
    assert secret_path_problem(name) is None


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("", "must be 1 to 200 characters"),
        ("a" * 201, "must be 1 to 200 characters"),
        (None, "must be 1 to 200 characters"),
        ("/db", "single '/' separators"),
        ("db/", "single '/' separators"),
        ("team//db", "single '/' separators"),
        ("team db", "letters, digits"),
        ("tëam", "letters, digits"),
        ("..", "may not contain a '.' or '..' segment"),
        ("team/../other", "may not contain a '.' or '..' segment"),
        ("./db", "may not contain a '.' or '..' segment"),
    ],
)
def test_invalid_secret_names_say_what_is_wrong(name, problem):
    found = secret_path_problem(name)
    assert found is not None and problem in found
