"""``vfl datasets split``: a config's data, or one file, as party files plus a config that
trains on them.

With ``--config`` the config's own records are read as its run would read them, its
``[partition]`` (over encoded columns) is mapped back onto the raw columns each party
holds (a one-hot block is never split between parties), and the written config is the
same config with ``[data]`` naming the party files: so every vertical config, shipped or
yours, can also run from party files. The test part becomes every party's test file
(every test row in every party, in an order of its own); when the test rows were held
out of the training file itself they stay records of it, dealt with the rest, and the
written config holds them out again (``data.test_fraction``).
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from vfl.core.errors import ConfigError, DataError
from vfl.core.solver import Setting
from vfl.datasets.parties.party_spec import party_format
from vfl.datasets.parties.split import write_parties
from vfl.datasets.parties.tomlw import dumps
from vfl.datasets.userfiles import load_csv, load_libsvm

from .config import Config, apply_overrides, config_from_dict, load_config, read_toml
from .distribution import fit_config_stage
from .heldout import test_part_private
from .partition import make_partition
from .registry import get_solver
from .run_data import load_config_dataset

__all__ = ["split", "split_config", "split_file"]


def _groups(config: Config, raw, cls) -> list[list[str]]:
    """Each party's raw columns under ``config``'s partition of the encoded columns."""

    stage = fit_config_stage(config, raw, cls)
    enc = stage.encoder
    width = sum(enc._width(n) for n in enc.layout)
    partition = make_partition(config.partition, width, rows=stage.rows)
    owner = {}
    for m, cols in enumerate(partition.parties):
        for j in cols:
            owner[int(j)] = m
    groups: list[list[str]] = [[] for _ in partition.parties]
    at = 0
    for name in enc.layout:
        w = enc._width(name)
        held = {owner.get(j) for j in range(at, at + w)}
        at += w
        if len(held) > 1:
            raise ConfigError(
                f"partition: column {name!r} ({w} encoded columns) is split "
                "between parties; party files hold whole columns"
            )
        m = held.pop()
        if m is not None:
            groups[m].append(name)
    return groups


def _written(raw_toml: dict, tables: list[dict], test_fraction: float | None) -> dict:
    out = {k: v for k, v in raw_toml.items() if k not in ("data", "partition")}
    out["name"] = f"{raw_toml.get('name', 'run')}-parties"
    data = {"dataset": "parties"}
    if test_fraction is not None:
        data["test_fraction"] = test_fraction
    data["party"] = tables
    partition = {k: v for k, v in raw_toml.get("partition", {}).items() if k in ("public", "allow_unused")}
    return {"name": out.pop("name"), "data": data, **({"partition": partition} if partition else {}), **out}


def _finish(out: Path, written: dict, header: str, overwrite: bool, build) -> Path:
    """Write everything into a fresh directory beside ``out``, then move it into place."""
    if out.exists() and not overwrite:
        raise ConfigError(f"{out} exists; pass --overwrite to replace it")
    tmp = out.with_name(f".{out.name}.partial")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tables = build(tmp)
        final = {k: v for k, v in written.items()}
        for t in tables:  # the files' final place
            for key in ("path", "test_path", "schema"):
                if key in t:
                    t[key] = str(out.resolve() / Path(t[key]).name)
        final["data"] = {**final["data"], "party": tables}
        text = dumps(final, header)
        config_from_dict(__import__("tomllib").loads(text))  # it reads back as a valid config
        (tmp / "config.toml").write_text(text)
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out / "config.toml"


def split_config(
    config_path, *, overlap: float, seed: int, out: Path, data_dir=None, overrides=(), overwrite: bool = False
) -> Path:
    """Party files of ``config_path``'s data and ``out/config.toml`` training on them."""

    config = load_config(config_path, list(overrides))
    if config.setting is not Setting.VERTICAL:
        raise ConfigError(
            f"{Path(config_path).name}: party files hold columns; "
            f"{config.solver.name} is {config.setting.value} (its units hold rows)"
        )
    if config.data.dataset == "parties":
        raise ConfigError(f"{Path(config_path).name} already reads party files")
    raw, _ = load_config_dataset(config, data_dir, keep=False)
    groups = _groups(config, raw, get_solver(config.solver.name))
    held_out = bool(test_part_private(raw))
    fraction = None
    if held_out:  # the test rows are the training file's records: deal them with the rest
        fraction = float(raw.provenance["split"]["test_fraction"])

        raw = replace(raw, train=raw.train.stack(raw.test), y_train=np.concatenate([raw.y_train, raw.y_test]))
    written = _written(apply_overrides(read_toml(config_path), list(overrides)), [], fraction)
    header = (
        f"{written['name']}: {Path(config_path).name} from {len(groups)} party files "
        f"(vfl datasets split --config, overlap {overlap:g}, seed {seed}).\n"
        "Each party's file holds its own columns and a synthetic ID; the rows are "
        "aligned by PSI when the run starts."
    )
    return _finish(
        out,
        written,
        header,
        overwrite,
        lambda tmp: write_parties(raw, groups, overlap=overlap, seed=seed, out=tmp, test=not held_out),
    )


