"""Shared by tests/test_userfiles.py and tests/test_userfiles_validation.py: every test runs in
its tmp_path, and writes its files there compressed as their suffix says.
"""

import bz2
import gzip
import lzma
from pathlib import Path

import pytest

# Fastest levels: the tests check formats, not compression ratios.
COMPRESS = {
    "": lambda b: b,
    ".gz": lambda b: gzip.compress(b, 1),
    ".bz2": lambda b: bz2.compress(b, 1),
    ".xz": lambda b: lzma.compress(b, preset=0),
}


# 6 rows, 4 one-based features, labels 0/1.
SVM = b"1 1:0.5 3:1\n0 2:1\n1 1:1 4:2\n0 3:1\n1 2:3\n0 1:1\n"


CSV = b"age,city,y,income\n30,Paris,yes,1.5\n40, Rome,no,2\n50,Paris,no,3\n60,Oslo,yes,4\n70,Rome,yes,5\n20,Oslo,no,6\n"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def write(name: str, content: bytes) -> Path:
    """Write ``content`` to ``name`` in the cwd, compressed as its suffix says."""
    suffix = next((s for s in (".gz", ".bz2", ".xz") if name.endswith(s)), "")
    path = Path(name)
    path.write_bytes(COMPRESS[suffix](content))
    return path
