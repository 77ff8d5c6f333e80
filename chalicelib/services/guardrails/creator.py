"""The creator: a trigger fires only while the key that created it exists and is an operator."""

from __future__ import annotations

from chalicelib.services.auth import principal_still_allowed
from chalicelib.services.pipeline import Refusal, RunContext, RunPolicy

__all__ = ["CreatorPolicy", "creator_guard"]


def creator_guard(ctx: RunContext) -> Refusal | None:
    """Refuse (and disable with ``creator_gone``) a fire whose creator key is gone or demoted."""
    item = ctx.item
    if principal_still_allowed(item.created_by, item.tenant, "operator"):
        return None
    return Refusal(
        "refused",
        f"the key that created this trigger ({item.created_by}) was deleted or no longer "
        "has the operator role; recreate the trigger with a current key",
        reason="creator_gone",
    )


class CreatorPolicy(RunPolicy):
    """``check``: the trigger's creator key still exists and is an operator (``creator_guard``)."""

    name = "creator"

    def check(self, ctx: RunContext) -> Refusal | None:
        return creator_guard(ctx)
