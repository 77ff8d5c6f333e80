"""A stage as the template sees it: its config (``.chalice/config.json``), its functions'
names, and whether it is protected (``PROTECTED_STAGES`` keep their data when their stack
is deleted: ``infra/template.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from infra.iam import FUNCTIONS

__all__ = ["PROJECT_DIR", "PROTECTED_STAGES", "FUNCTION_SUFFIX", "StageConfig"]

PROJECT_DIR = Path(__file__).resolve().parent.parent
PROTECTED_STAGES = ("prod",)
# Function logical ids whose name we set: chalice deploy's naming, so the console matches.
FUNCTION_SUFFIX = {
    "api_handler": "api",
    "authorizer": "authorizer",
    "heartbeat": "heartbeat",
    "runner": "runner",
    "enqueuer": "enqueuer",
    "ingest": "ingest",
    "trigger_provider": "trigger_provider",
    "alerts": "alerts",
}


@dataclass(frozen=True)
class StageConfig:
    """What the template needs from ``.chalice/config.json`` for one stage."""

    stage: str
    app_name: str
    api_stage: str
    table_prefix: str
    timeouts: dict[str, int]
    memory: dict[str, int]

    @classmethod
    def load(cls, stage: str, project_dir: Path = PROJECT_DIR) -> StageConfig:
        from chalice.config import Config

        raw = json.loads((project_dir / ".chalice" / "config.json").read_text())
        if stage not in raw.get("stages", {}):
            raise SystemExit(f"stage {stage!r} is not in .chalice/config.json")
        config = Config(
            chalice_stage=stage,
            config_from_disk=raw,
            user_provided_params={"project_dir": str(project_dir)},
            default_params={},
        )
        timeouts, memory = {}, {}
        for function in FUNCTIONS:
            scoped = config.scope(stage, function)
            timeouts[function] = int(scoped.lambda_timeout or 60)
            memory[function] = int(scoped.lambda_memory_size or 128)
        env = config.scope(stage, "api_handler").environment_variables
        return cls(
            stage=stage,
            app_name=raw["app_name"],
            api_stage=config.api_gateway_stage or "api",
            table_prefix=env.get("CRONHOOK_TABLE_PREFIX", f"cronhook-{stage}-"),
            timeouts=timeouts,
            memory=memory,
        )

    def function_name(self, function: str) -> str:
        return f"{self.app_name}-{self.stage}-{FUNCTION_SUFFIX[function]}"