def _label_positive(path, label: str) -> dict:
    """``{"label_positive": larger}`` when the file's two labels are not read as such."""

    try:
        values = pd.read_csv(path, usecols=[label], dtype=str, keep_default_na=False)[label]
    except (ValueError, OSError):  # the loader names the problem
        return {}
    classes = sorted(set(v.strip() for v in values if v.strip()))
    if len(classes) != 2:
        return {}
    try:
        numbers = {float(c) for c in classes}
    except ValueError:
        numbers = None
    if numbers in ({0.0, 1.0}, {-1.0, 1.0}):
        return {}
    larger = max(classes, key=float) if numbers is not None else classes[1]
    return {"label_positive": float(larger) if numbers is not None else larger}


def split_file(
    path,
    *,
    label: str | None,
    parties: int,
    overlap: float,
    seed: int,
    out: Path,
    test: str | None = None,
    overwrite: bool = False,
) -> Path:
    """Party files of one CSV or LIBSVM file (its columns in ``parties`` near-equal groups)
    and ``out/config.toml`` (ADMM sharing on them)."""

    fmt = party_format(str(path))
    if fmt == "csv" and not label:
        raise DataError(f"{path}: a CSV file needs --label COLUMN")
    if fmt != "csv" and label:
        raise DataError("--label applies to CSV files; a LIBSVM file's label is the first value of each line")
    options = {"path": str(path), **({"label": label} if label else {})}
    options.update({"test_path": test} if test else {"test_fraction": 0.2, "split_seed": seed, "stratify": False})
    if fmt == "csv":  # two labels other than {0, 1} / {-1, +1}: the larger is +1, and the
        # written config declares both (labels = [negative, positive]) for the user to see
        options.update(_label_positive(path, label))
    raw = (load_csv if fmt == "csv" else load_libsvm)(options)
    names = list(raw.train.names)
    if parties > len(names):
        raise DataError(f"cannot split {len(names)} column(s) among {parties} parties")
    cuts = [round(k * len(names) / parties) for k in range(parties + 1)]
    groups = [names[a:b] for a, b in zip(cuts[:-1], cuts[1:])]
    fraction = None
    if not test:  # the held-out rows are the file's records too: dealt with the rest
        raw = replace(raw, train=raw.train.stack(raw.test), y_train=np.concatenate([raw.y_train, raw.y_test]))
        fraction = 0.2
    written = {
        "name": f"{Path(path).name.split('.')[0]}-parties",
        "data": {"dataset": "parties", **({"test_fraction": fraction} if fraction else {}), "party": []},
        "solver": {"name": "admm_sharing", "epochs": 100},
    }
    header = (
        f"{written['name']}: {Path(path).name} as {parties} party files (vfl datasets "
        f"split, overlap {overlap:g}, seed {seed}); the rows are aligned by PSI when the "
        "run starts. Add [preprocessing], [objective] and [privacy] as for any file."
    )
    return _finish(
        out,
        written,
        header,
        overwrite,
        lambda tmp: write_parties(raw, groups, overlap=overlap, seed=seed, out=tmp, test=bool(test)),
    )


def split(
    path,
    config_path,
    *,
    label,
    parties: int,
    overlap: float,
    seed: int,
    test,
    out: Path,
    overrides=(),
    overwrite: bool = False,
    data_dir=None,
) -> Path:
    """``vfl datasets split``: FILE or ``--config``, the options each one takes."""
    if (path is None) == (config_path is None):
        raise ConfigError("give a FILE to split or --config CONFIG, one of them")
    if config_path is not None:
        if label or test or parties != 2:
            raise ConfigError(
                "--label, --test and --parties describe a FILE; with --config the "
                "config's [data] and [partition] say them"
            )
        return split_config(
            config_path,
            overlap=overlap,
            seed=seed,
            out=out,
            data_dir=data_dir,
            overrides=overrides,
            overwrite=overwrite,
        )
    if overrides:
        raise ConfigError("--set applies with --config")
    return split_file(
        path, label=label, parties=parties, overlap=overlap, seed=seed, out=out, test=test, overwrite=overwrite
    )
