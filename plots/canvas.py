"""Figures as files (presentation layer): the Agg backend, the house style, the
dataset's name in a title, and saving a figure atomically (a PNG with its PDF beside it)."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib
import matplotlib.figure

matplotlib.use("Agg")  # files only; never needs a display
import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["STYLE", "VECTOR_SUFFIX", "dataset_title", "figure_formats", "plt", "save_figure"]

# Readable at a single paper column (3.3 in) and on screen.
STYLE = {
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "legend.fontsize": 7.5,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "lines.linewidth": 1.4,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "savefig.dpi": 200,
    "savefig.bbox": "tight",
}


def dataset_title(manifest) -> str:
    """The dataset's name for a title (a :class:`~vfl.experiments.manifest.Manifest`); a
    stand-in always says it is one."""
    d = manifest.dataset
    if d.stand_in:
        return "gisette stand-in (synthetic)"
    given = d.train_file
    if given:  # the user's own file: its name (and the config's), not the format's
        file = Path(str(given)).name
        name = manifest.name
        return f"{name} ({file})" if name and name != Path(file).stem else file
    return d.name


#: the vector copy saved beside every PNG (``None``: the PNG alone)
VECTOR_SUFFIX: str | None = ".pdf"


#: no timestamp in a figure file: the same figure is the same bytes (a release-only run's
#: figure is a released value, compared bit for bit)
_NO_DATE = {
    ".pdf": {"CreationDate": None},
    ".svg": {"Date": None},
    ".ps": {"CreationDate": None},
    ".eps": {"CreationDate": None},
}


def save_figure(fig, path: Path) -> list[Path]:
    """Save ``fig`` as ``path`` and, for a PNG, also as a PDF (``VECTOR_SUFFIX``) next to it."""
    path = Path(path)
    paths = [path]
    if path.suffix.lower() == ".png" and VECTOR_SUFFIX:
        paths.append(path.with_suffix(VECTOR_SUFFIX))
    with plt.rc_context(STYLE):
        for p in paths:
            # Write beside the target, then rename: no half-written figure.
            tmp = p.with_name(f".{p.stem}.partial{p.suffix}")
            fig.savefig(tmp, metadata=_NO_DATE.get(p.suffix.lower()))
            os.replace(tmp, p)
    plt.close(fig)
    return paths


def figure_formats() -> list[str]:
    """The file suffixes a figure can be saved as (without the dot)."""
    return sorted(matplotlib.figure.Figure().canvas.get_supported_filetypes())
