"""What the commands share: progress on stderr, a comma-separated option's values, and the
``--data-dir`` option."""

from __future__ import annotations

import sys

import click

__all__ = ["Progress", "data_dir_option", "value_list"]

data_dir_option = click.option(
    "--data-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Where datasets are [default: $VFL_DATA_DIR, else the user cache].",
)


class Progress:
    """Progress on stderr: a bar on a terminal, one line per finished unit elsewhere."""

    def __init__(self, total: int, label: str, quiet: bool, show=None):
        self.quiet, self.show = quiet, show
        self.tty = sys.stderr.isatty()
        self.bar = None
        if not quiet and self.tty and total > 1:
            self.bar = click.progressbar(
                length=total,
                label=label,
                file=sys.stderr,
                item_show_func=lambda item: "" if item is None else (show(item) if show else str(item)),
            )
            self.bar.__enter__()

    def step(self, item=None) -> None:
        if self.bar is not None:
            self.bar.update(1, item)

    def done(self, line: str) -> None:
        """A finished unit: one line (above the bar on a terminal)."""
        if self.quiet:
            return
        if self.bar is not None:
            self.bar.update(0)
            click.echo("", err=True)
        click.echo(line, err=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


def value_list(text: str, option: str, kind=float) -> list:
    """``"0,0.1,1"`` -> ``[0.0, 0.1, 1.0]`` (``kind=int`` for seeds); finite numbers only."""
    try:
        values = [kind(v) for v in text.split(",") if v.strip()]
    except ValueError:
        what = "integers" if kind is int else "numbers"
        raise click.BadParameter(f"expects comma-separated {what}, got {text!r}", param_hint=option) from None
    if not values:
        raise click.BadParameter("expects at least one value", param_hint=option)
    return values
