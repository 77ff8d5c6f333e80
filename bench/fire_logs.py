"""The log lines of a fire: written as the deployed functions write them, counted in bytes.

``as_in_lambda`` logs as the deployed functions do (INFO, EMF on) and captures every line
instead of printing it; ``log_bytes`` counts what was written, by kind; ``per_fire_logs``
adds Lambda's platform lines and CloudWatch's metadata per event (``bench.prices``) and
divides by the fires.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
from collections import defaultdict
from collections.abc import Iterator

from bench.prices import EVENT_OVERHEAD_BYTES, PLATFORM_LINE_BYTES

__all__ = ["LineCapture", "as_in_lambda", "log_bytes", "per_fire_logs"]


class LineCapture(logging.Handler):
    """The app logger's lines as its powertools formatter writes them, in bytes per kind."""

    def __init__(self) -> None:
        super().__init__()
        self.bytes: dict[str, int] = defaultdict(int)
        self.events: dict[str, int] = defaultdict(int)

    def emit(self, record: logging.LogRecord) -> None:
        from chalicelib.observability import FIRE_LINE, logger

        line = logger.registered_formatter.format(record)
        kind = "fire line" if record.getMessage() == FIRE_LINE else "other lines"
        if record.getMessage() == "heartbeat":
            kind = "heartbeat lines"
        self.bytes[kind] += len(line.encode())
        self.events[kind] += 1


@contextlib.contextmanager
def as_in_lambda(*, compact: bool) -> Iterator[tuple[LineCapture, io.StringIO]]:
    """Log as the deployed functions do (INFO, EMF on); capture instead of printing.

    ``compact`` False takes the fire-line filter off and the batch's gathering of fire
    metrics: each fire metric is then printed as an EMF document of its own, as before
    the cut.
    """
    from chalicelib import observability
    from chalicelib.observability import FIRE_LINE_FILTER, logger

    capture = LineCapture()
    printed = io.StringIO()
    handler = logger.registered_handler
    stream = getattr(handler, "stream", None)
    level = logger.log_level
    saved = os.environ.get("AWS_LAMBDA_FUNCTION_NAME")
    os.environ["AWS_LAMBDA_FUNCTION_NAME"] = "cronhook-bench-runner"
    logger.setLevel("INFO")
    logger.addHandler(capture)
    if hasattr(handler, "setStream"):
        handler.setStream(io.StringIO())  # the lines are counted by ``capture``
    if not compact:
        logger.removeFilter(FIRE_LINE_FILTER)
        observability.BATCH_FIRE_METRICS = False
    try:
        with contextlib.redirect_stdout(printed):
            yield capture, printed
    finally:
        logger.addFilter(FIRE_LINE_FILTER)
        observability.BATCH_FIRE_METRICS = True
        if stream is not None and hasattr(handler, "setStream"):
            handler.setStream(stream)
        logger.removeHandler(capture)
        logger.setLevel(level)
        if saved is None:
            os.environ.pop("AWS_LAMBDA_FUNCTION_NAME", None)
        else:
            os.environ["AWS_LAMBDA_FUNCTION_NAME"] = saved


def log_bytes(capture: LineCapture, printed: io.StringIO) -> dict:
    """Bytes and events written, by kind (EMF documents printed on their own apart)."""
    out = {k: {"bytes": v, "events": capture.events[k]} for k, v in capture.bytes.items()}
    emf = [line for line in printed.getvalue().splitlines() if line.startswith("{")]
    out["emf documents"] = {"bytes": sum(len(x.encode()) for x in emf), "events": len(emf)}
    return out


def per_fire_logs(measured: dict, fires: int, invocations: int, *, traced: bool) -> dict:
    """Log bytes per fire by kind, platform lines and event overhead included."""
    platform = PLATFORM_LINE_BYTES["start"] + PLATFORM_LINE_BYTES["end"]
    platform += PLATFORM_LINE_BYTES["report"] + (PLATFORM_LINE_BYTES["xray"] if traced else 0)
    rows = {k: v["bytes"] / fires for k, v in measured.items()}
    rows["platform lines (modelled)"] = platform * invocations / fires
    events = sum(v["events"] for v in measured.values()) + invocations * (4 if traced else 3)
    rows["event metadata"] = EVENT_OVERHEAD_BYTES * events / fires
    return {k: round(v, 1) for k, v in rows.items()}
