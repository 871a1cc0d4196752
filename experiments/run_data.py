"""A config's records, read: ``config.data`` loaded (once per process and file state), with the
options the records depend on (the split seed, strict reading, the party files' alignment)."""

from __future__ import annotations

import json
import os

from vfl.datasets import REGISTRY, dataset_status, resolve_data_dir
from vfl.datasets.dataset import RawDataset
from vfl.datasets.loaders import load_raw

from .config import Config

_DATASETS: dict = {}  # (dataset, options, data dir) -> loaded, within one process


def load_config_dataset(
    config: Config, data_dir=None, *, keep: bool = True, use_cache: bool = True
) -> tuple[RawDataset, str | None]:
    """Read ``config.data`` (raw records, before the preprocessing stage); returns them and,
    if the fallback was used, a sentence saying why. Loaded datasets are kept for the life of
    the process (figure reproductions run many configs on the same data); files are re-hashed
    on every load, so a changed file is never served from memory. ``keep=False`` (one run
    that needs its memory for the parties' blocks): the records are not kept, and a kept copy
    of them is let go once served. ``use_cache=False``: the files are parsed without the
    parsed-array cache of the user cache directory (nothing read from it or left there)."""

    key = json.dumps(
        [
            config.data.dataset,
            config.data.options,
            config.data.fallback,
            str(resolve_data_dir(data_dir)),
            _split_seed(config),
            _strict(config),
            _alignment_options(config) if config.data.dataset == "parties" else None,
        ],
        sort_keys=True,
        default=str,
    )
    stamp = _file_stamp(config, data_dir)
    hit = _DATASETS.pop(key, None) if not keep else _DATASETS.get(key)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    _DATASETS.clear()  # one dataset at a time: they can be large
    loaded = _load_config_dataset(config, data_dir, use_cache)
    if keep:
        _DATASETS[key] = (stamp, loaded)
    return loaded


def _split_seed(config: Config):
    """The seed the loaded records depend on: run.seed only for a user file split at random
    without its own ``split_seed`` (a sweep over seeds then loads every other dataset once)."""
    d = config.data
    if d.dataset in ("libsvm", "csv", "parties") and "test_fraction" in d.options and "split_seed" not in d.options:
        return config.run.seed
    return None


def _file_stamp(config: Config, data_dir):
    """Sizes and mtimes of the files a dataset reads (None for generated data).

    A user file is named by a path relative to the working directory: the same
    option may name another file, or a rewritten one, later in the process."""

    if config.data.dataset not in REGISTRY:
        tables = config.data.options.get("party") or [config.data.options]
        paths = [t.get(k) for t in tables if isinstance(t, dict) for k in ("path", "test_path")]
        return tuple((os.path.abspath(p), *_stat(p).values()) for p in paths if isinstance(p, str)) or None
    return tuple(
        (f.get("path"), f.get("size"), f.get("mtime"))
        for f in ({**f, **_stat(f.get("path"))} for f in dataset_status(config.data.dataset, data_dir))
    )


def _stat(path):

    try:
        st = os.stat(path)
        return {"size": st.st_size, "mtime": st.st_mtime_ns}
    except (OSError, TypeError):
        return {}


def _strict(config: Config) -> bool:
    """Whether the files are read strictly: a malformed record stops a run that claims no
    guarantee with one line naming it; in a run that claims one, every record is a row and
    nothing a record holds stops the run (:func:`vfl.datasets.loaders.load_raw`)."""
    return not config.privacy.claims_guarantee


def _load_config_dataset(config: Config, data_dir=None, use_cache: bool = True) -> tuple[RawDataset, str | None]:
    d = config.data
    if d.fallback and d.dataset in REGISTRY:
        if not any(f["present"] for f in dataset_status(d.dataset, data_dir)):
            note = f"no {d.dataset} file in {resolve_data_dir(data_dir)}; used data.fallback = {d.fallback!r}"
            return load_raw(d.fallback), note
    options = dict(d.options)
    if _split_seed(config) is not None:
        options["split_seed"] = config.run.seed
    if d.dataset == "parties":
        options["alignment"] = _alignment_options(config)
    return load_raw(d.dataset, data_dir, options=options, strict=_strict(config), use_cache=use_cache), None


def _alignment_options(config: Config) -> dict:
    """Party files: the agreed row order's key comes from the run's seed in a replayable
    run (a simulation replays bit for bit), from OS entropy in a deployment."""
    given = dict(config.data.options.get("alignment", {}))
    if config.privacy.replayable_noise and "seed" not in given:
        given["seed"] = config.run.seed
    return given
