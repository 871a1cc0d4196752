"""Every raw record maps to a valid, bounded row in a private run, on the real files (issue 33,
item 1; tests/test_raw_records.py pins each kind's default on small files).

The ``data`` tests replace record 100 of the real files, through the stage of the shipped
private configs, for a9a, a LIBSVM file of the user's, Adult and a CSV: N and every other
row stay bit-identical, the replaced row is finite and within the enforced bounds, and
nothing is raised.
"""

from __future__ import annotations

import bz2
import shutil
from pathlib import Path

import numpy as np
import pytest
from hostile import a9a_kinds as _a9a_kinds
from hostile import adult_kinds as _adult_kinds
from hostile import csv_kinds as _csv_kinds
from shipped import paper_configs, write_breast_cancer
from test_raw_records import _dense

from vfl.core.errors import DataError
from vfl.core.relations import Cleaning
from vfl.datasets.loaders import load_raw
from vfl.datasets.schemas import FILE_RECORDS
from vfl.experiments.config import load_config
from vfl.experiments.distribution import fit_config_stage
from vfl.experiments.registry import get_solver
from vfl.experiments.run_data import load_config_dataset
from vfl.experiments.runner import run_experiment
from vfl.experiments.settings import prepare
from vfl.experiments.summary import run_summary

ROOT = Path(__file__).resolve().parents[1]


REPLACED = 100  # the record (0-based line of the file, after a CSV's header) replaced


# ----------------------------------------------------------------- the real files --


def _lines_of(path: Path) -> list[bytes]:
    return bz2.open(path).read().split(b"\n") if path.suffix == ".bz2" else path.read_bytes().split(b"\n")


#: family -> (the shipped private configs whose stage reads it, its hostile kinds)
FAMILIES = {
    "a9a": (["private_utility/private-stacking-a9a"], _a9a_kinds),
    "libsvm": (["private_utility/private-stacking-a9a"], _a9a_kinds),
    "adult": (["private_utility/private-utility-admm-adult", "dp_admm/dp-admm-l2"], _adult_kinds),
    "csv": (["own-data/stacking", "own-data/dp-admm"], _csv_kinds),
}


def _config_path(name: str) -> Path:
    folder, stem = name.split("/")
    return (ROOT / "configs" / "own-data" if folder == "own-data" else paper_configs(folder)) / f"{stem}.toml"


@pytest.fixture(scope="module")
def real_files(tmp_path_factory, data_dir):
    """The originals as plain files: a9a, a9a.t, adult.data, adult.test, the breast-cancer
    CSV (the README's worked example)."""
    base = tmp_path_factory.mktemp("originals")
    for name in ("a9a", "a9a.t", "adult.data", "adult.test"):
        (base / name).write_bytes(bz2.open(data_dir / f"{name}.bz2").read())
    write_breast_cancer(base)  # README's two files: the private rows and the test rows
    return base


def _write_family(family: str, originals: Path, target: Path, hostile: dict[int, bytes]):
    """A copy of the family's files in ``target`` with records ``hostile`` replaced."""
    target.mkdir(parents=True, exist_ok=True)
    names = {
        "a9a": ("a9a", "a9a.t"),
        "libsvm": ("a9a", "a9a.t"),
        "adult": ("adult.data", "adult.test"),
        "csv": ("breast_cancer.csv", "breast_cancer_test.csv"),
    }[family]
    header = 1 if family == "csv" else 0
    for name in names:
        shutil.copy(originals / name, target / name)
    lines = (originals / names[0]).read_bytes().split(b"\n")
    for k, record in hostile.items():
        lines[header + k] = record
    (target / names[0]).write_bytes(b"\n".join(lines))


def _config(family: str, name: str, directory: Path):
    path = _config_path(name)
    if family != "libsvm":
        return load_config(path)
    # the user's own LIBSVM file: a9a under another name, read with the public options
    text = path.read_text().replace(
        'dataset = "a9a"',
        "\n".join(
            [
                'dataset = "libsvm"',
                f'path = "{directory / "a9a"}"',
                f'test_path = "{directory / "a9a.t"}"',
                "n_features = 123",
                "zero_based = false",
                "labels = [-1, 1]",
            ]
        ),
    )
    copy = directory / "libsvm.toml"
    copy.write_text(text)
    return load_config(copy)


