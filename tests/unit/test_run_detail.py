"""domain/run_detail.py and the pure parts of services/run_logs.py."""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import unquote

import pytest

from chalicelib.domain.run_detail import (
    PAYLOAD_LIMIT_BYTES,
    clip_payload,
    detail_to_keep,
    duration_of,
    http_error_detail,
    lambda_error_detail,
)
from chalicelib.services.run_logs import insights_console_url, insights_query, lines_of_run


def test_a_lambda_function_error_keeps_its_type_message_and_stack():
    detail = lambda_error_detail(
        "Unhandled",
        {
            "errorType": "KeyError",
            "errorMessage": "'customer'",
            "stackTrace": [
                '  File "/var/task/app.py", line 9, in handler\n',
                "    x = e['customer']\n",
            ],
        },
    )
    assert detail["type"] == "KeyError"
    assert detail["message"] == "'customer'"
    assert detail["traceback"] == (
        "  File \"/var/task/app.py\", line 9, in handler\n    x = e['customer']"
    )


def test_a_lambda_error_without_a_json_answer_keeps_what_it_said():
    detail = lambda_error_detail("Unhandled", "Task timed out after 3.00 seconds")
    assert (detail["type"], detail["message"], detail["traceback"]) == (
        "Unhandled",
        "Task timed out after 3.00 seconds",
        None,
    )


def test_an_http_refusal_keeps_its_status_and_the_first_kilobyte_of_its_answer():
    detail = http_error_detail(503, b"x" * 5000)
    assert detail["status"] == 503
    assert detail["type"] == "HTTP 503"
    assert detail["traceback"] == "x" * 1024


@pytest.mark.parametrize(
    ("payload", "clipped"),
    [({"n": 1}, False), ("x" * (PAYLOAD_LIMIT_BYTES - 2), False), ("é" * 4000, True)],
)
def test_a_payload_is_kept_whole_up_to_4_kb_then_clipped(payload, clipped):
    kept, was_clipped = clip_payload(payload)
    assert was_clipped is clipped
    if clipped:
        assert len(kept.encode()) <= PAYLOAD_LIMIT_BYTES and kept.endswith("...[clipped]")
    else:
        assert kept == payload


@pytest.mark.parametrize(
    ("failed", "given", "rerun_of", "kept"),
    [
        (False, False, None, None),  # a success on the trigger's payload: no write
        (False, True, None, {"payload": {"p": 1}}),
        (False, False, "t.1m", {"rerun_of": "t.1m"}),
        (True, False, None, {"error_detail": {"type": "E"}, "payload": {"p": 1}}),
    ],
)
def test_the_detail_item_is_written_only_when_there_is_something_to_keep(
    failed, given, rerun_of, kept
):
    detail = detail_to_keep(
        failed=failed,
        error_detail={"type": "E"} if failed else None,
        payload_given=given,
        payload={"p": 1},
        rerun_of=rerun_of,
    )
    assert detail == kept


def test_a_duration_needs_a_start_and_an_end():
    assert duration_of(1000, 1750) == 750
    assert duration_of(1000, None) is None


def test_log_lines_are_those_of_the_run_oldest_first():
    lines = [
        '{"level":"INFO","message":"a","timestamp":"2026-12-04 16:51:43,931+0000","run_id":"t.1s"}',
        '{"level":"INFO","message":"other run","run_id":"t.1s2"}',
        "t.1s but not json",
        '{"level":"WARNING","message":"b","timestamp":"2026-12-04 16:51:44,000+0000",'
        '"run_id":"t.1s","why":"raced"}',
    ]
    assert lines_of_run(lines, "t.1s") == [
        {"at": "2026-12-04T16:51:43.931Z", "level": "INFO", "message": "a"},
        {"at": "2026-12-04T16:51:44.000Z", "level": "WARNING", "message": "b why=raced"},
    ]


def test_the_logs_insights_query_and_its_console_link_name_the_run():
    query = insights_query('trg_1.1893999600000s"')
    assert 'filter run_id = "trg_1.1893999600000s\\""' in query
    url = insights_console_url(
        region="eu-west-1",
        groups=["/aws/lambda/cronhook-prod-runner"],
        query=query,
        start=datetime(2026, 12, 4, 16, tzinfo=UTC),
        end=datetime(2026, 12, 4, 18, tzinfo=UTC),
    )
    assert url.startswith(
        "https://eu-west-1.console.aws.amazon.com/cloudwatch/home?region=eu-west-1"
    )
    assert "logs-insights" in url
    decoded = unquote(url.split("queryDetail$3D", 1)[1].replace("*", "%"))
    assert "trg_1.1893999600000s" in decoded
    assert "/aws/lambda/cronhook-prod-runner" in decoded
