"""Logger, metrics and tracer: powertools in Lambda, the same calls locally.

Metrics go out as CloudWatch EMF (namespace ``cronhook``) with low-cardinality
dimensions only; trigger ids travel as properties or log keys, never as dimensions.
Every metric is also counted in process, so tests and benchmarks can read them.

One line per fire: the metrics of a fire (``FIRE_METRICS``: ``Runs``, ``Lateness``) are
not printed as EMF documents of their own but ride on the fire's ``"fire handled"`` log
line, which becomes the EMF document (CloudWatch extracts metrics from any JSON log line
with an ``_aws`` member). A fire that ends without that line (it raised) has its metrics
printed as their own documents when its ids leave the logger. Lines about failures stay
as they are. Logs are billed per byte ingested: ~1 KB a fire was half the price of the
fire's DynamoDB writes.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import MetricUnit, single_metric

__all__ = [
    "logger",
    "record_metric",
    "metric_counts",
    "reset_metric_counts",
    "traced",
    "ID_KEYS",
    "FIRE_METRICS",
    "FIRE_LINE",
    "FIRE_LINE_FILTER",
]

# The metrics of one fire, carried by its log line, and that line's message.
FIRE_METRICS = ("Runs", "Lateness")
FIRE_LINE = "fire handled"
NAMESPACE = "cronhook"

# Per thread (a batch's fires may run on threads of their own): the fire metrics recorded
# for the run whose ids the logger carries, waiting for its line. Each is
# (run_id, name, value, unit, dimensions).
_pending = threading.local()


def _waiting() -> list[tuple[str, str, float, str, dict]]:
    found = getattr(_pending, "metrics", None)
    if found is None:
        found = _pending.metrics = []
    return found


class _FireLogger(Logger):
    """powertools' Logger, printing a fire's unclaimed metrics when its ids are removed."""

    def thread_safe_remove_keys(self, keys: Any) -> None:
        if "run_id" in keys:
            _flush_waiting()
        super().thread_safe_remove_keys(keys)


logger = _FireLogger(service="cronhook", level=os.environ.get("CRONHOOK_LOG_LEVEL", "INFO"))

# Log keys that name what a line is about; set per request/message by ``wiring``.
ID_KEYS = ("trigger_id", "run_id", "event_id")

# Values stay ints for counts (as a Counter's would) and become floats for timings.
_counts: defaultdict[tuple[Any, ...], float] = defaultdict(int)
_lock = threading.Lock()
_UNITS = {"Count": MetricUnit.Count, "Milliseconds": MetricUnit.Milliseconds}


def record_metric(name: str, value: float = 1, *, unit: str = "Count", **dimensions: str) -> None:
    """Count ``name`` (in process) and emit it as EMF when running in Lambda."""
    with _lock:
        _counts[(name, tuple(sorted(dimensions.items())))] += value
    if not os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
        return
    run_id = logger.thread_safe_get_current_keys().get("run_id")
    if name in FIRE_METRICS and run_id:
        waiting = _waiting()
        if waiting and waiting[0][0] != run_id:
            _flush_waiting()  # an earlier fire's, never claimed by its line
        waiting.append((str(run_id), name, value, unit, dict(dimensions)))
        return
    _emit(name, value, unit, dimensions)


def _emit(name: str, value: float, unit: str, dimensions: dict) -> None:
    with single_metric(
        name=name, unit=_UNITS.get(unit, MetricUnit.Count), value=value, namespace=NAMESPACE
    ) as metric:
        # Set explicitly: powertools adds "service" only when POWERTOOLS_SERVICE_NAME is
        # set, and an alarm matches a metric only if every dimension matches.
        metric.add_dimension(name="service", value="cronhook")
        metric.add_dimension(name="stage", value=os.environ.get("CRONHOOK_STAGE", "dev"))
        for key, dim_value in dimensions.items():
            metric.add_dimension(name=key, value=str(dim_value))
        # The ids of the run being handled ride along as EMF properties: searchable in
        # Logs Insights, never dimensions (one metric per trigger would be billed each).
        for key, id_value in logger.thread_safe_get_current_keys().items():
            if key in ID_KEYS and id_value:
                metric.add_metadata(key=key, value=str(id_value))


def _flush_waiting() -> None:
    waiting = _waiting()
    for _run_id, name, value, unit, dimensions in waiting:
        _emit(name, value, unit, dimensions)
    waiting.clear()


def _fire_fields(record: logging.LogRecord) -> dict | None:
    """The EMF members that make a fire's line carry its metrics (None: they do not fit)."""
    run_id = logger.thread_safe_get_current_keys().get("run_id")
    waiting = _waiting()
    if not waiting or not run_id or any(w[0] != str(run_id) for w in waiting):
        return None
    fields: dict[str, Any] = {
        "service": "cronhook",
        "stage": os.environ.get("CRONHOOK_STAGE", "dev"),
    }
    directives = []
    for _run_id, name, value, unit, dimensions in waiting:
        for key, dim_value in dimensions.items():
            # A dimension is a top-level member: it must not contradict the line's own.
            if str(getattr(record, key, dim_value)) != str(dim_value) or name in fields:
                return None
            fields[key] = str(dim_value)
        fields[name] = value
        directives.append(
            {
                "Namespace": NAMESPACE,
                "Dimensions": [["service", "stage", *dimensions]],
                "Metrics": [{"Name": name, "Unit": unit}],
            }
        )
    fields["_aws"] = {"Timestamp": int(time.time() * 1000), "CloudWatchMetrics": directives}
    return fields


class _FireLine(logging.Filter):
    """Puts the waiting fire metrics on the fire's line (in Lambda only, where they wait)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage() == FIRE_LINE:
            fields = _fire_fields(record)
            if fields is not None:
                for key, value in fields.items():
                    setattr(record, key, value)
                _waiting().clear()
        return True


# The filter itself is public so that the bench can measure the lines without it.
FIRE_LINE_FILTER = _FireLine()
logger.addFilter(FIRE_LINE_FILTER)


def metric_counts(name: str | None = None) -> dict:
    """In-process totals: ``{(name, dims): value}``, or ``{dims: value}`` for one name."""
    with _lock:
        if name is None:
            return dict(_counts)
        return {dims: v for (n, dims), v in _counts.items() if n == name}


def reset_metric_counts() -> None:
    """Forget the in-process totals."""
    with _lock:
        _counts.clear()


_tracer: Any = None
_tracer_lock = threading.Lock()


def _get_tracer() -> Any:
    global _tracer
    with _tracer_lock:
        if _tracer is None:
            from aws_lambda_powertools import Tracer

            # Patches botocore, so every AWS call becomes an X-Ray subsegment.
            _tracer = Tracer(service="cronhook")
        return _tracer


def traced(func: Callable[..., Any]) -> Callable[..., Any]:
    """An X-Ray subsegment around ``func`` in Lambda; a plain call elsewhere.

    The tracer is built on the first traced call in Lambda only: importing the X-Ray
    SDK costs about 0.3 s, which local runs and tests should not pay. Return values are
    never recorded (a create answer carries a webhook secret once).
    """
    wrapped: Callable[..., Any] | None = None

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nonlocal wrapped
        if wrapped is None:
            if os.environ.get("LAMBDA_TASK_ROOT"):
                wrapped = _get_tracer().capture_method(func, capture_response=False)
            else:
                wrapped = func
        return wrapped(*args, **kwargs)

    return wrapper
