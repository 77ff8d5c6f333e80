"""The body of ``PUT /v1/triggers/by-key/{key}``: a create body, labelled by its tool."""

from __future__ import annotations

from pydantic import Field

from chalicelib.domain.spec.triggers import TriggerIn
from chalicelib.domain.trigger_keys import KEY_PATTERN, MANAGED_BY_PATTERN

__all__ = ["TriggerByKeyIn"]


class TriggerByKeyIn(TriggerIn):
    """A create body; ``key`` may repeat the path's, ``managed_by`` names the tool."""

    key: str | None = Field(default=None, pattern=KEY_PATTERN)
    managed_by: str | None = Field(default=None, pattern=MANAGED_BY_PATTERN)
