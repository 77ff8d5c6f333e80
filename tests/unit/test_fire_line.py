"""One compact line per fire; a batch's fire metrics printed once, as EMF, when it ends."""

from __future__ import annotations

import io
import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from chalicelib.observability import (
    FIRE_LINE,
    FireMetrics,
    fire_metrics_batch,
    logger,
    record_metric,
)
from tests.scenarios import LogLines


@pytest.fixture
def in_lambda(monkeypatch, capsys):
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "cronhook-test-runner")
    monkeypatch.setenv("CRONHOOK_STAGE", "test")
    lines = LogLines()
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


def _fire(
    *,
    status: str = "succeeded",
    line_status: str | None = "succeeded",
    lateness: float = 42.0,
    run: str = "trg_a.1796040060000s",
) -> None:
    ids = {"trigger_id": "trg_a", "run_id": run}
    logger.thread_safe_append_keys(**ids)
    try:
        record_metric("Runs", status=status, surface="schedule")
        record_metric("Lateness", lateness, unit="Milliseconds")
        if line_status is not None:
            logger.info(FIRE_LINE, extra={"status": line_status, "surface": "schedule"})
    finally:
        logger.thread_safe_remove_keys(list(ids))


def _batch(fires: list[dict]) -> FireMetrics:
    gathered = FireMetrics()
    for kwargs in fires:
        with fire_metrics_batch(gathered):
            _fire(**kwargs)
    return gathered


def test_the_fire_line_carries_its_lateness_and_no_emf_directives(in_lambda):
    lines, printed = in_lambda
    gathered = _batch([{}])
    (line,) = [x for x in lines.lines if x["message"] == FIRE_LINE]
    assert line["lateness_ms"] == 42 and line["status"] == "succeeded"
    assert "_aws" not in line and "Runs" not in line and "Lateness" not in line
    assert _printed(printed) == []  # nothing printed until the batch ends
    gathered.flush()
    assert len(_printed(printed)) == 2  # Runs (status, surface) and Lateness (no dims)


def test_a_batch_prints_one_document_per_set_of_dimensions_counts_summed_timings_listed(
    in_lambda,
):
    _, printed = in_lambda
    gathered = _batch(
        [
            {"lateness": 10.0, "run": "trg_a.1"},
            {"lateness": 20.0, "run": "trg_a.2"},
            {"lateness": 30.0, "run": "trg_a.3", "status": "failed", "line_status": "failed"},
        ]
    )
    gathered.flush()
    docs = _printed(printed)
    runs = {d["status"]: d for d in docs if "Runs" in d}
    assert (runs["succeeded"]["Runs"], runs["failed"]["Runs"]) == (2, 1)
    directive = runs["succeeded"]["_aws"]["CloudWatchMetrics"][0]
    assert directive["Dimensions"] == [["service", "stage", "status", "surface"]]
    assert directive["Metrics"] == [{"Name": "Runs", "Unit": "Count"}]
    assert (runs["succeeded"]["service"], runs["succeeded"]["stage"]) == ("cronhook", "test")
    (lateness,) = [d for d in docs if "Lateness" in d]
    assert lateness["Lateness"] == [10.0, 20.0, 30.0]
    assert lateness["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["service", "stage"]]
    assert lateness["_aws"]["CloudWatchMetrics"][0]["Metrics"] == [
        {"Name": "Lateness", "Unit": "Milliseconds"}
    ]
    gathered.flush()
    assert _printed(printed) == []  # printed once


def test_a_fire_without_its_line_still_has_its_metrics_printed_with_the_batch(in_lambda):
    lines, printed = in_lambda
    gathered = _batch([{"line_status": None}])
    assert not [x for x in lines.lines if x["message"] == FIRE_LINE]
    gathered.flush()
    docs = _printed(printed)
    assert sorted(name for d in docs for name in ("Runs", "Lateness") if name in d) == [
        "Lateness",
        "Runs",
    ]


def test_a_metric_with_a_hundred_values_is_printed_before_the_batch_ends(in_lambda):
    _, printed = in_lambda
    gathered = _batch([{"lateness": float(n), "run": f"trg_a.{n}"} for n in range(100)])
    docs = _printed(printed)
    (full,) = [d for d in docs if "Lateness" in d]
    assert full["Lateness"] == [float(n) for n in range(100)]
    assert [d["Runs"] for d in docs if "Runs" in d] == [100]
    gathered.flush()
    assert _printed(printed) == []


def test_a_batch_s_fires_on_threads_of_their_own_are_all_counted(in_lambda):
    _, printed = in_lambda
    gathered = FireMetrics()

    def one(n: int) -> None:
        with fire_metrics_batch(gathered):
            _fire(lateness=float(n), run=f"trg_a.{n}")

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(one, range(50)))
    gathered.flush()
    docs = _printed(printed)
    assert [d["Runs"] for d in docs if "Runs" in d] == [50]
    (lateness,) = [d for d in docs if "Lateness" in d]
    assert sorted(lateness["Lateness"]) == [float(n) for n in range(50)]


def test_outside_a_batch_a_fire_metric_is_printed_at_once(in_lambda):
    _, printed = in_lambda
    _fire()
    docs = _printed(printed)
    assert {d["status"] for d in docs if "Runs" in d} == {"succeeded"}
    assert [d["Lateness"] for d in docs if "Lateness" in d] == [[42.0]]
    assert all(d["run_id"] == "trg_a.1796040060000s" for d in docs)


def test_other_metrics_are_printed_at_once(in_lambda):
    _, printed = in_lambda
    gathered = FireMetrics()
    with fire_metrics_batch(gathered):
        record_metric("Disables", reason="failures")
    (doc,) = _printed(printed)
    assert doc["Disables"] == [1.0] and doc["reason"] == "failures"


def test_the_runner_s_batch_prints_the_fires_metrics_once_it_ends(in_lambda, monkeypatch):
    """``fire_batch.run_batch`` gathers its fires' metrics and prints them at its end."""
    from chalicelib import fire_batch
    from chalicelib.store.sqs import FireMessage

    _, printed = in_lambda

    class Runner:
        def handle(self, message):
            record_metric("Runs", status="succeeded", surface="schedule")
            record_metric("Lateness", 5.0, unit="Milliseconds")
            return "succeeded"

    body = FireMessage(run_id="trg_a.1s", trigger_id="trg_a", surface="manual").body()
    records = [
        {"messageId": f"m{n}", "body": body, "receiptHandle": "r", "attributes": {}}
        for n in range(3)
    ]
    monkeypatch.setattr(fire_batch, "start_margin_ms", lambda: 0)
    answer = fire_batch.run_batch({"Records": records}, runner=Runner())
    assert answer == {"batchItemFailures": []}
    docs = _printed(printed)
    assert [d["Runs"] for d in docs if "Runs" in d] == [3]
    assert [d["Lateness"] for d in docs if "Lateness" in d] == [[5.0, 5.0, 5.0]]
