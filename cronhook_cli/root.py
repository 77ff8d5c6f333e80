"""The ``cronhook`` group: its options, every command under it, and the console script."""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, version

import click

from cronhook_cli.alerts import alerts
from cronhook_cli.as_code import apply, diff, export
from cronhook_cli.client import DEFAULT_TIMEOUT_S, DEFAULT_URL, Client
from cronhook_cli.context import OUTPUT_HELP
from cronhook_cli.keys import keys
from cronhook_cli.output import OUTPUT_META_KEY, OUTPUTS
from cronhook_cli.parsing import check_url
from cronhook_cli.preview import preview
from cronhook_cli.runs import list_audit, list_events, list_runs, list_workflows, replay
from cronhook_cli.simulate import simulate
from cronhook_cli.trigger_actions import backfill, pause, resume, rotate_secret
from cronhook_cli.triggers import triggers
from cronhook_cli.watch import watch

__all__ = ["cli", "main"]


def _version() -> str:
    try:
        return version("cronhook")
    except PackageNotFoundError:
        return "unknown"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    _version(), "--version", "-V", prog_name="cronhook", message="%(prog)s %(version)s"
)
@click.option(
    "--url",
    envvar="CRONHOOK_URL",
    default=DEFAULT_URL,
    show_default=True,
    callback=check_url,
    help="Base URL of the cronhook API [env CRONHOOK_URL].",
)
@click.option(
    "--api-key",
    envvar="CRONHOOK_API_KEY",
    default=None,
    help="API key, sent as a Bearer token [env CRONHOOK_API_KEY].",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_TIMEOUT_S,
    show_default=True,
    help="Seconds to wait for each answer.",
)
@click.option("-o", "--output", type=click.Choice(OUTPUTS), default=None, help=OUTPUT_HELP)
@click.pass_context
def cli(
    ctx: click.Context, url: str, api_key: str | None, timeout_s: float, output: str | None
) -> None:
    """Manage cronhook triggers and runs from the command line.

    Every option of this group is also accepted after the subcommand. Shell completion:
    see docs/cli.md (eval "$(_CRONHOOK_COMPLETE=bash_source cronhook)").
    """
    ctx.obj = Client(url, api_key or None, timeout_s=timeout_s)
    if output:
        ctx.meta[OUTPUT_META_KEY] = output


for _command in (
    triggers,
    pause,
    resume,
    backfill,
    rotate_secret,
    list_runs,
    list_events,
    replay,
    list_audit,
    list_workflows,
    preview,
    simulate,
    keys,
    watch,
    alerts,
    apply,
    diff,
    export,
):
    cli.add_command(_command)


def main() -> None:
    """Entry point of the ``cronhook`` console script."""
    try:
        # Standalone mode maps click's errors to exit 2 (usage) and ApiError to exit 1.
        cli.main(prog_name="cronhook")
    except Exception as exc:  # a bug of ours: still a message, not a traceback
        click.echo(f"Error: unexpected failure: {type(exc).__name__}: {exc}", err=True)
        sys.exit(1)
