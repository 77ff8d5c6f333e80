"""Logger, metrics and tracer: powertools in Lambda, the same calls locally.

Metrics go out as CloudWatch EMF (namespace ``cronhook``) with low-cardinality
dimensions only; trigger ids travel as properties or log keys, never as dimensions.
Every metric is also counted in process, so tests and benchmarks can read them.
"""

from __future__ import annotations

import os
import threading
from collections import Counter

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import MetricUnit, single_metric

__all__ = ["logger", "record_metric", "metric_counts", "reset_metric_counts"]

logger = Logger(service="cronhook", level=os.environ.get("CRONHOOK_LOG_LEVEL", "INFO"))

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
            metric.add_dimension(name="stage", value=os.environ.get("CRONHOOK_STAGE", "dev"))
            for key, dim_value in dimensions.items():
                metric.add_dimension(name=key, value=str(dim_value))


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
