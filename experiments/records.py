"""Run directories: written atomically, read back for plotting.

A run directory holds::

    config.json      the fully resolved config
    manifest.json    versions, git commit, data sha256, partition, objective, times
    metrics.csv      one row per iteration (0 is the common starting point); with
                     run.repeats > 1, the mean over repeats
    baselines.json   the central optimum and the setting's comparison lines
    metrics_repeats.csv, metrics_stats.csv   with repeats: every repeat's rows, and
                     mean / std / min / max per iteration of every metric
    + whatever the caller's ``extra`` writers add (the figure)

Everything is first written into a hidden temporary directory beside the
target and then renamed into place, so an interrupted or failed run never
leaves a half-written run directory.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from pydantic import ValidationError

from vfl.core.errors import ConfigError, DataError

from .manifest import Manifest
from .run_result import RunResult

__all__ = [
    "RunRecord",
    "check_output_dir",
    "check_output_file",
    "clean_stale_partials",
    "load_run",
    "read_manifest",
    "repeat_stats",
    "run_is_current",
    "write_dir_atomic",
    "write_run",
    "RUN_FILES",
]

RUN_FILES = ("config.json", "manifest.json", "metrics.csv", "baselines.json")


def _json_default(obj):
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if hasattr(obj, "item"):
        return obj.item()
    raise TypeError(f"cannot serialize {type(obj).__name__}")


def _clean(obj):
    """NaN/inf are not JSON: write them as null."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def dump_json(obj, path: Path) -> None:
    path.write_text(json.dumps(_clean(obj), indent=2, default=_json_default) + "\n")