def _read(family: str, config, directory: Path, monkeypatch, cache: dict):
    """(raw records, the stage's rows, the parties' blocks or None) of a private run."""
    key = (family, config.name, str(directory))
    if key not in cache:
        monkeypatch.chdir(directory)  # the own-data configs name their CSV relative to it
        assert config.privacy.claims_guarantee
        options = dict(config.data.options)
        if config.data.dataset == "csv":
            options.setdefault("split_seed", config.run.seed)
        raw = load_raw(config.data.dataset, directory, options=options, strict=False)
        cls = get_solver(config.solver.name)
        setting = prepare(config, raw, cls)
        blocks = getattr(setting, "_train", None)
        cache[key] = (raw, setting.records()[0], blocks, fit_config_stage(config, raw, cls))
    return cache[key]


@pytest.fixture(scope="module")
def originals_cache() -> dict:
    """The originals, read and staged once per module."""
    return {}


def _bounded(config, raw, rows, blocks, stage, changed: list[int]) -> None:
    """The replaced rows are finite and within what the run enforces."""
    X = _dense(rows)[changed]
    assert np.all(np.isfinite(X))
    scaled = stage.columns(raw.train.take(np.asarray(changed, dtype=np.int64)))
    if stage.scaler is not None and stage.scaler.kind == "minmax":
        S = _dense(scaled)[:, stage.scaler.columns]
        assert S.min(initial=stage.scaler.lower) >= stage.scaler.lower
        assert S.max(initial=stage.scaler.upper) <= stage.scaler.upper
    if stage.rows.bound is not None:
        parts = [_dense(b)[changed] for b in blocks] if blocks is not None else [X]
        for part in parts:  # each party's block (vertical), else the row
            assert np.linalg.norm(part, axis=1).max(initial=0.0) <= stage.rows.bound + 1e-12


def _check(family, name, kinds, originals, tmp, monkeypatch, cache):
    """Replace records ``REPLACED, REPLACED + 1, ...`` with ``kinds`` (one each) and check
    every other row bit-identical and the replaced ones bounded."""
    base_dir = tmp / "orig"
    if not base_dir.exists():
        _write_family(family, originals, base_dir, {})
    config0 = _config(family, name, base_dir)
    raw0, rows0, _, _ = _read(family, config0, base_dir, monkeypatch, cache)
    header = 1 if family == "csv" else 0
    source = {"a9a": "a9a", "libsvm": "a9a", "adult": "adult.data", "csv": "breast_cancer.csv"}[family]
    lines = (originals / source).read_bytes().split(b"\n")[header:]
    hostile = {
        REPLACED + j: record for j, record in enumerate(FAMILIES[family][1](lines[REPLACED]).get(k) for k in kinds)
    }
    host_dir = tmp / f"{name.replace('/', '-')}-{len(kinds)}-{kinds[0].replace(' ', '_')}"
    _write_family(family, originals, host_dir, hostile)
    config1 = _config(family, name, host_dir)
    raw1, rows1, blocks1, stage1 = _read(family, config1, host_dir, monkeypatch, {})
    A0, A1 = _dense(rows0), _dense(rows1)
    if raw1.cleaning is not None:  # the paper's cleaned file: records dropped by a public rule
        records = lines[: FILE_RECORDS[source].count]
        complete = [i for i, line in enumerate(records) if b"?" not in line]
        kept = [
            i
            for i in complete
            if i not in hostile or hostile[i] == lines[i] or kinds[i - REPLACED] == "unseen and huge"
        ]
        assert A1.shape == (len(kept), A0.shape[1])
        at0 = {i: r for r, i in enumerate(complete)}
        same = [r for r, i in enumerate(kept) if i not in hostile]
        assert np.array_equal(A1[same], A0[[at0[kept[r]] for r in same]])
        _bounded(config1, raw1, rows1, blocks1, stage1, [r for r, i in enumerate(kept) if i in hostile])
        return
    assert A1.shape == A0.shape and raw1.test.n_rows == raw0.test.n_rows  # N fixed
    if family == "csv":  # the held-out quarter may hold a replaced record
        changed = np.flatnonzero(
            np.any(_dense(raw0.train.numeric) != _dense(raw1.train.numeric), axis=1) | (raw0.y_train != raw1.y_train)
        ).tolist()
        changed_t = np.any(raw0.test.numeric != raw1.test.numeric, axis=1) | (raw0.y_test != raw1.y_test)
        # a replaced record whose default is what it held (a label 0 that became -1) is equal
        assert len(changed) + changed_t.sum() <= len(kinds)
        assert np.array_equal(raw0.test.numeric[~changed_t], raw1.test.numeric[~changed_t])
    else:
        changed = sorted(hostile)
    keep = np.setdiff1d(np.arange(A0.shape[0]), changed)
    assert np.array_equal(A1[keep], A0[keep]), "a record other than the replaced ones changed"
    _bounded(config1, raw1, rows1, blocks1, stage1, changed)


