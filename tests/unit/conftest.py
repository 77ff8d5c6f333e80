"""Fixtures shared by the unit tests on the in-memory store twin."""

from tests.memory_store import no_aws

__all__ = ["no_aws"]
