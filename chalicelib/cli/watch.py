"""``cronhook watch``: have the local stack run a file trigger for each file written to a dir."""

from __future__ import annotations

from pathlib import Path

import click

from chalicelib.cli.context import client_of, trigger_path, usage

__all__ = ["watch"]


@click.command("watch")
@click.argument("directory", metavar="DIR", type=click.Path(file_okay=False))
@click.option("--trigger", "trigger_id", required=True, help="A trigger with event.source file.")
@click.option(
    "--data-dir",
    envvar="CRONHOOK_DATA_DIR",
    default=".cronhook",
    show_default=True,
    help="The local stack's data dir (CRONHOOK_DATA_DIR), where the list of watches is kept.",
)
@click.pass_context
def watch(ctx: click.Context, directory: str, trigger_id: str, data_dir: str) -> None:
    """Run a file trigger for each file written to DIR (the local stack watches it).

    A file is one event once its writes have settled; the watch survives restarts of the
    stack; if DIR disappears the trigger is disabled (source_gone).
    """
    # Imported here for start-up time: the sources package loads the services (seconds),
    # and no other command needs it.
    from chalicelib.sources.files import add_watch

    trigger = client_of(ctx).request("GET", trigger_path(trigger_id))
    source = (trigger.get("event") or {}).get("source")
    if source != "file":
        usage(f"trigger {trigger_id} has event.source {source!r}; create one with --file")
    if not Path(directory).is_dir():
        usage(f"{directory} is not a directory")
    added = add_watch(Path(data_dir), directory, trigger_id)
    click.echo(
        f"watching {added.directory} for trigger {trigger_id} (kept in {data_dir}/watches.json)"
    )