CASES = [(family, name) for family, (names, _) in FAMILIES.items() for name in names]


@pytest.mark.data
@pytest.mark.parametrize("family,name", CASES, ids=[f"{f}-{n.split('/')[1]}" for f, n in CASES])
def test_every_hostile_kind_at_once(family, name, real_files, tmp_path_factory, monkeypatch, originals_cache):
    """The fast tier: every hostile kind of the family, each in its own record, one file."""
    kinds = list(
        FAMILIES[family][1](
            b"1 1:1" if family in ("a9a", "libsvm") else b", ".join([b"x"] * 15) if family == "adult" else b"x,x,x,x"
        )
    )
    tmp = tmp_path_factory.getbasetemp() / f"raw-{family}"
    _check(family, name, kinds, real_files, tmp, monkeypatch, originals_cache)


SLOW_CASES = [
    (family, name, kind)
    for family, name in CASES
    for kind in FAMILIES[family][1](
        b"1 1:1" if family in ("a9a", "libsvm") else b", ".join([b"x"] * 15) if family == "adult" else b"x,x,x,x"
    )
]


@pytest.mark.slow
@pytest.mark.data
@pytest.mark.parametrize("family,name,kind", SLOW_CASES, ids=[f"{f}-{n.split('/')[1]}-{k}" for f, n, k in SLOW_CASES])
def test_each_hostile_kind_in_record_100(
    family, name, kind, real_files, tmp_path_factory, monkeypatch, originals_cache
):
    tmp = tmp_path_factory.getbasetemp() / f"raw-{family}"
    _check(family, name, [kind], real_files, tmp, monkeypatch, originals_cache)


@pytest.mark.data
def test_a_changed_registry_file_is_recorded_not_refused(real_files, tmp_path):
    _write_family("a9a", real_files, tmp_path, {REPLACED: b""})
    raw = load_raw("a9a", tmp_path, strict=False)  # verify stays on
    assert raw.train.n_rows == 32_561
    assert raw.provenance["diagnostic"]["sha256_mismatch"] == ["a9a"]
    assert raw.provenance["diagnostic"]["repairs"]["a9a"]["records_malformed"] == 1
    with pytest.raises(DataError, match="sha256 mismatch"):
        load_raw("a9a", tmp_path)  # a run that claims no guarantee still refuses it


@pytest.mark.data
def test_the_runs_state_their_records(real_files):
    """DP-ADMM's reproduction states its relation on the paper's cleaned file, in the manifest
    and the summary; a private run that does not clean reads every record (N from the file)."""

    quick = ["solver.epochs=2", "run.repeats=1", "run.baselines=none"]
    config = load_config(paper_configs("dp_admm") / "dp-admm-l2.toml", quick)
    result = run_experiment(config, data_dir=real_files, with_baselines=False)
    relation = result.manifest.dump()["privacy"]["neighbouring"]
    assert relation.endswith(
        "; on the cleaned file (records with a missing or malformed field "
        "removed before the mechanism, as Huang et al. did)"
    )
    assert relation in run_summary(result, real_files / "out", 1.0)
    provenance = result.manifest.dump()["dataset"]["provenance"]
    assert provenance["missing"] == "drop" and provenance["cleaning"]["by"] == "Huang et al."
    # how many records the cleaning removed depends on the file: the diagnostic section's
    exact = result.manifest.dump()["diagnostic"]["dataset"]["provenance"]
    assert exact["repairs"]["train"]["records_dropped"] == 2399
    assert "rows_dropped" not in provenance and "diagnostic" not in provenance

    # through the runner's one call site: a private run reads record by record
    config = load_config(paper_configs("private_utility") / "private-utility-admm-adult.toml")
    raw, _ = load_config_dataset(config, real_files, keep=False)
    assert raw.train.n_rows == 32_561 and raw.cleaning is None  # every record of adult.data
    assert raw.provenance["missing"] == "default"
    # a simulation (no guarantee) reads strictly; Xiao et al.'s configs clean as they did
    config = load_config(paper_configs("ldp") / "ldp-admm-n10.toml")
    raw, _ = load_config_dataset(config, real_files, keep=False)
    assert raw.train.n_rows == 30_162 and raw.cleaning == Cleaning(by="Xiao et al.")
    assert "strict" in raw.provenance["parsing"]
