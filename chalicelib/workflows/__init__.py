"""The workflow API: register Python workflows, and the Fire/Result they exchange.

```python
from chalicelib.workflows import workflow, Fire, Result, WorkflowFailed

@workflow("rss-repurposer", state_schema={...})
def rss_repurposer(fire: Fire) -> Result:
    return Result(state={...}, output={...})
```
"""

from __future__ import annotations

# The package is the public face; its modules import each other, never the package:
# model (Fire, Result, errors) <- registry (``@workflow``, built-ins) <- builtin.
from chalicelib.workflows.model import (
    DestructiveRefused,
    Fire,
    Policy,
    Result,
    Workflow,
    WorkflowFailed,
    _iso,  # noqa: F401 (tests import it from here)
)
from chalicelib.workflows.registry import REGISTRY, get_workflow, is_known_target, workflow

__all__ = [
    "workflow",
    "Fire",
    "Result",
    "Policy",
    "WorkflowFailed",
    "DestructiveRefused",
    "Workflow",
    "REGISTRY",
    "get_workflow",
    "is_known_target",
]
