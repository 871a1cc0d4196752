"""Reading a registry dataset's files: each read once, checked against the registry's sha256,
recorded for the provenance, and its parsed arrays cached by the stored file's sha256
(:class:`FileReader`)."""

from __future__ import annotations

import hashlib
import os
import zipfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from vfl.core.errors import DataError
from vfl.datasets.catalog import DatasetSpec, FileSpec
from vfl.datasets.files import find_file, read_file, require_files, resolve_data_dir, user_cache_dir

__all__ = ["FileReader", "PARSER_VERSION", "one_line"]


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _file(spec: DatasetSpec, name: str) -> FileSpec:
    return next(f for f in spec.files if f.name == name)


class FileReader:
    """Reads a dataset's files and remembers what was read, for provenance."""

    def __init__(self, spec: DatasetSpec, data_dir, verify: bool, strict: bool = True, use_cache: bool = True):
        self.spec = spec
        self.data_dir = resolve_data_dir(data_dir)
        self.verify = verify
        # A run that claims a guarantee does not stop on a changed file: that would tell a
        # changed record apart. The mismatch is recorded (diagnostic) instead.
        self.strict = strict
        self.mismatched: list[str] = []
        self.use_cache = use_cache
        self.paths: dict[str, str] = {}
        self.checksums: dict[str, str] = {}
        # Report every missing file at once, before spending time on any.
        require_files(spec.name, spec.files, self.data_dir)

    def read(self, file_name: str) -> tuple[str, bytes]:
        """Return (path actually read, decompressed content) of one file."""
        spec = _file(self.spec, file_name)
        path, content, sha = read_file(self.spec.name, spec, self.data_dir, verify=self.verify and self.strict)
        self._checked(file_name, sha)
        self.paths[file_name] = str(path)
        self.checksums[file_name] = sha
        return str(path), content

    def _checked(self, file_name: str, sha: str) -> None:
        if self.verify and not self.strict and sha != _file(self.spec, file_name).sha256:
            self.mismatched.append(file_name)

    def parsed(self, file_name: str, parse, *args) -> tuple:
        """``parse(path, content, *args)`` of one file, from the parsed-array cache when the
        stored file is one parsed before.

        The cache (``user_cache_dir()/parsed``) is keyed by the sha256 of the file as stored
        (no decompression needed to look it up) and :data:`PARSER_VERSION`; each entry keeps
        the content sha256 verified when it was parsed, which is checked against the registry
        as a fresh read would be. A damaged entry is parsed again and replaced. Without
        ``use_cache`` the file is parsed, and nothing is read from or written to the cache.
        """
        if not self.use_cache:
            return parse(*self.read(file_name), *args)
        path = find_file(_file(self.spec, file_name), self.data_dir)
        key = f"{_stored_sha256(path)}-{PARSER_VERSION}-{'-'.join(map(str, args))}"
        entry = user_cache_dir() / "parsed" / f"{key}.npz"
        hit = _load_parsed(entry)
        if hit is not None:
            content_sha, arrays = hit
            spec = _file(self.spec, file_name)
            if self.verify and self.strict and content_sha != spec.sha256:
                raise DataError(
                    f"{spec.name}: sha256 mismatch in {path}: expected "
                    f"{spec.sha256}, got {content_sha} (re-download with "
                    f"`vfl datasets fetch {self.spec.name} --force`)"
                )
            self._checked(file_name, content_sha)
            self.paths[file_name], self.checksums[file_name] = str(path), content_sha
            return arrays
        source, content = self.read(file_name)
        arrays = parse(source, content, *args)
        _save_parsed(entry, self.checksums[file_name], arrays)
        return arrays

    def provenance(self, **extra) -> dict:
        """What was read; ``diagnostic`` (always present) holds what depends on the records."""
        diagnostic = {**extra.pop("diagnostic", {})}
        if self.verify and not self.strict:
            diagnostic["sha256_mismatch"] = list(self.mismatched)
        return {
            "source": "files",
            "data_dir": str(self.data_dir),
            "files": dict(self.paths),
            "verified": self.verify,
            **extra,
            "diagnostic": diagnostic,
        }


#: bump when a parser's output changes: every cached parse is then redone
PARSER_VERSION = 2


def _stored_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _load_parsed(entry: Path):
    """(content sha256, arrays) of a cache entry, or None when absent or unreadable."""
    try:
        with np.load(entry, allow_pickle=False) as z:
            sha = str(z["content_sha256"])
            n = int(z["n"])
            if "csr_data" in z:
                X = sp.csr_matrix((z["csr_data"], z["csr_indices"], z["csr_indptr"]), shape=tuple(z["csr_shape"]))
                return sha, (X, *(z[f"a{i}"] for i in range(1, n)))
            return sha, tuple(z[f"a{i}"] for i in range(n))
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile):
        return None


def _save_parsed(entry: Path, content_sha: str, arrays) -> None:
    """Write a cache entry atomically; a cache that cannot be written is only slower."""
    arrays = arrays if isinstance(arrays, tuple) else (arrays,)
    payload = {"n": np.array(len(arrays)), **{f"a{i}": a for i, a in enumerate(arrays)}}
    if sp.issparse(arrays[0]):
        X = arrays[0].tocsr()
        del payload["a0"]
        payload.update(csr_data=X.data, csr_indices=X.indices, csr_indptr=X.indptr, csr_shape=np.array(X.shape))
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp = entry.with_name(f".{entry.stem}.{os.getpid()}.partial.npz")
        np.savez(tmp, content_sha256=np.array(content_sha), **payload)
        os.replace(tmp, entry)
    except OSError:
        pass
