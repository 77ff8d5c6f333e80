"""The runner: runs fire messages through the run pipeline (``core.Runner``).

Built in one place, ``chalicelib.assembly.build_runner``, with its ``Pipeline``.
"""

from __future__ import annotations

from chalicelib.services.pipeline import Refusal, RunContext
from chalicelib.services.runner.core import Runner
from chalicelib.services.runner.settle import OUTPUT_LIMIT_BYTES, check_result
from chalicelib.services.runner.timing import (
    RESEND_FROM_RECEIVE,
    START_MARGIN_S,
    start_margin_ms,
    time_left_ms,
)

__all__ = [
    "OUTPUT_LIMIT_BYTES",
    "START_MARGIN_S",
    "RESEND_FROM_RECEIVE",
    "start_margin_ms",
    "time_left_ms",
    "check_result",
    "Refusal",
    "RunContext",
    "Runner",
]
