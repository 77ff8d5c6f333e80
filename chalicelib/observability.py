"""Logger, metrics and tracer: powertools in Lambda, the same calls locally.

Metrics go out as CloudWatch EMF (namespace ``cronhook``) with low-cardinality
dimensions only; trigger ids travel as properties or log keys, never as dimensions.
Every metric is also counted in process, so tests and benchmarks can read them.
"""

from __future__ import annotations

import functools
import os
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import MetricUnit, single_metric

__all__ = ["logger", "record_metric", "metric_counts", "reset_metric_counts", "traced", "ID_KEYS"]

logger = Logger(service="cronhook", level=os.environ.get("CRONHOOK_LOG_LEVEL", "INFO"))

# Log keys that name what a line is about; set per request/message by ``wiring``.
ID_KEYS = ("trigger_id", "run_id", "event_id")

_counts: Counter = Counter()
_lock = threading.Lock()
_UNITS = {"Count": MetricUnit.Count, "Milliseconds": MetricUnit.Milliseconds}


def record_metric(name: str, value: float = 1, *, unit: str = "Count", **dimensions: str) -> None:
    """Count ``name`` (in process) and emit it as EMF when running in Lambda."""
    with _lock:
        _counts[(name, tuple(sorted(dimensions.items())))] += value
    if os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
        with single_metric(
            name=name, unit=_UNITS.get(unit, MetricUnit.Count), value=value, namespace="cronhook"
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
