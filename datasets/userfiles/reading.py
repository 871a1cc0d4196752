"""Reading one user file: decompression by extension checked against its leading bytes,
binary files refused, checksums and provenance (:class:`UserFile`)."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import lzma
import os
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vfl.core.errors import DataError
from vfl.datasets.userfiles.previews import _one_line

_EXTENSIONS = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz"}


_SUFFIX = {v: k for k, v in _EXTENSIONS.items()}


# bzip2: "BZh", block size digit, then a block header or the end-of-stream
# marker; requiring all 10 bytes keeps a CSV header "BZh..." from matching.
_SNIFF = (
    ("gzip", re.compile(rb"\x1f\x8b")),
    ("bzip2", re.compile(rb"BZh[1-9](1AY&SY|\x17rE8P\x90)")),
    ("xz", re.compile(rb"\xfd7zXZ\x00")),
)


# Formats people save tables in that are not text at all.
_FOREIGN = (
    (b"PK\x03\x04", "a zip archive (or an .xlsx workbook)"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed"),
    (b"PAR1", "a Parquet file"),
    (b"\x93NUMPY", "a NumPy .npy file"),
)


def _sniff(raw: bytes) -> str | None:
    return next((kind for kind, magic in _SNIFF if magic.match(raw)), None)


def _decompress(kind: str, raw: bytes) -> bytes:
    return {"gzip": gzip.decompress, "bzip2": bz2.decompress, "xz": lzma.decompress}[kind](raw)


@dataclass(frozen=True, eq=False)
class UserFile:
    """One file read for a user dataset: where it is, what it was, its text.

    ``sha256`` and ``size`` describe the file as stored (compressed bytes for
    a compressed file); ``content`` is the decompressed text that is parsed.
    """

    given: str
    path: Path
    size: int
    sha256: str
    compression: str | None
    content: bytes

    def record(self) -> dict:
        """JSON-ready provenance of this file."""
        rec = {
            "path": str(self.path),
            "given": self.given,
            "size": self.size,
            "sha256": self.sha256,
            "compression": self.compression or "none",
        }
        if self.compression:
            rec["content_sha256"] = hashlib.sha256(self.content).hexdigest()
            rec["content_size"] = len(self.content)
        return rec


def read_user_file(path: str | os.PathLike, *, strict: bool = True) -> UserFile:
    """Read, check and decompress one data file.

    Relative paths are resolved against the current directory. The whole
    file is read once: the bytes that are hashed are the bytes that are
    decompressed and parsed. ``strict=False`` (a run that claims a guarantee):
    the extension alone decides the decompression and the text is not checked
    (a record's bytes never stop the run; :mod:`vfl.datasets.record_parsers`).

    Raises
    ------
    DataError
        Missing or unreadable file, a directory, an empty file, an
        extension that disagrees with the content (``.gz`` that is not gzip,
        or compressed content without the matching extension), a truncated or
        corrupt compressed file, or binary (non-text) content.
    """
    given = os.fspath(path)
    p = Path(given).expanduser()
    resolved = (p if p.is_absolute() else Path.cwd() / p).resolve()
    if not resolved.exists():
        where = (
            f" (relative paths are resolved against the current directory {Path.cwd()})" if not p.is_absolute() else ""
        )
        raise DataError(f"{resolved}: no such file{where}")
    if resolved.is_dir():
        raise DataError(f"{resolved}: is a directory, not a data file")
    try:
        raw = resolved.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read {resolved}: {exc.strerror or _one_line(exc)}") from exc
    if not raw:
        raise DataError(f"{resolved}: empty file (0 bytes)")

    expected = _EXTENSIONS.get(resolved.suffix.lower())
    # a plain file's first bytes are a record (LIBSVM): sniffed only in a strict reading
    actual = _sniff(raw) if strict or expected else None
    if expected and actual != expected:
        what = f"{actual}-compressed" if actual else f"not {expected}-compressed"
        raise DataError(
            f"{resolved}: the name ends in {resolved.suffix} but the content is {what} (it starts with {raw[:8]!r})"
        )
    if actual and not expected:
        raise DataError(
            f"{resolved}: the content is {actual}-compressed but the name does not "
            f"end in {_SUFFIX[actual]}; rename it to {resolved.name}{_SUFFIX[actual]}"
        )
    content = raw
    if expected:
        try:
            content = _decompress(expected, raw)
        except (OSError, EOFError, ValueError, lzma.LZMAError, zlib.error) as exc:
            reason = _one_line(exc)
            if isinstance(exc, EOFError) or "ended before the end-of-stream" in reason:
                raise DataError(
                    f"{resolved}: truncated {expected} file (the compressed data ends before its end-of-stream marker)"
                ) from exc
            raise DataError(f"{resolved}: corrupt {expected} file ({reason})") from exc
    if not strict:
        return UserFile(
            given=given,
            path=resolved,
            size=len(raw),
            sha256=hashlib.sha256(raw).hexdigest(),
            compression=expected,
            content=content,
        )
    _refuse_binary(resolved, content, f" (decompressed from {expected})" if expected else "")
    if not content.strip():
        raise DataError(
            f"{resolved}: empty file (no data" + (" after decompression)" if expected else ", only whitespace)")
        )
    return UserFile(
        given=given,
        path=resolved,
        size=len(raw),
        sha256=hashlib.sha256(raw).hexdigest(),
        compression=expected,
        content=content,
    )


def _refuse_binary(path: Path, content: bytes, decompressed: str) -> None:
    """Reject content that is not text: archives, other formats, NUL bytes."""
    for magic, what in _FOREIGN:
        if content.startswith(magic):
            raise DataError(
                f"{path}: the content{decompressed} is {what}, not LIBSVM or CSV "
                "text (vfl reads plain, .gz, .bz2 and .xz text files)"
            )
    again = _sniff(content)
    if again:  # only possible inside a compressed file: plain ones were checked above
        raise DataError(f"{path}: the content{decompressed} is compressed again ({again})")
    if b"\x00" in content[: 1 << 16]:
        raise DataError(
            f"{path}: binary content{decompressed} (NUL bytes), not a text file (a UTF-16 export? save it as UTF-8)"
        )


def _data_line_numbers(content: bytes, comments: bool) -> np.ndarray:
    """1-based file line of each record, skipping blank (and ``#`` comment) lines.

    Only called to word an error, so a Python pass over the lines is fine.
    """
    lines = content.split(b"\n")
    if comments:
        keep = [i + 1 for i, line in enumerate(lines) if line.split(b"#", 1)[0].strip()]
    else:
        keep = [i + 1 for i, line in enumerate(lines) if line.strip()]
    return np.asarray(keep, dtype=np.int64)


def _files(train: UserFile, test: UserFile | None) -> tuple[dict, dict]:
    """(checksums, provenance files) of the files read."""
    read = {"train": train, **({"test": test} if test is not None else {})}
    return ({str(f.path): f.sha256 for f in read.values()}, {role: f.record() for role, f in read.items()})
