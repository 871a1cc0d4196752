"""Datasets for the vfl experiments: registry, verified loading, fetching, synthetic data.

File-backed datasets (``a9a``, ``gisette``, ``adult``) are read from a data
directory (:func:`resolve_data_dir`) holding the original distribution files,
plain or ``.bz2``, and verified by sha256 before use. ``synthetic`` data is
generated from a seed; its ``gisette-shaped`` preset is a clearly labelled
stand-in, never a substitute presented as gisette. ``libsvm`` and ``csv``
read the user's own files, named by options and checksummed on every load
(:mod:`vfl.datasets.userfiles`).

This is experiments-layer code: it reads and writes files but never prints,
draws randomness only from explicit seeds, and reports every user-caused
problem as :class:`vfl.core.errors.DataError`.
"""

from vfl.datasets.catalog import REGISTRY, DatasetSpec, FileSpec, get_spec
from vfl.datasets.dataset import Dataset
from vfl.datasets.describe import describe_file
from vfl.datasets.fetch import fetch_dataset, fetch_file
from vfl.datasets.files import (
    dataset_status,
    file_sha256,
    find_file,
    resolve_data_dir,
    user_cache_dir,
    verify_dataset,
)
from vfl.datasets.gisette_like import make_gisette_like
from vfl.datasets.loaders import LOADER_OPTIONS, load_dataset
from vfl.datasets.synthetic import SYNTHETIC_PRESETS, make_synthetic
from vfl.datasets.userfiles import inspect_file, read_user_file, suggest_partition

__all__ = [
    "Dataset",
    "DatasetSpec",
    "FileSpec",
    "REGISTRY",
    "LOADER_OPTIONS",
    "get_spec",
    "load_dataset",
    "resolve_data_dir",
    "user_cache_dir",
    "find_file",
    "file_sha256",
    "fetch_dataset",
    "fetch_file",
    "verify_dataset",
    "dataset_status",
    "make_synthetic",
    "make_gisette_like",
    "SYNTHETIC_PRESETS",
    "describe_file",
    "inspect_file",
    "read_user_file",
    "suggest_partition",
]
