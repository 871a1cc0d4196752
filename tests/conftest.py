"""Shared fixtures.

Tests that need the verified datasets use the ``data_dir`` fixture. They are
skipped when ``VFL_DATA_DIR`` is unset or does not hold the files, unless
``VFL_REQUIRE_DATA=1`` (as in ``.ci/run``), in which case they fail: CI must
never pass by silently skipping the real-data checks.
"""

import os
from pathlib import Path

import pytest


def _require_data() -> bool:
    return os.environ.get("VFL_REQUIRE_DATA", "") not in ("", "0")


@pytest.fixture(scope="session")
def data_dir() -> Path:
    raw = os.environ.get("VFL_DATA_DIR")
    reason = None
    if not raw:
        reason = "VFL_DATA_DIR is not set"
    elif not Path(raw).is_dir():
        reason = f"VFL_DATA_DIR={raw} is not a directory"
    elif not any(Path(raw, n).exists() for n in ("a9a", "a9a.bz2")):
        reason = f"VFL_DATA_DIR={raw} holds no a9a"
    if reason:
        if _require_data():
            pytest.fail(f"{reason} but VFL_REQUIRE_DATA=1", pytrace=False)
        pytest.skip(reason)
    return Path(raw).resolve()


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Keep every test away from the user's real cache directory."""
    cache = tmp_path_factory.getbasetemp() / "vfl-cache"
    monkeypatch.setenv("VFL_CACHE_DIR", str(cache))
