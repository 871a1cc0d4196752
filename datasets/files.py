"""Where dataset files live, and checking that they are the right files.

A data directory holds each distribution file either as is (``a9a``) or
bzip2-compressed (``a9a.bz2``). Checksums always refer to the decompressed
content, so both forms verify against the same :class:`FileSpec`.
"""

from __future__ import annotations

import bz2
import hashlib
import io
import os
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

import platformdirs

from vfl.core.errors import DataError
from vfl.datasets.catalog import FileSpec, get_spec

__all__ = [
    "user_cache_dir",
    "resolve_data_dir",
    "find_file",
    "file_sha256",
    "read_file",
    "dataset_status",
    "verify_dataset",
    "missing_file_error",
    "require_files",
]

_CHUNK = 1 << 20  # 1 MiB: large enough for throughput, small enough for memory


def user_cache_dir() -> Path:
    """Return vfl's cache directory: ``$VFL_CACHE_DIR`` if set, else the platform's."""
    env = os.environ.get("VFL_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_cache_dir("vfl"))


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """Return the data directory to use.

    Precedence: the ``data_dir`` argument, then ``$VFL_DATA_DIR``, then
    ``user_cache_dir() / "data"``. The directory need not exist (fetching
    creates it); the result is absolute so it can be recorded in provenance.
    """
    if data_dir is not None and str(data_dir) != "":
        path = Path(data_dir)
    elif os.environ.get("VFL_DATA_DIR"):
        path = Path(os.environ["VFL_DATA_DIR"])
    else:
        path = user_cache_dir() / "data"
    return path.expanduser().absolute()


def find_file(spec: FileSpec, data_dir: str | os.PathLike) -> Path | None:
    """Return the local copy of ``spec``: ``NAME`` if present, else ``NAME.bz2``, else None."""
    base = Path(data_dir)
    for candidate in (base / spec.name, base / (spec.name + ".bz2")):
        if candidate.is_file():
            return candidate
    return None


def _open_content(path: Path):
    """Open ``path`` for binary reading, transparently decompressing ``.bz2``."""
    return bz2.open(path, "rb") if path.suffix == ".bz2" else open(path, "rb")


#: decompressed content of the ``.bz2`` files read in this process, by the sha256 of the
#: file as stored: decompressing was most of a dataset load, repeated by every run of a
#: process (``vfl reproduce``, the tests). A changed file has another key; bytes are immutable.
_DECOMPRESSED: OrderedDict[str, bytes] = OrderedDict()
_DECOMPRESSED_KEEP = 8


def _read_content(path: Path) -> bytes:
    """The decompressed content of ``path`` (OSError, EOFError as :func:`_open_content`)."""
    with open(path, "rb") as fh:
        stored = fh.read()
    if path.suffix != ".bz2":
        return stored
    key = hashlib.sha256(stored).hexdigest()
    content = _DECOMPRESSED.get(key)
    if content is None:
        with bz2.open(io.BytesIO(stored), "rb") as fh:
            content = fh.read()
        _DECOMPRESSED[key] = content
        while len(_DECOMPRESSED) > _DECOMPRESSED_KEEP:
            _DECOMPRESSED.popitem(last=False)
    else:
        _DECOMPRESSED.move_to_end(key)
    return content


def _io_error(path: Path, exc: BaseException) -> DataError:
    """Turn a read failure into a one-line DataError."""
    reason = " ".join(str(exc).split()) or type(exc).__name__
    # bz2 reports a corrupt stream as OSError without errno (or EOFError when
    # truncated); real filesystem errors always carry an errno.
    corrupt = isinstance(exc, EOFError) or getattr(exc, "errno", None) is None
    if path.suffix == ".bz2" and corrupt:
        return DataError(f"{path}: not a valid bzip2 file ({reason})")
    return DataError(f"cannot read {path}: {reason}")


def file_sha256(path: str | os.PathLike) -> str:
    """Return the hex sha256 of a file's content, decompressing ``.bz2`` files.

    The file is streamed in chunks, so memory use does not grow with its size.

    Raises
    ------
    DataError
        If the file cannot be read or is a corrupt bzip2 stream.
    """
    path = Path(path)
    digest = hashlib.sha256()
    try:
        with _open_content(path) as fh:
            while chunk := fh.read(_CHUNK):
                digest.update(chunk)
    except (OSError, EOFError) as exc:
        raise _io_error(path, exc) from exc
    return digest.hexdigest()


def missing_file_error(dataset: str, specs: Sequence[FileSpec], data_dir: Path) -> DataError:
    """Build the one-line error for files that are not in ``data_dir``."""
    where = str(data_dir) if data_dir.is_dir() else f"{data_dir} (directory does not exist)"
    names = ", ".join(fs.name for fs in specs)
    return DataError(
        f"{dataset}: {'file' if len(specs) == 1 else 'files'} {names} not found in {where} "
        f"(looked for NAME and NAME.bz2); run `vfl datasets fetch {dataset}`, "
        f"or point --data-dir or VFL_DATA_DIR at a directory that holds them"
    )


def require_files(dataset: str, specs: Sequence[FileSpec], data_dir: Path) -> None:
    """Raise one DataError naming every missing file, before any is read."""
    missing = [fs for fs in specs if find_file(fs, data_dir) is None]
    if missing:
        raise missing_file_error(dataset, missing, data_dir)


def read_file(dataset: str, spec: FileSpec, data_dir: Path, *, verify: bool = True) -> tuple[Path, bytes, str]:
    """Read one dataset file into memory and check its checksum.

    The content is hashed from the same bytes that are then parsed, so the
    file is decompressed only once and what is verified is what is loaded.

    Returns
    -------
    path, content, sha256
        The file actually read, its decompressed content and the content's
        sha256 (computed even when ``verify`` is False, for provenance).

    Raises
    ------
    DataError
        If the file is missing, unreadable, or (``verify=True``) its sha256
        differs from ``spec.sha256``.
    """
    path = find_file(spec, data_dir)
    if path is None:
        raise missing_file_error(dataset, [spec], data_dir)
    try:
        content = _read_content(path)
    except (OSError, EOFError) as exc:
        raise _io_error(path, exc) from exc
    actual = hashlib.sha256(content).hexdigest()
    if verify and actual != spec.sha256:
        raise DataError(
            f"{spec.name}: sha256 mismatch in {path}: expected {spec.sha256}, got {actual} "
            f"(re-download with `vfl datasets fetch {dataset} --force`)"
        )
    return path, content, actual


def dataset_status(name: str, data_dir: str | os.PathLike | None = None) -> list[dict]:
    """Report which files of a dataset are present, without hashing them.

    Returns one dict per file: ``{"name", "present", "path"}`` where ``path``
    is the local copy as a string, or None when the file is missing.
    """
    spec = get_spec(name)
    base = resolve_data_dir(data_dir)
    rows = []
    for fs in spec.files:
        path = find_file(fs, base)
        rows.append({"name": fs.name, "present": path is not None, "path": None if path is None else str(path)})
    return rows


def verify_dataset(name: str, data_dir: str | os.PathLike | None = None) -> list[dict]:
    """Check the sha256 of every present file of a dataset.

    Returns one dict per file: ``{"name", "present", "path", "expected",
    "actual", "ok"}``. Missing files have ``path`` and ``actual`` None and
    ``ok`` False; unreadable files (e.g. corrupt bzip2) count as mismatches
    with ``actual`` None and the reason under ``"error"``.
    """
    spec = get_spec(name)
    base = resolve_data_dir(data_dir)
    rows = []
    for fs in spec.files:
        path = find_file(fs, base)
        row = {
            "name": fs.name,
            "present": path is not None,
            "path": None if path is None else str(path),
            "expected": fs.sha256,
            "actual": None,
            "ok": False,
        }
        if path is not None:
            try:
                row["actual"] = file_sha256(path)
            except DataError as exc:
                row["error"] = str(exc)
            row["ok"] = row["actual"] == fs.sha256
        rows.append(row)
    return rows
