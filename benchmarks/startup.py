"""What a command pays before its first iteration: loading a dataset, and starting the CLI.

``python -m benchmarks --only startup``. Both ratios come from this run:

- a9a loaded by :func:`vfl.datasets.loaders.load_raw` from a fresh cache
  (decompress, verify, parse), then again from the parsed-array cache
  (keyed by the stored file's sha256): target, the second load at least 20
  times faster;
- ``vfl --help`` in a fresh interpreter, against ``python -c pass`` (the
  interpreter's own start-up): target, at most 0.2 s above it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import numpy as np

from vfl.datasets.loaders import load_raw

from .sampler import _median_seconds


def _load_ratio(data_dir, repeats: int) -> dict:

    parse, cached = [], []
    saved = os.environ.get("VFL_CACHE_DIR")
    try:
        for _ in range(repeats):
            with tempfile.TemporaryDirectory() as cache:
                os.environ["VFL_CACHE_DIR"] = cache
                parse.append(_median_seconds(lambda: load_raw("a9a", data_dir), 1))
                cached.append(_median_seconds(lambda: load_raw("a9a", data_dir), 3))
    finally:
        if saved is None:
            os.environ.pop("VFL_CACHE_DIR", None)
        else:
            os.environ["VFL_CACHE_DIR"] = saved
    first, second = float(np.median(parse)), float(np.median(cached))
    return {"parse_seconds": first, "cached_seconds": second, "ratio": first / second}


def _help_seconds(repeats: int) -> dict:
    def run(*args):
        subprocess.run([sys.executable, *args], check=True, capture_output=True)

    bare = _median_seconds(lambda: run("-c", "pass"), repeats)
    vfl = _median_seconds(lambda: run("-m", "vfl.cli.main", "--help"), repeats)
    return {"python_seconds": bare, "vfl_help_seconds": vfl, "above_python": vfl - bare}


def startup_benchmark(quick: bool = False, data_dir=None) -> dict:
    load = _load_ratio(data_dir, 1 if quick else 3)
    help_ = _help_seconds(3 if quick else 7)
    targets = {
        "load_cached": {
            "description": "a9a: parse / load from the parsed-array cache (>= 20)",
            "ratio": load["ratio"],
            "threshold": 20.0,
            "pass": load["ratio"] >= 20.0,
            "comparison": ">=",
            "why": "",
        },
        "help": {
            "description": "`vfl --help` seconds above `python -c pass` (<= 0.2)",
            "ratio": help_["above_python"],
            "threshold": 0.2,
            "pass": help_["above_python"] <= 0.2,
            "why": "",
        },
    }
    lines = [
        "| what | seconds | against | ratio |",
        "|---|---:|---:|---:|",
        f"| a9a from the parsed-array cache | {load['cached_seconds']:.3f} | parse "
        f"{load['parse_seconds']:.3f} | {load['ratio']:.0f}x |",
        f"| `vfl --help` | {help_['vfl_help_seconds']:.3f} | `python -c pass` "
        f"{help_['python_seconds']:.3f} | +{help_['above_python']:.3f} s |",
    ]
    return {"load": load, "help": help_, "targets": targets, "markdown": "\n".join(lines)}
