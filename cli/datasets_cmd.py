"""``vfl datasets``: list, fetch and verify the datasets; inspect your own files.

The group turns any :class:`~vfl.core.errors.VFLError` into
``error: <message>`` on stderr and exit status 2 itself, so it behaves the
same standalone as when mounted under ``vfl``.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import click

from vfl.datasets import (
    REGISTRY,
    SYNTHETIC_PRESETS,
    dataset_status,
    fetch_dataset,
    get_spec,
    inspect_file,
    resolve_data_dir,
    suggest_partition,
    verify_dataset,
)
from vfl.datasets.synthetic import STAND_IN_FOR
from vfl.core.errors import DataError, VFLError

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
            click.echo(f"error: {exc}", err=True)
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
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[-1]
        for row in rows
    )


@datasets.command(name="list")
@_data_dir_option
def list_cmd(data_dir: Path | None):
    """Show every dataset, its shape and whether its files are present."""
    base = resolve_data_dir(data_dir)
    rows = [("name", "shape (train/test x features)", "status", "where")]
    for name, spec in sorted(REGISTRY.items()):
        files = dataset_status(name, base)
        missing = [f["name"] for f in files if not f["present"]]
        if not missing:
            status, where = "present", str(base)
        else:
            status = "missing" if len(missing) == len(files) else "partial"
            where = "missing " + ", ".join(missing)
        rows.append((name, f"{spec.n_train}/{spec.n_test} x {spec.n_features}", status, where))
    rows.append(("synthetic", "set by options", "generated", "-"))
    for preset, params in SYNTHETIC_PRESETS.items():
        shape = f"{params['n_train']}/{params['n_test']} x {params['n_features']}"
        real = STAND_IN_FOR.get(preset)
        note = f"stand-in, NOT the real {real} data" if real else "-"
        rows.append((f"synthetic:{preset}", shape, "generated", note))
    for fmt in ("libsvm", "csv"):
        rows.append((fmt, "from the file", "your file",
                     "[data] path = ...; see `vfl datasets inspect FILE`"))
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
                self._bar = self._stack.enter_context(click.progressbar(
                    length=total, label=f"downloading {name}", file=sys.stderr))
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
@click.option("--mirror", metavar="URL", default=None,
              help="Base URL to download from instead of the official source.")
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
    for name in names:
        get_spec(name)
    base = resolve_data_dir(data_dir)
    mismatched, missing, incomplete = [], [], []
    click.echo(f"data dir: {base}")
    for name in names or sorted(REGISTRY):
        for row in verify_dataset(name, base):
            label = f"{name:<8} {row['name']:<21}"
            if not row["present"]:
                click.echo(f"{label} missing")
                missing.append(row["name"])
                if name not in incomplete:
                    incomplete.append(name)
            elif row["ok"]:
                click.echo(f"{label} ok        {row['path']}")
            else:
                actual = row["actual"] or row.get("error", "unreadable")
                click.echo(f"{label} MISMATCH  {row['path']}: expected {row['expected']}, "
                           f"got {actual}")
                mismatched.append(row["name"])
    if mismatched:
        raise DataError(f"{len(mismatched)} file(s) failed verification: {', '.join(mismatched)}")
    if names and missing:
        raise DataError(f"{len(missing)} file(s) missing from {base}: {', '.join(missing)}; "
                        "run " + " and ".join(f"`vfl datasets fetch {n}`" for n in incomplete))


# ---------------------------------------------------------------------- inspect

def _count(n: int, what: str) -> str:
    return f"{n:,} {what}{'' if n == 1 else 's'}"


def _toml(value) -> str:
    """A TOML value: JSON's string and list syntax is valid TOML for these."""
    return json.dumps(value, ensure_ascii=False)


def _raw_label(value) -> str:
    return f"{value:g}" if isinstance(value, float) else repr(value)


def _party_lines(info: dict, counts: list[int]) -> list[str]:
    """One comment per party: which columns of the file it gets."""
    lines, start = [], 0
    columns = info["columns"]
    if columns is None:  # LIBSVM: the features, numbered as in the file
        first = 1 if info["indices"] == "one-based" else 0
        for m, c in enumerate(counts, start=1):
            lines.append(f"# party {m}: features {start + first}-{start + c - 1 + first} "
                         f"({c} columns)")
            start += c
        return lines
    at = 0
    for m, c in enumerate(counts, start=1):
        names, width = [], 0
        while width < c:
            names.append(columns[at]["name"])
            width += columns[at]["width"]
            at += 1
        shown = ", ".join(names) if len(names) <= 6 else f"{names[0]} .. {names[-1]}"
        lines.append(f"# party {m}: {shown} ({_count(len(names), 'file column')}, "
                     f"{_count(c, 'feature')})")
    return lines


