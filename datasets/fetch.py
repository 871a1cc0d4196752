"""Downloading dataset files, verified and atomic.

A download streams into a hidden temporary file in the target directory
while hashing it; only a file whose sha256 matches the registry is renamed
(atomically) to its final name. Whatever goes wrong - HTTP error, lost
connection, checksum mismatch, Ctrl-C - the temporary file is removed, so a
data directory never holds a partial or unverified file under a real name.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import secrets
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

from vfl.core.errors import DataError
from vfl.datasets.catalog import FileSpec, get_spec
from vfl.datasets.files import file_sha256, find_file, resolve_data_dir

__all__ = ["fetch_file", "fetch_dataset"]

_CHUNK = 1 << 16
_USER_AGENT = "vfl-datasets (python urllib)"


def _reason(exc: BaseException) -> str:
    """One-line reason of a download failure."""
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}".strip()
    if isinstance(exc, urllib.error.URLError):
        inner = exc.reason
        return _reason(inner) if isinstance(inner, BaseException) else str(inner)
    return " ".join(str(exc).split()) or type(exc).__name__


def fetch_file(
    spec: FileSpec,
    data_dir: str | os.PathLike,
    *,
    url: str | None = None,
    progress: Callable[[int, int | None], None] | None = None,
    timeout: float = 60,
) -> Path:
    """Download one file into ``data_dir`` and verify it.

    Parameters
    ----------
    spec : FileSpec
        The file to fetch; saved as ``data_dir / spec.name`` (uncompressed).
    data_dir : path
        Target directory, created if needed.
    url : str, optional
        Download from here instead of ``spec.url`` (e.g. a mirror).
    progress : callable, optional
        Called as ``progress(bytes_done, total)`` once with 0 before the
        first chunk and after every chunk; ``total`` is the Content-Length,
        else ``spec.size``, else None.
    timeout : float
        Seconds to wait for the connection and for each read.

    Returns
    -------
    Path
        The verified file. An existing file of that name is replaced.

    Raises
    ------
    DataError
        Download failure (naming URL and reason), unwritable directory, or
        sha256 mismatch (naming file, URL, expected and actual digests).
    """
    url = url or spec.url
    target_dir = Path(data_dir)
    made = [p for p in (target_dir, *target_dir.parents) if not p.exists()]
    try:
        target_dir.mkdir(parents=True, exist_ok=True)
        # Hidden, unique and in the same directory, so os.replace is atomic
        # and concurrent fetches never write into each other's file.
        tmp = target_dir / f".{spec.name}.part-{secrets.token_hex(4)}"
        out = open(tmp, "xb")
    except OSError as exc:
        raise DataError(f"cannot write {spec.name} to {target_dir}: {_reason(exc)}") from exc

    try:
        with out:
            digest = _download(url, out, spec, progress, timeout)
        if digest != spec.sha256:
            raise DataError(
                f"{spec.name}: sha256 mismatch for download from {url}: expected {spec.sha256}, got {digest}"
            )
        final = target_dir / spec.name
        try:
            os.replace(tmp, final)
        except OSError as exc:
            raise DataError(f"cannot write {final}: {_reason(exc)}") from exc
    except BaseException:
        # BaseException: KeyboardInterrupt must not leave a partial file either,
        # nor the directories this call made for it
        tmp.unlink(missing_ok=True)
        for p in made:
            try:
                p.rmdir()
            except OSError:
                break
        raise
    return final


# URLError covers HTTP errors and refused connections, OSError timeouts and
# resets mid-stream, HTTPException broken chunked transfers, ValueError
# malformed URLs.
_NETWORK_ERRORS = (urllib.error.URLError, OSError, http.client.HTTPException, ValueError)


def _download_error(url: str, exc: BaseException) -> DataError:
    if isinstance(exc, urllib.error.HTTPError):
        exc.close()  # an HTTPError holds the open connection
    return DataError(
        f"download of {url} failed: {_reason(exc)} (offline? copy the files into "
        "the data directory, or point --data-dir or VFL_DATA_DIR at a directory "
        "that holds them)"
    )


def _download(url: str, out, spec: FileSpec, progress, timeout: float) -> str:
    """Stream ``url`` into the open file ``out``; return the content's sha256.

    Only the network calls are guarded, so an exception raised by
    ``progress`` or a local write error is not misreported as a download error.
    """
    digest = hashlib.sha256()
    try:
        request = urllib.request.Request(url, headers={"User-Agent": _USER_AGENT})
        response = urllib.request.urlopen(request, timeout=timeout)
    except _NETWORK_ERRORS as exc:
        raise _download_error(url, exc) from exc
    with response:
        length = response.headers.get("Content-Length")
        total = int(length) if length and length.isdigit() else spec.size
        done = 0
        if progress is not None:
            progress(0, total)
        while True:
            try:
                chunk = response.read(_CHUNK)
            except _NETWORK_ERRORS as exc:
                raise _download_error(url, exc) from exc
            if not chunk:
                break
            digest.update(chunk)
            try:
                out.write(chunk)
            except OSError as exc:
                raise DataError(f"cannot write {out.name}: {_reason(exc)}") from exc
            done += len(chunk)
            if progress is not None:
                progress(done, total)
    return digest.hexdigest()


def fetch_dataset(
    name: str,
    data_dir: str | os.PathLike | None = None,
    *,
    mirror: str | None = None,
    progress: Callable[[str, int, int | None], None] | None = None,
    force: bool = False,
) -> list[Path]:
    """Download the missing (or corrupt) files of a dataset.

    Parameters
    ----------
    name : str
        A file-backed dataset (see :data:`REGISTRY`).
    data_dir : path, optional
        See :func:`resolve_data_dir`.
    mirror : str, optional
        Base URL replacing the official location: each file is fetched from
        ``mirror.rstrip("/") + "/" + file_name``.
    progress : callable, optional
        Called as ``progress(file_name, bytes_done, total)`` during each
        download (the file name tells a multi-file caller which bar to move).
    force : bool
        Download every file even if a verified copy is present.

    Returns
    -------
    list of Path
        The local copy of every file of the dataset, in registry order.
        Present files whose checksum matches are kept as they are (they may
        be ``.bz2`` copies); mismatching ones are downloaded again.
    """
    spec = get_spec(name)
    if mirror is not None and urllib.parse.urlsplit(mirror).scheme not in ("http", "https", "file"):
        raise DataError(f"--mirror {mirror!r} is not a URL (http://, https:// or file://)")
    base = resolve_data_dir(data_dir)
    paths = []
    for fs in spec.files:
        existing = find_file(fs, base)
        if existing is not None and not force and _verified(existing, fs):
            paths.append(existing)
            continue
        url = mirror.rstrip("/") + "/" + fs.name if mirror else fs.url
        report = None if progress is None else (lambda done, total, _name=fs.name: progress(_name, done, total))
        paths.append(fetch_file(fs, base, url=url, progress=report))
    return paths


def _verified(path: Path, spec: FileSpec) -> bool:
    try:
        return file_sha256(path) == spec.sha256
    except DataError:  # unreadable / corrupt bz2: fetch a fresh copy
        return False
