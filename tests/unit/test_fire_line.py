"""One line per fire: a fire's metrics ride on its "fire handled" line as EMF."""

from __future__ import annotations

import io
import json
import logging

import pytest

from chalicelib.observability import FIRE_LINE, logger, record_metric


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[dict] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(logger.registered_formatter.format(record)))


@pytest.fixture
def in_lambda(monkeypatch, capsys):
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "cronhook-test-runner")
    monkeypatch.setenv("CRONHOOK_STAGE", "test")
    lines = _Lines()
    handler = logger.registered_handler
    stream = handler.stream
    handler.setStream(io.StringIO())
    level = logger.log_level
    logger.setLevel("INFO")
    logger.addHandler(lines)
    yield lines, capsys
    logger.removeHandler(lines)
    logger.setLevel(level)
    handler.setStream(stream)


def _printed(capsys) -> list[dict]:
    """The EMF documents printed (pytest captures stdout)."""
    out = capsys.readouterr().out
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def _fire(*, status: str = "succeeded", line_status: str | None = "succeeded") -> None:
    ids = {"trigger_id": "trg_a", "run_id": "trg_a.1796040060000s"}
    logger.thread_safe_append_keys(**ids)
    try:
        record_metric("Runs", status=status, surface="schedule")
        record_metric("Lateness", 42.0, unit="Milliseconds")
        if line_status is not None:
            logger.info(FIRE_LINE, extra={"status": line_status, "surface": "schedule"})
    finally:
        logger.thread_safe_remove_keys(list(ids))


def test_the_fire_line_carries_runs_and_lateness_and_nothing_else_is_printed(in_lambda):
    lines, printed = in_lambda
    _fire()
    (line,) = [x for x in lines.lines if x["message"] == FIRE_LINE]
    assert line["Runs"] == 1 and line["Lateness"] == 42.0
    assert (line["service"], line["stage"], line["status"]) == ("cronhook", "test", "succeeded")
    runs, lateness = line["_aws"]["CloudWatchMetrics"]
    assert runs["Dimensions"] == [["service", "stage", "status", "surface"]]
    assert runs["Metrics"] == [{"Name": "Runs", "Unit": "Count"}]
    assert lateness["Dimensions"] == [["service", "stage"]]
    assert _printed(printed) == []


def test_a_fire_without_its_line_prints_its_metrics_when_its_ids_leave(in_lambda):
    lines, printed = in_lambda
    _fire(line_status=None)
    docs = _printed(printed)
    assert sorted(name for d in docs for name in ("Runs", "Lateness") if name in d) == [
        "Lateness",
        "Runs",
    ]
    assert all(d["run_id"] == "trg_a.1796040060000s" for d in docs)


def test_a_line_that_contradicts_a_dimension_does_not_carry_the_metrics(in_lambda):
    lines, printed = in_lambda
    _fire(status="failed", line_status="succeeded")
    (line,) = [x for x in lines.lines if x["message"] == FIRE_LINE]
    assert "_aws" not in line
    assert {d["status"] for d in _printed(printed) if "Runs" in d} == {"failed"}


def test_other_metrics_are_printed_at_once(in_lambda):
    _, printed = in_lambda
    record_metric("Disables", reason="failures")
    (doc,) = _printed(printed)
    assert doc["Disables"] == [1.0] and doc["reason"] == "failures"
