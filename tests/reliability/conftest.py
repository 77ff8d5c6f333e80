"""Fixtures of the reliability tests (their helpers are in tests/scenarios.py)."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.scenarios import EXECUTIONS


@pytest.fixture
def executions() -> Counter:
    """The execution counter of ``count-executions``, empty at the start of the test."""
    EXECUTIONS.clear()
    return EXECUTIONS
