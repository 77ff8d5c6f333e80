"""What ``infra/deploy.py`` is told (``DeployOptions``), how it talks (to the operator and
to AWS), and which region it deploys to."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra.stage import PROJECT_DIR

__all__ = ["DeployOptions", "resolve_region"]


@dataclass
class DeployOptions:
    """Where and how to deploy."""

    stage: str
    stack_name: str = ""
    region: str | None = None
    bucket: str | None = None
    parameters: dict[str, str] = field(default_factory=dict)
    endpoint_url: str | None = None
    expand_sam: bool = False
    execute: bool = True
    create_root_key: bool = False
    build_dir: Path | None = None
    poll_s: float = 10.0
    # A ROLLBACK_COMPLETE stack: True deletes it, False refuses, None asks (if interactive).
    delete_failed: bool | None = None
    # Whether to prompt (default: stdin is a terminal); ``ask`` answers prompts (tests).
    interactive: bool | None = None
    ask: Callable[[str], str] | None = None
    # Tests only: a last change to the expanded template (moto lacks some resource types).
    adapt: Callable[[dict], dict] | None = None

    def __post_init__(self) -> None:
        self.stack_name = self.stack_name or f"cronhook-{self.stage}"
        self.build_dir = self.build_dir or PROJECT_DIR / "build" / self.stage


def _say(message: str) -> None:
    print(message, flush=True)


def _loud(lines: list[str]) -> None:
    bar = "!" * 78
    _say("\n".join([bar, *(f"!! {line}" for line in lines), bar]))


def _interactive(options: DeployOptions) -> bool:
    if options.interactive is not None:
        return options.interactive
    return sys.stdin.isatty()


def _ask(options: DeployOptions, question: str) -> str:
    if options.ask is not None:
        return options.ask(question)
    return input(question)


def resolve_region(explicit: str | None, session: Any) -> str:
    """``--region``, else ``AWS_REGION``, else ``AWS_DEFAULT_REGION``/the profile's region."""
    region = explicit or os.environ.get("AWS_REGION") or session.region_name
    if not region:
        raise SystemExit(
            "no AWS region: pass --region, or set AWS_REGION, or set a region in your "
            "profile (aws configure set region <region>)"
        )
    return region


class _Aws:
    def __init__(self, options: DeployOptions):
        import boto3

        session = boto3.session.Session()
        self.region = resolve_region(options.region, session)
        self.session = boto3.session.Session(region_name=self.region)
        self.endpoint_url = options.endpoint_url

    def client(self, name: str) -> Any:
        return self.session.client(name, region_name=self.region, endpoint_url=self.endpoint_url)
