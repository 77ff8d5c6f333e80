"""``cronhook watch``: have the local stack run a file trigger for each file written to a dir."""

from __future__ import annotations

from pathlib import Path

import click

from cronhook_cli.context import client_of, trigger_path, usage

__all__ = ["watch", "STACK_MARK"]

# The file the local stack writes into the data dir it uses (``local/data_dir.py``).
STACK_MARK = "stack.json"


def _check_data_dir(data_dir: Path, url: str) -> None:
    """The watch list is read by the stack that uses ``data_dir``: refuse any other dir.

    A watch kept where no stack looks would be taken and never fire: the stack marks the
    data dir it uses (``stack.json``, with its URL).
    """
    import json

    marker = data_dir / STACK_MARK
    try:
        stack_url = json.loads(marker.read_text()).get("url")
    except (OSError, ValueError, AttributeError):
        raise click.ClickException(
            f"{data_dir} is not the data dir of a local stack (no {STACK_MARK}): pass "
            "--data-dir (or set CRONHOOK_DATA_DIR) to the dir the stack was started with"
        ) from None
    if stack_url and stack_url.rstrip("/") != url.rstrip("/"):
        raise click.ClickException(
            f"{data_dir} is the data dir of the stack at {stack_url}, not of {url}: pass "
            "--data-dir (or set CRONHOOK_DATA_DIR) to the dir of the stack at CRONHOOK_URL"
        )


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
    _check_data_dir(Path(data_dir), client_of(ctx).base_url)
    added = add_watch(Path(data_dir), directory, trigger_id)
    click.echo(
        f"watching {added.directory} for trigger {trigger_id} (kept in {data_dir}/watches.json)"
    )
