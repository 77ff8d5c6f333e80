"""What the deployed functions wrote: JSON log lines with ids, EMF metrics, never a secret."""

from __future__ import annotations

import json

from infra.monitoring import BASE_DIMENSIONS, FORBIDDEN_DIMENSIONS, METRICS

# Lines that summarise a whole invocation rather than one trigger.
SUMMARY_MESSAGES = {"heartbeat", "enqueuer"}


def _lines(scenario, function: str | None = None) -> list[tuple[str, dict]]:
    return [
        (name, json.loads(line))
        for name, line in scenario.log_lines
        if function is None or name == function
    ]


def test_no_secret_reaches_a_log_line_or_a_metric(scenario):
    # The root key, two API keys (one revoked), a bad key, a webhook secret.
    assert len(scenario.secrets) == 5
    written = [line for _, line in scenario.log_lines] + [line for _, line in scenario.stdout]
    assert written
    for secret in scenario.secrets:
        for line in written:
            assert secret not in line


def test_every_line_is_json_and_lines_about_a_run_carry_its_ids(scenario):
    lines = _lines(scenario)
    assert {name for name, _ in lines} == {
        "api_handler",
        "authorizer",
        "heartbeat",
        "runner",
        "ingest",
        "enqueuer",
        "trigger_provider",
    }
    for name, line in lines:
        assert line["service"] == "cronhook"
        assert line["level"] in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
        if name == "runner":
            assert line.get("trigger_id") and line.get("run_id"), line
            if line["run_id"].split(".", 1)[1][13:14] == "e":  # an event run's id
                assert line.get("event_id"), line
        elif name in ("heartbeat", "enqueuer") and line["message"] not in SUMMARY_MESSAGES:
            assert line.get("trigger_id"), line
    # One line per fire message handled; a redelivered message is dropped at the start fence,
    # a scheduled one that came before its slot is postponed (sent again, nothing claimed).
    # A slot the catch-up passed is recorded ``missed`` without a run (``domain/catchup``).
    handled = [line for name, line in lines if line["message"] == "fire handled"]
    ran = [line["run_id"] for line in handled if line["status"] not in ("dropped", "postponed")]
    not_run = ("lost", "missed")
    assert sorted(ran) == sorted(r["id"] for r in scenario.runs if r["status"] not in not_run)


def test_lines_of_a_request_about_a_trigger_carry_its_id(scenario):
    webhook_lines = [
        line for _, line in _lines(scenario, "api_handler") if line["message"] == "webhook accepted"
    ]
    assert len(webhook_lines) == 2
    for line in webhook_lines:
        assert line["trigger_id"] and line["event_id"] and line["run_id"]


def _emf(scenario) -> list[tuple[str, dict]]:
    """EMF documents: printed on their own, or a log line carrying them (a fire's line)."""
    records = []
    for function, line in [*scenario.stdout, *scenario.log_lines]:
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if "_aws" in doc:
            records.append((function, doc))
    return records


def test_metrics_are_emf_with_low_cardinality_dimensions_and_ids_as_properties(scenario):
    records = _emf(scenario)
    names = set()
    for _, doc in records:
        for directive in doc["_aws"]["CloudWatchMetrics"]:
            assert directive["Namespace"] == "cronhook"
            (dims,) = directive["Dimensions"]
            # The alarms name exactly these base dimensions: they must be on every metric.
            assert dims[: len(BASE_DIMENSIONS)] == list(BASE_DIMENSIONS), dims
            assert doc["stage"] == "dev" and doc["service"] == "cronhook"
            assert not FORBIDDEN_DIMENSIONS & set(dims), dims
            for metric in directive["Metrics"]:
                names.add(metric["Name"])
                assert metric["Name"] in METRICS
                assert metric["Name"] in doc  # the value is a member of the document
                extra = tuple(d for d in dims if d not in BASE_DIMENSIONS)
                assert extra in METRICS[metric["Name"]].dims, (metric["Name"], dims)
                assert all(d in doc for d in dims), (metric["Name"], dims)
    assert {"Fires", "Runs", "HeartbeatDuration", "DueCount", "Lateness"} <= names
    # A metric printed for one run (outside a runner's batch) carries its ids as properties.
    single = [doc for _, doc in records if "Runs" in doc and isinstance(doc["Runs"], list)]
    assert all(doc.get("trigger_id") and doc.get("run_id") for doc in single)


def test_a_fire_writes_one_compact_line_and_its_batch_prints_the_fires_metrics_once(scenario):
    """The runner's only line for a settled fire is its "fire handled" line: its ids, status
    and lateness, no EMF directives. The fires' ``Runs`` and ``Lateness`` are printed once
    a batch (``observability.FireMetrics``), summed and listed: as many as the lines."""
    handled = [
        line
        for name, line in _lines(scenario, "runner")
        if line["message"] == "fire handled" and line["status"] not in ("dropped", "postponed")
    ]
    assert handled
    for line in handled:
        assert "_aws" not in line and "Runs" not in line, line
        assert line["trigger_id"] and line["run_id"] and line["status"], line
    scheduled = [line for line in handled if line["surface"] == "schedule"]
    assert scheduled and all(isinstance(line["lateness_ms"], int) for line in scheduled)
    batches = [
        doc for function, doc in _emf(scenario) if function == "runner" and "message" not in doc
    ]
    runs = [doc for doc in batches if "Runs" in doc and not isinstance(doc["Runs"], list)]
    lateness = [doc for doc in batches if "Lateness" in doc and "run_id" not in doc]
    # And the slots a claim passed (catch-up), each recorded ``missed`` with its ``Runs``.
    missed = [r for r in scenario.runs if r["status"] == "missed"]
    assert sum(doc["Runs"] for doc in runs) == len(handled) + len(missed)
    assert sum(len(doc["Lateness"]) for doc in lateness) == len(scheduled)