def _preprocessing_lines(info: dict) -> list[str]:
    """The [preprocessing] section: per-record steps filled in, public parameters marked FILL.

    What this file holds is not a public source: its observed ranges and
    categories are shown as comments, never as values a private run would
    take (issue: one record would then move every other record).
    """
    lines = ["[preprocessing]",
             "# Parameters not per record (bounds, categories) must come from a public source in",
             "# a private run: the data set's documentation, constants you can justify without",
             "# looking at these rows, or rows declared public. Lines marked FILL need one; the",
             "# values observed in this file are shown for orientation only.",
             'scaling = "minmax"         # to [0, 1]; a value outside its bounds is clipped',
             "range = [0.0, 1.0]",
             "normalize_rows = true     # per record: each party's block to unit norm"]
    columns = info["columns"]
    if columns is None:
        lines.append(f"# bounds = [lo, hi]       # FILL: public bounds of every feature "
                     f"(observed here: [{info['min']:g}, {info['max']:g}])")
        return lines
    cats = [c for c in columns if c["kind"] == "categorical"]
    nums = [c for c in columns if c["kind"] == "numeric"]
    if cats:
        lines.append("")
        lines.append("[preprocessing.categories]   # FILL: every value each column can take")
        for c in cats:
            shown = c["values"][:8] + (["..."] if len(c["values"]) > 8 else [])
            lines.append(f"# {_toml(c['name'])} = [...]   # observed: {', '.join(shown)}")
    if nums:
        lines.append("")
        lines.append("[preprocessing.bounds]   # FILL: the public range of each numeric column")
        for c in nums:
            lo, hi = c["range"]
            lines.append(f"# {_toml(c['name'])} = [lo, hi]   # observed: [{lo:g}, {hi:g}]")
    return lines


@datasets.command(name="inspect")
@click.argument("path", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["libsvm", "csv"]), default=None,
              help="File format [default: csv for *.csv / *.tsv (also compressed), else libsvm].")
@click.option("--label", metavar="COL", default=None, help="Label column of a CSV file.")
@click.option("--parties", type=click.IntRange(min=1), default=2, show_default=True,
              help="Number of parties to suggest a partition for.")
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
    counts = suggest_partition([c["width"] for c in info["columns"]] if info["columns"]
                               else [1] * info["n_features"], parties)
    f = info["file"]
    compression = f["compression"] if f["compression"] != "none" else "plain"
    n, d = info["n_rows"], info["n_features"]
    rows = [("file", f"{f['path']} ({compression}, {_count(f['size'], 'byte')})"),
            ("sha256", f"{f['sha256']} (of the file as stored)")]
    if "content_sha256" in f:
        rows.append(("", f"{f['content_sha256']} (decompressed content)"))
    if info["format"] == "libsvm":
        rows.append(("format", f"libsvm, {info['indices']} feature indices ({info['indices_why']})"))
    else:
        delimiter = info["options"].get("delimiter", ",")
        rows.append(("format", f"csv, delimiter {delimiter!r}, label column {label!r}"))
    rows.append(("shape", f"{_count(n, 'row')} x {_count(d, 'feature')}"))
    rows.append(("sparsity", f"{100 * info['density']:.3g}% of the entries are non-zero "
                             f"({info['nnz']:,} of {n * d:,})"))
    labels = "; ".join(
        f"{'+1' if c['value'] > 0 else '-1'} = {_raw_label(c['raw'])}: "
        f"{_count(c['count'], 'row')} ({c['count'] / n:.1%})" for c in info["labels"])
    rows.append(("labels", f"{labels} [{info['label_rule']}]"))
    constant = info["constant_columns"][:8]
    const_text = _count(info["n_constant_columns"], "constant column")
    if constant:
        more = ", ..." if info["n_constant_columns"] > len(constant) else ""
        const_text += f" (0-based: {', '.join(map(str, constant))}{more})"
    rows.append(("values", f"in [{info['min']:g}, {info['max']:g}]; "
                           f"{_count(info['binary_columns'], 'binary (0/1) column')}; "
                           f"{const_text}"))
    norm = f"max {info['max_row_norm']:.3g}, mean {info['mean_row_norm']:.3g}"
    if info["max_row_norm"] > 1:
        norm += " (> 1: analyses assuming ||x|| <= 1 need normalize_rows = true)"
    rows.append(("row norms", norm))
    if info["columns"] is not None:
        kinds = [c["name"] if c["kind"] == "numeric" else
                 f"{c['name']} (categorical, {c['width']} values)" for c in info["columns"]]
        shown = ", ".join(kinds[:12]) + (f", ... ({len(kinds)} in all)" if len(kinds) > 12 else "")
        rows.append(("columns", shown))
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        click.echo(f"{key:<{width}}  {value}")

    click.echo()
    click.echo(f"# Suggested config for {parties} "
               f"part{'y' if parties == 1 else 'ies'}; party 1 is active (holds the labels).")
    click.echo("# The test set: test_fraction holds out that share of the rows by a seeded "
               "permutation, or test_path = \"...\" names a separate test file.")
    click.echo("[data]")
    click.echo(f"dataset = {_toml(info['format'])}")
    for key, value in info["options"].items():
        click.echo(f"{key} = {_toml(value)}")
    click.echo("test_fraction = 0.2")
    click.echo("stratify = false   # the split depends on no record's label (a private run needs it)")
    raw = [c["raw"] for c in info["labels"]]
    if raw not in ([0.0, 1.0], [-1.0, 1.0]):  # say which label became +1, and how to change it
        click.echo(f"# label_positive = {_toml(raw[1])}   (the default: the larger label is +1)")
    click.echo()
    for line in _preprocessing_lines(info):
        click.echo(line)
    click.echo()
    click.echo("[partition]")
    click.echo(f"columns = {_toml(counts)}")
    for line in _party_lines(info, counts):
        click.echo(line)
