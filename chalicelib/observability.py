"""Logger, metrics and tracer: powertools in Lambda, the same calls locally.

Metrics go out as CloudWatch EMF (namespace ``cronhook``) with low-cardinality
dimensions only; trigger ids travel as properties or log keys, never as dimensions.
Every metric is also counted in process, so tests and benchmarks can read them.

One compact line per fire: the metrics of a fire (``FIRE_METRICS``: ``Runs``,
``Lateness``) recorded inside a batch of the runner (``fire_metrics_batch``) are not
printed per fire. They are gathered for the whole invocation and printed when it ends as
one EMF document per set of dimensions (``Runs`` summed, ``Lateness`` as an array of its
values, at most 100 a document, so CloudWatch's percentiles stay exact). The fire's
``"fire handled"`` line carries its lateness as a plain field (``lateness_ms``) and no
EMF directives. Logs are billed per byte ingested: a fire's own metric directives were
half its line (measured: 641 → 375 B). Outside a batch (the heartbeat recording a lost
run, the API) every metric is printed at once, as its own document. Lines about
failures stay as they are.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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
    "FireMetrics",
    "fire_metrics_batch",
    "BATCH_FIRE_METRICS",
    "log_to_file",
]

# The metrics of one fire, gathered per invocation, and the fire line's message.
FIRE_METRICS = ("Runs", "Lateness")
FIRE_LINE = "fire handled"
NAMESPACE = "cronhook"
# Switch for the bench (``bench/cost.py`` measures the lines as they were before the cut):
# False prints every fire metric at once, as its own EMF document.
BATCH_FIRE_METRICS = True

# Per thread (a batch's fires run on threads of their own): the batch's gatherer, and the
# lateness of the run whose ids the logger carries, waiting for its line.
_pending = threading.local()

logger = Logger(service="cronhook", level=os.environ.get("CRONHOOK_LOG_LEVEL", "INFO"))

# Log keys that name what a line is about; set per request/message by ``wiring``.
ID_KEYS = ("trigger_id", "run_id", "event_id")

# Values stay ints for counts (as a Counter's would) and become floats for timings.
_counts: defaultdict[tuple[Any, ...], float] = defaultdict(int)
_lock = threading.Lock()
_UNITS = {"Count": MetricUnit.Count, "Milliseconds": MetricUnit.Milliseconds}


class FireMetrics:
    """The fire metrics of one runner invocation, printed as EMF when it ends.

    Thread-safe: a batch's fires record from threads of their own. A metric that reaches
    ``MAX_VALUES`` values is printed at once (EMF's limit per metric and document).
    """

    MAX_VALUES = 100

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # (dimensions) -> {(name, unit): [values]}
        self._values: dict[tuple, dict[tuple[str, str], list[float]]] = {}

    def add(self, name: str, value: float, unit: str, dimensions: dict) -> None:
        key = tuple(sorted((k, str(v)) for k, v in dimensions.items()))
        with self._lock:
            values = self._values.setdefault(key, {}).setdefault((name, unit), [])
            values.append(value)
            if len(values) < self.MAX_VALUES:
                return
            full = {key: {(name, unit): list(values)}}
            values.clear()
        _print_documents(full)

    def flush(self) -> None:
        with self._lock:
            taken, self._values = self._values, {}
        _print_documents(taken)


def _print_documents(gathered: dict[tuple, dict[tuple[str, str], list[float]]]) -> None:
    """One EMF document per set of dimensions: counts summed, timings as value arrays."""
    stage = os.environ.get("CRONHOOK_STAGE", "dev")
    for dims, metrics in gathered.items():
        members: dict[str, Any] = {"service": "cronhook", "stage": stage, **dict(dims)}
        directives = []
        for (name, unit), values in sorted(metrics.items()):
            if not values:
                continue
            members[name] = sum(values) if unit == "Count" else values
            directives.append({"Name": name, "Unit": unit})
        if not directives:
            continue
        members["_aws"] = {
            "Timestamp": int(time.time() * 1000),
            "CloudWatchMetrics": [
                {
                    "Namespace": NAMESPACE,
                    "Dimensions": [["service", "stage", *(k for k, _ in dims)]],
                    "Metrics": directives,
                }
            ],
        }
        sys.stdout.write(json.dumps(members, separators=(",", ":")) + "\n")
    sys.stdout.flush()


@contextmanager
def fire_metrics_batch(gatherer: FireMetrics | None) -> Iterator[None]:
    """On this thread, record fire metrics into ``gatherer`` (None: print them at once)."""
    previous = getattr(_pending, "gatherer", None)
    _pending.gatherer = gatherer
    try:
        yield
    finally:
        _pending.gatherer = previous
        _pending.lateness = None


def record_metric(name: str, value: float = 1, *, unit: str = "Count", **dimensions: str) -> None:
    """Count ``name`` (in process) and emit it as EMF when running in Lambda."""
    with _lock:
        _counts[(name, tuple(sorted(dimensions.items())))] += value
    if name == "Lateness":
        _pending.lateness = value  # for the fire's line
    if not os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
        return
    gatherer = getattr(_pending, "gatherer", None)
    if name in FIRE_METRICS and gatherer is not None and BATCH_FIRE_METRICS:
        gatherer.add(name, value, unit, dict(dimensions))
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


class _FireLine(logging.Filter):
    """Puts the fire's lateness on its line, as a plain field (no EMF directives)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage() == FIRE_LINE:
            lateness = getattr(_pending, "lateness", None)
            if lateness is not None:
                record.lateness_ms = int(lateness)
            _pending.lateness = None
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


def log_to_file(path: str) -> None:
    """Also write every log line to ``path`` (the local stack: its runs' lines are read
    back by ``GET /v1/runs/{id}/logs``). One line per write, appended: the stack and its
    runner process share the file."""
    target = os.path.abspath(path)
    std = logging.getLogger(logger.service)
    for handler in std.handlers:
        if isinstance(handler, logging.FileHandler) and handler.baseFilename == target:
            return
    os.makedirs(os.path.dirname(target), exist_ok=True)
    handler = logging.FileHandler(target, encoding="utf-8")
    handler.setFormatter(logger.registered_formatter)
    std.addHandler(handler)