def write_csv_atomic(frame: pd.DataFrame, path) -> None:
    """``frame`` to ``path`` as CSV, written aside and renamed: never half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            frame.to_csv(fh, index=False, float_format="%.6g")
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _writable_ancestor(path: Path, what: str) -> None:
    """The nearest existing ancestor of ``path`` must be a directory we can write into."""
    probe = path
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        raise ConfigError(f"{what} {path}: {probe} is a file, not a directory")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ConfigError(f"{what} {path}: cannot write into {probe} (permission denied)")


def check_output_dir(path, *, overwrite: bool = False, what: str = "output directory", exists_ok: bool = False) -> Path:
    """Refuse, before any work, an output directory that cannot be written."""
    path = Path(path).absolute()
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{what} {path} is a file, not a directory")
    if path.exists() and not (overwrite or exists_ok):
        raise ConfigError(f"{what} {path} already exists (use --overwrite to replace it)")
    _writable_ancestor(path if path.exists() else path.parent, what)
    return path


def check_output_file(path, formats, *, what: str = "output file", overwrite: bool = True) -> Path:
    """Refuse, before any work, a figure or table path with no usable extension or directory
    (or, without ``overwrite``, one that exists)."""
    path = Path(path).absolute()
    ext = path.suffix.lower().lstrip(".")
    if not ext:
        raise ConfigError(f"{what} {path} has no extension; use one of: {', '.join(formats)}")
    if ext not in formats:
        raise ConfigError(f"{what} {path}: .{ext} is not a supported format; use one of: {', '.join(formats)}")
    if path.is_dir():
        raise ConfigError(f"{what} {path} is a directory")
    if path.exists() and not overwrite:
        raise ConfigError(f"{what} {path} already exists (use --overwrite to replace it)")
    _writable_ancestor(path.parent, what)
    return path


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True


def clean_stale_partials(parent) -> list[Path]:
    """Remove temporary run directories left by processes that no longer exist.

    :func:`write_run` names them ``.<name>.<pid>.<random>.partial``; one whose
    writer died (SIGKILL in the write window) is removed; a live writer's is
    left alone. Returns what was removed.
    """
    removed = []
    parent = Path(parent)
    if not parent.is_dir():
        return removed
    for tmp in parent.glob(".*.partial"):
        parts = tmp.name.split(".")
        pid = next((int(p) for p in reversed(parts[:-2]) if p.isdigit()), None)
        if pid is None or not _pid_alive(pid):
            shutil.rmtree(tmp, ignore_errors=True)
            removed.append(tmp)
    return removed


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_dir_atomic(
    out_dir, writers: Iterable[Callable[[Path], None]], *, overwrite: bool = False, what: str = "output directory"
) -> Path:
    """Make directory ``out_dir`` from ``writers`` atomically; returns its resolved path.

    Each writer receives a temporary directory beside ``out_dir`` and adds
    its files; the directory is renamed into place only when every writer
    has finished, so an interrupted or failed write leaves nothing behind
    (and an existing ``out_dir`` untouched until the swap).
    """
    out = Path(out_dir).resolve()
    if out.exists() and not overwrite:
        raise ConfigError(f"{what} {out} already exists (use --overwrite to replace it)")
    out.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_partials(out.parent)
    # the pid in the name lets a later run tell a dead writer's leftovers from a live one's
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.{os.getpid()}.", suffix=".partial", dir=out.parent))
    os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes it 0700; the result follows the umask
    try:
        for writer in writers:
            writer(tmp)
        if out.exists():
            # Move the old directory aside first: the swap is two renames, and the
            # old one is removed only once the new one is in place.
            old = out.with_name(f".{out.name}.{os.getpid()}.old")
            os.replace(out, old)
            os.replace(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def write_run(
    result: RunResult, out_dir, *, overwrite: bool = False, extra: Iterable[Callable[[Path], None]] = ()
) -> Path:
    """Write ``result`` to ``out_dir`` atomically and return its path.

    ``extra`` callables receive the temporary directory and may add files
    (figures) before it is renamed into place.
    """

    def files(tmp: Path) -> None:
        dump_json(result.config.to_dict(), tmp / "config.json")
        dump_json(result.manifest.dump(), tmp / "manifest.json")
        result.metrics.to_csv(tmp / "metrics.csv", index=False, float_format="%.10g")
        if result.repeats is not None:
            result.repeats.to_csv(tmp / "metrics_repeats.csv", index=False, float_format="%.10g")
            repeat_stats(result.repeats).to_csv(tmp / "metrics_stats.csv", index=False, float_format="%.10g")
        dump_json(result.baselines, tmp / "baselines.json")
        if result.communication is not None:
            result.communication.to_csv(tmp / "communication.csv", index=False)

    return write_dir_atomic(out_dir, [files, *extra], overwrite=overwrite)


def repeat_stats(repeats: pd.DataFrame) -> pd.DataFrame:
    """Per iteration: ``<metric>_mean``, ``_std``, ``_min``, ``_max`` over repeats."""
    metrics = [c for c in repeats.columns if c not in ("repeat", "epoch")]
    stats = repeats.groupby("epoch", sort=True)[metrics].agg(["mean", "std", "min", "max"])
    stats.columns = [f"{m}_{s}" for m, s in stats.columns]
    stats.insert(0, "n_repeats", repeats.groupby("epoch").size())
    return stats.reset_index()


def run_is_current(path, config) -> bool:
    """``path`` is a complete run directory made from exactly ``config``.

    Used to resume sweeps and figure reproduction: such a run is kept, any
    other (missing, incomplete, or from another config) is redone.
    """
    path = Path(path)
    # a run without communication.csv predates the communication accounting: redo it
    if not all((path / f).is_file() for f in (*RUN_FILES, "communication.csv")):
        return False
    try:
        saved = json.loads((path / "config.json").read_text())
    except (OSError, json.JSONDecodeError):
        return False
    return saved == json.loads(json.dumps(config.to_dict()))  # same JSON normalization


@dataclass
class RunRecord:
    """A run directory read back from disk."""

    path: Path
    config: dict
    manifest: Manifest
    metrics: pd.DataFrame
    baselines: dict
    repeats: pd.DataFrame | None = None

    @property
    def label(self) -> str:
        return self.manifest.name or self.path.name


def _check_metrics(path: Path, metrics: pd.DataFrame) -> None:
    """metrics.csv as :func:`write_run` writes it: rows, every cell a number, the last line
    whole (the writer ends the file with a newline; a cut copy does not)."""
    if "epoch" not in metrics.columns:
        raise DataError(f"{path} has no 'epoch' column")
    if metrics.empty:
        raise DataError(f"{path} has a header but no rows")
    text = [c for c in metrics.columns if not pd.api.types.is_numeric_dtype(metrics[c])]
    if text:
        raise DataError(f"{path}: column {text[0]!r} holds text; every metric is a number")
    with open(path, "rb") as fh:
        fh.seek(-1, os.SEEK_END)
        if fh.read(1) != b"\n" or metrics["epoch"].isna().any():
            raise DataError(f"{path} is truncated (its last row is incomplete)")


def load_run(path) -> RunRecord:
    """Read a run directory written by :func:`write_run`."""
    path = Path(path)
    if not path.is_dir():
        raise DataError(f"not a run directory: {path} does not exist or is not a directory")
    missing = [f for f in RUN_FILES if not (path / f).is_file()]
    if missing:
        raise DataError(f"not a complete run directory: {path} lacks {', '.join(missing)}")
    try:
        config = json.loads((path / "config.json").read_text())
        manifest = json.loads((path / "manifest.json").read_text())
        baselines = json.loads((path / "baselines.json").read_text())
        metrics = pd.read_csv(path / "metrics.csv")
        repeats = pd.read_csv(path / "metrics_repeats.csv") if (path / "metrics_repeats.csv").is_file() else None
    except pd.errors.EmptyDataError:
        raise DataError(f"{path / 'metrics.csv'} is empty") from None
    except (json.JSONDecodeError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: damaged run file: {' '.join(str(exc).split())}") from None
    for name, value in (("config.json", config), ("manifest.json", manifest), ("baselines.json", baselines)):
        if not isinstance(value, dict):
            raise DataError(f"{path / name}: damaged run file (a JSON object expected, got {type(value).__name__})")
    _check_metrics(path / "metrics.csv", metrics)
    return RunRecord(
        path=path,
        config=config,
        manifest=read_manifest(path / "manifest.json", manifest),
        metrics=metrics,
        baselines=baselines,
        repeats=repeats,
    )


def read_manifest(path: Path, value: dict) -> Manifest:
    """``value`` (read from ``path``) as a :class:`Manifest`, or one line naming the first
    field that does not fit."""
    try:
        return Manifest.model_validate(value)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(map(str, err["loc"])) or "(top level)"
        raise DataError(
            f"{path}: damaged run file, or one from another vfl version ({where}: "
            f"{err['msg'].lower()}; {exc.error_count()} problem(s))"
        ) from None
