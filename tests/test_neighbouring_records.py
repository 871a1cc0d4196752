"""The neighbouring relation covers the raw file.

For every private config that ships, one record of the private training file
is replaced by a hostile one (an unseen category, values a million times
their range). Then the preprocessing stage, fitted exactly as a run fits it,
must give every *other* record bit-identical features, and the same width:
no parameter of the stage may depend on the private records.
"""

from __future__ import annotations

import bz2
import copy
import dataclasses
import shutil
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from shipped import ALL, write_breast_cancer

from vfl.core.errors import ConfigError
from vfl.datasets.loaders import load_raw
from vfl.experiments.config import load_config
from vfl.experiments.registry import get_solver
from vfl.experiments.settings import prepare

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ALL
REPLACED = 100  # the record (0-based, among the parsed training records) that is replaced

# LDP configs reproduce the paper as simulations; with privacy.delta they claim a guarantee.
LDP_PRIVATE = ["privacy.delta=1e-5"]


def _private(path: Path):
    """The config as a private run (None if it is not a private method)."""
    config = load_config(path)
    if config.privacy.claims_guarantee:
        return config
    if config.setting.value != "network":
        return None
    try:  # LDP configs reproduce the paper as simulations; with privacy.delta they account
        config = load_config(path, LDP_PRIVATE)
    except ConfigError:
        return None
    return config if config.privacy.claims_guarantee else None


PRIVATE = [(p, c) for p in CONFIGS if (c := _private(p)) is not None]


def test_every_private_family_is_covered():
    datasets = {c.data.dataset for _, c in PRIVATE}
    solvers = {c.solver.name for _, c in PRIVATE}
    assert {"a9a", "adult", "csv"} <= datasets
    assert {"private_stacking", "admm_sharing", "dp_admm"} <= solvers
    assert any(c.setting.value == "network" for _, c in PRIVATE)


# ----------------------------------------------------------------- hostile files --
def _hostile_a9a(lines: list[str]) -> str:
    return "+1 3:1000000 50:-1000000 123:1000000"


def _hostile_adult(lines: list[str]) -> str:
    # unseen categories everywhere, numbers far outside every declared range
    return (
        "90000000, Atlantis-gov, 1500000000000, Moon-school, 16000000, Space-married, "
        "Star-pilot, Alien, Martian, Male, 99999000000, 5000000000, 99000000, Atlantis, >50K"
    )


def _hostile_csv(lines: list[str]) -> str:
    header = lines[0].split(",")
    values = [str(1e6 * (1 + j)) if name != "label" else "0" for j, name in enumerate(header)]
    return ",".join(values)


def _replace(lines: list[str], index: int, hostile: str, skip) -> list[str]:
    """``lines`` with the ``index``-th record (lines for which ``skip`` is false) replaced."""
    seen = -1
    out = list(lines)
    for i, line in enumerate(lines):
        if skip(line):
            continue
        seen += 1
        if seen == index:
            out[i] = hostile
            return out
    raise AssertionError("not enough records")


def _text(path: Path) -> str:
    return bz2.open(path, "rt").read() if path.suffix == ".bz2" else path.read_text()


@pytest.fixture(scope="module")
def data_dirs(tmp_path_factory, data_dir):
    """(original, hostile) data directories: a9a, adult and the breast-cancer CSV."""
    base = tmp_path_factory.mktemp("neighbours")
    orig, host = base / "orig", base / "hostile"
    orig.mkdir(), host.mkdir()
    for name in ("a9a", "a9a.t", "adult.data", "adult.test"):
        src = next(Path(data_dir).glob(name + "*"))
        (orig / name).write_text(_text(src))
        shutil.copy(orig / name, host / name)
    a9a = (orig / "a9a").read_text().splitlines()
    (host / "a9a").write_text("\n".join(_replace(a9a, REPLACED, _hostile_a9a(a9a), lambda l: not l.strip())) + "\n")
    adult = (orig / "adult.data").read_text().splitlines()
    (host / "adult.data").write_text(
        "\n".join(_replace(adult, REPLACED, _hostile_adult(adult), lambda l: not l.strip() or "?" in l)) + "\n"
    )
    write_breast_cancer(orig)  # the training file and the test file of README's example
    shutil.copy(orig / "breast_cancer_test.csv", host / "breast_cancer_test.csv")
    csv = (orig / "breast_cancer.csv").read_text().splitlines()
    # the CSV's records are its lines after the header
    body = _replace(csv[1:], REPLACED, _hostile_csv(csv), lambda l: False)
    (host / "breast_cancer.csv").write_text("\n".join([csv[0], *body]) + "\n")
    return orig, host


