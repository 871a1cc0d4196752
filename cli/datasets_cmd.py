"""``vfl datasets``: list, fetch and verify the datasets; inspect your own files.

The group turns any :class:`~vfl.core.errors.VFLError` into
``error: <message>`` on stderr and exit status 2 itself, so it behaves the
same standalone as when mounted under ``vfl``.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import click

from vfl.core.errors import VFLError
from vfl.datasets import describe_file, fetch_dataset, inspect_file, resolve_data_dir, suggest_partition
from vfl.experiments.dataset_listing import check_names, dataset_rows, verify_lines
from vfl.experiments.partyfiles import split

__all__ = ["datasets"]


class _ErrorsExitTwo(click.Group):
    """Report user errors from any subcommand as one line and exit 2."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except VFLError as exc:
            root = ctx.find_root().obj
            if isinstance(root, dict) and root.get("debug"):
                raise  # `vfl --debug`: let the main CLI show the traceback
            click.echo(f"error: {' '.join(str(exc).split())}", err=True)  # one line, as vfl's
            raise click.exceptions.Exit(2) from exc


_data_dir_option = click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Directory holding the dataset files [default: $VFL_DATA_DIR, else the user cache].",
)


@click.group(name="datasets", cls=_ErrorsExitTwo)
def datasets():
    """List, download and verify the datasets; inspect your own data files."""


def _table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[-1] for row in rows)


@datasets.command(name="list")
@_data_dir_option
def list_cmd(data_dir: Path | None):
    """Show every dataset, its shape and whether its files are present."""
    base = resolve_data_dir(data_dir)
    rows = dataset_rows(base)
    click.echo(f"data dir: {base}")
    click.echo(_table(rows))


class _ProgressBars:
    """One ``click.progressbar`` on stderr per downloaded file."""

    def __init__(self):
        self._stack = contextlib.ExitStack()
        self._bar = None
        self._name = None
        self._done = 0
        self.downloaded: list[str] = []

    def __call__(self, name: str, done: int, total: int | None) -> None:
        if name != self._name:
            self.close()
            self._name, self._done = name, 0
            self.downloaded.append(name)
            if total:
                self._bar = self._stack.enter_context(
                    click.progressbar(length=total, label=f"downloading {name}", file=sys.stderr)
                )
            else:
                click.echo(f"downloading {name} (size unknown) ...", err=True)
        if self._bar is not None:
            self._bar.update(done - self._done)
        self._done = done

    def close(self) -> None:
        self._stack.close()
        self._bar = None


@datasets.command(name="fetch")
@click.argument("name")
@_data_dir_option
@click.option("--mirror", metavar="URL", default=None, help="Base URL to download from instead of the official source.")
@click.option("--force", is_flag=True, help="Download again even if verified copies exist.")
def fetch_cmd(name: str, data_dir: Path | None, mirror: str | None, force: bool):
    """Download dataset NAME and verify its sha256 checksums."""
    base = resolve_data_dir(data_dir)
    bars = _ProgressBars()
    try:
        paths = fetch_dataset(name, base, mirror=mirror, progress=bars, force=force)
    finally:
        bars.close()
    click.echo(f"{name}: all {len(paths)} files verified in {base}")
    for path in paths:
        file_name = path.name.removesuffix(".bz2")
        how = "downloaded" if file_name in bars.downloaded else "already present"
        click.echo(f"  {how:<15}  {path}")


@datasets.command(name="verify")
@click.argument("names", nargs=-1)
@_data_dir_option
def verify_cmd(names: tuple[str, ...], data_dir: Path | None):
    """Check the sha256 of the files of NAMES (default: every dataset).

    Exits with status 2 if a file does not match, or if a dataset named on
    the command line has missing files.
    """
    check_names(names)
    base = resolve_data_dir(data_dir)
    click.echo(f"data dir: {base}")
    for line in verify_lines(names, base):
        click.echo(line)


@datasets.command(name="inspect")
@click.argument("path", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["libsvm", "csv"]),
    default=None,
    help="File format [default: csv for *.csv / *.tsv (also compressed), else libsvm].",
)
@click.option("--label", metavar="COL", default=None, help="Label column of a CSV file.")
@click.option(
    "--parties",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Number of parties to suggest a partition for.",
)
def inspect_cmd(path: Path, fmt: str | None, label: str | None, parties: int):
    """Describe a LIBSVM or CSV file and suggest the config lines to use it.

    Prints shape, sparsity, label balance, value ranges and the sha256, then
    [data] and [partition] lines for --parties parties, ready to paste. The
    file is read and validated exactly as `dataset = "libsvm"` / `"csv"`
    would read it; relative paths are resolved against the current
    directory.

    Example: vfl datasets inspect train.csv.gz --label income --parties 3
    """
    info = inspect_file(path, fmt, label=label)
    counts = suggest_partition(
        [c["width"] for c in info["columns"]] if info["columns"] else [1] * info["n_features"], parties
    )
    click.echo("\n".join(describe_file(info, counts, label, parties)))


@datasets.command(name="split")
@click.argument("path", required=False, type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Split this config's data by its [partition] instead of a FILE.",
)
@click.option("--label", metavar="COL", default=None, help="Label column of a CSV file.")
@click.option(
    "--parties",
    type=click.IntRange(min=2),
    default=2,
    show_default=True,
    help="Number of parties (FILE's columns in near-equal groups).",
)
@click.option(
    "--overlap",
    type=click.FloatRange(0, 1, min_open=True),
    default=0.8,
    show_default=True,
    help="Share of the rows every party holds.",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Seed of the IDs, the overlap and each file's row order.",
)
@click.option(
    "--test",
    "test_path",
    default=None,
    metavar="FILE",
    help="A test file: every party gets its rows [default: 20 %% of FILE held out].",
)
@click.option(
    "--out",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="Directory for the party files and config.toml.",
)
@click.option(
    "--set", "overrides", multiple=True, metavar="KEY=VALUE", help="With --config: override a config key first."
)
@click.option("--overwrite", is_flag=True, help="Replace --out if it exists.")
@_data_dir_option
def split_cmd(path, config_path, label, parties, overlap, seed, test_path, out, overrides, overwrite, data_dir):
    """Write one file per party (synthetic IDs, shuffled rows) and OUT/config.toml.

    \b
    vfl datasets split bank.csv --label y --parties 2 --overlap 0.8 --out bank-parties
    vfl datasets split --config configs/a9a.toml --out a9a-parties
    """
    written = split(
        path,
        config_path,
        label=label,
        parties=parties,
        overlap=overlap,
        seed=seed,
        test=test_path,
        out=out,
        overrides=overrides,
        overwrite=overwrite,
        data_dir=data_dir,
    )
    click.echo(f"wrote the party files and {written}; run them: vfl run --config {written}")