def _read_only(*arrays) -> None:
    for a in arrays:
        for part in (a.data, a.indices, a.indptr) if sp.issparse(a) else (a,):
            if isinstance(part, np.ndarray):
                part.flags.writeable = False


@pytest.fixture(scope="module")
def raw_cache() -> dict:
    """(dataset, directory, options) -> the records ``load_raw`` read. Most configs read the
    same files with the same options, and parsing adult twice per config was most of this
    module's time."""
    return {}


def _load_raw(name: str, directory: Path, options: dict, cache: dict):
    """``load_raw`` of these files as a private run reads them (record by record), parsed
    once per module. The arrays are shared, so they are made read-only: a stage that wrote
    into the records it reads fails here instead of passing on the records an earlier
    config left behind."""
    key = (name, str(directory), repr(sorted(options.items())))
    if key not in cache:
        raw = load_raw(name, directory, options=options, verify=False, strict=False)
        tables = (raw.train, raw.test, raw.vocabulary_rows)
        _read_only(
            raw.y_train,
            raw.y_test,
            *(a for t in tables if t is not None for a in (t.numeric, t.categorical) if a is not None),
        )
        cache[key] = raw
    raw = cache[key]
    return dataclasses.replace(
        raw,
        checksums=copy.deepcopy(raw.checksums),
        provenance=copy.deepcopy(raw.provenance),
        defaults=copy.deepcopy(raw.defaults),
    )


def _records(config, directory: Path, monkeypatch, cache: dict):
    monkeypatch.chdir(directory)  # own-data configs name their CSV relative to the working dir
    options = dict(config.data.options)
    if config.data.dataset == "csv":
        options.setdefault("split_seed", config.run.seed)
    raw = _load_raw(config.data.dataset, directory, options, cache)
    setting = prepare(config, raw, get_solver(config.solver.name))
    return raw, setting.records()


def _dense(X):
    return X.toarray() if sp.issparse(X) else np.asarray(X)


def _changed(t0, t1) -> np.ndarray:
    """The records in which two raw tables differ."""
    diff = np.any(_dense(t0.numeric) != _dense(t1.numeric), axis=1)
    if t0.categorical is not None:
        diff |= np.any(t0.categorical != t1.categorical, axis=1)
    return np.flatnonzero(diff)


@pytest.mark.data
@pytest.mark.parametrize("path,config", PRIVATE, ids=[p.stem for p, _ in PRIVATE])
def test_other_records_bit_identical(path, config, data_dirs, raw_cache, monkeypatch):
    orig, host = data_dirs
    raw0, (train0, test0) = _records(config, orig, monkeypatch, raw_cache)
    raw1, (train1, test1) = _records(config, host, monkeypatch, raw_cache)
    assert train0.shape == train1.shape and test0.shape == test1.shape  # width unchanged
    # which stored record is the replaced one: the file's line, or (Adult cleaned as a paper
    # did) its place among the complete records; the CSV's test split may hold it out
    changed, changed_test = _changed(raw0.train, raw1.train), _changed(raw0.test, raw1.test)
    assert changed.size + changed_test.size == 1
    if config.data.dataset != "csv":
        assert changed.size == 1 and changed_test.size == 0
    A0, A1 = _dense(train0), _dense(train1)
    keep = np.setdiff1d(np.arange(A0.shape[0]), changed)
    assert np.array_equal(A0[keep], A1[keep]), "a record other than the replaced one changed"
    assert not np.array_equal(A0[changed], A1[changed]) or changed.size == 0
    B0, B1 = _dense(test0), _dense(test1)
    keep_t = np.setdiff1d(np.arange(B0.shape[0]), changed_test)
    assert np.array_equal(B0[keep_t], B1[keep_t])
    # the hostile record itself is bounded like every other one
    assert np.all(np.isfinite(A1))
    if config.setting.value != "vertical" and config.preprocessing.values.get("normalize_rows"):
        assert np.max(np.linalg.norm(A1, axis=1)) <= 1.0 + 1e-12
