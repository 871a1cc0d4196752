"""Released versus diagnostic: every value a private run writes is one or the other.

A released column must be recomputable from the releases alone: a run on the
same data with every protected value replaced, forced to release what the
first run released, gives it bit for bit (:func:`check_released`).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from cli_helpers import assert_one_line_error, invoke
from vfl.core.solver import DIAGNOSTIC, RELEASED, column_kinds
from vfl.experiments.config import config_from_dict
from vfl.experiments.registry import get_solver, solver_names
from vfl.experiments.released import check_released

_SYN = {"dataset": "synthetic", "options": {"n_train": 600, "n_test": 120, "n_features": 8,
                                             "seed": 3}}
STACKING = {"name": "s", "data": _SYN, "preprocessing": {"normalize_rows": True},
            "partition": {"columns": [4, 4]}, "objective": {"lam": 1.0},
            "solver": {"name": "private_stacking", "epochs": 1},
            "privacy": {"epsilon": 2.0, "delta": 1e-5}}
_HORIZONTAL = {"data": _SYN, "preprocessing": {"normalize_rows": True},
               "partition": {"agents": 5, "samples_per_agent": 100, "public": 50,
                             "held_out": "test_part"},
               "objective": {"lam": 0.1, "reduction": "unit_mean", "regularizer": "half_l2sq"}}
DP_ADMM = {"name": "d", **_HORIZONTAL, "solver": {"name": "dp_admm", "epochs": 10},
           "privacy": {"epsilon": 1.0, "delta": 1e-3}}
ALG2 = {"name": "a", **_HORIZONTAL, "solver": {"name": "consensus_admm_perturbed", "epochs": 5},
        "privacy": {"epsilon_per_iteration": 0.5, "delta": 1e-3}}


@pytest.mark.parametrize("raw", [STACKING, DP_ADMM, ALG2], ids=["stacking", "dp_admm", "alg2"])
def test_released_columns_depend_on_the_releases_alone(raw):
    config = config_from_dict(raw)
    table = check_released(config)
    released = {c: v for c, v in table.items() if v[0] == RELEASED}
    assert {"test_logloss", "test_accuracy"} <= set(released)
    for col, (_, original, replaced) in released.items():
        assert original == replaced, col  # bit for bit
    # and the check has power: a diagnostic column sees the replaced data
    assert table["train_logloss"][0] == DIAGNOSTIC
    assert table["train_logloss"][1] != table["train_logloss"][2]


def test_every_registered_solver_declares_its_kinds():
    for name in solver_names():
        cls = get_solver(name)
        kinds = column_kinds(cls, ["epoch", "train_logloss", "test_logloss", *cls.columns], True)
        assert kinds["epoch"] == RELEASED and kinds["train_logloss"] == DIAGNOSTIC
        if kinds["test_logloss"] == DIAGNOSTIC and cls.privacy_params:
            # a private method whose test metrics are not released says why
            assert cls.diagnostic_note or not any(p.name == "delta" for p in cls.privacy_params), name
        assert all(v == RELEASED for v in column_kinds(cls, kinds, False).values())


def test_manifest_labels_and_release_only(tmp_path):
    cfg = tmp_path / "s.toml"
    lines = ['name = "s"', "[data]", 'dataset = "synthetic"',
             "options = { n_train = 600, n_test = 120, n_features = 8, seed = 3 }",
             "[preprocessing]", "normalize_rows = true", "[partition]", "columns = [4, 4]",
             "[objective]", "lam = 1.0", "[solver]", 'name = "private_stacking"', "epochs = 1",
             "[privacy]", "epsilon = 2.0", "delta = 1e-5"]
    cfg.write_text("\n".join(lines) + "\n")
    full = invoke("run", "--config", cfg, "--out", tmp_path / "full")
    assert full.returncode == 0, full.stderr
    man = json.loads((tmp_path / "full" / "manifest.json").read_text())
    assert man["released"]["columns"]["train_logloss"] == DIAGNOSTIC
    assert man["released"]["columns"]["test_logloss"] == RELEASED
    assert man["released"]["files"]["baselines.json"] == DIAGNOSTIC
    assert "* diagnostic" in full.stdout and "0." in full.stdout
    only = invoke("run", "--config", cfg, "--out", tmp_path / "only", "--release-only")
    assert only.returncode == 0, only.stderr
    header = (tmp_path / "only" / "metrics.csv").read_text().splitlines()[0].split(",")
    assert "test_logloss" in header and "train_logloss" not in header
    assert "wall_time_s" not in header and "objective" not in header
    baselines = json.loads((tmp_path / "only" / "baselines.json").read_text())
    assert "central" not in baselines
    man = json.loads((tmp_path / "only" / "manifest.json").read_text())
    assert man["released"]["release_only"] and "solver_seconds" not in man["result"]


def test_release_only_needs_a_guarantee(tmp_path):
    cfg = tmp_path / "n.toml"
    cfg.write_text('[data]\ndataset = "synthetic"\n'
                   "options = { n_train = 60, n_test = 20, n_features = 4, seed = 1 }\n"
                   "[partition]\ncolumns = [2, 2]\n")
    result = invoke("run", "--config", cfg, "--out", tmp_path / "o", "--release-only")
    assert_one_line_error(result, "--release-only applies to a run that claims a privacy guarantee")
    assert not (tmp_path / "o").exists()


def test_admm_sharing_test_metrics_are_diagnostic():
    cls = get_solver("admm_sharing")
    assert column_kinds(cls, ["test_logloss"], True)["test_logloss"] == DIAGNOSTIC
    assert "exact x_m" in cls.diagnostic_note
    assert np.isscalar(cls.diagnostic_note)


@pytest.mark.parametrize("bound", ["kl", "clopper-pearson", "truncated-kl"])
def test_audit_names_its_bound_and_calibrates_its_power(tmp_path, bound):
    """`vfl audit --bound B --noise-scale S`: the report names the bound, records S, and every
    pair carries its exercised / charged sensitivity."""
    cfg = tmp_path / "s.toml"
    cfg.write_text('name = "s"\n[data]\ndataset = "synthetic"\n'
                   "options = { n_train = 300, n_test = 60, n_features = 6, seed = 3 }\n"
                   "[preprocessing]\nnormalize_rows = true\n[partition]\ncolumns = [3, 3]\n"
                   "[objective]\nlam = 1.0\n[solver]\nname = \"private_stacking\"\nepochs = 1\n"
                   "[privacy]\nepsilon = 1.0\ndelta = 1e-5\n")
    result = invoke("audit", "--config", cfg, "--runs", 10, "--bound", bound, "--noise-scale",
                    0.33, "--out", tmp_path / "au")
    assert result.returncode == 0, result.stderr
    name = {"kl": "Chernoff-KL", "clopper-pearson": "Clopper-Pearson",
            "truncated-kl": "truncated Chernoff-KL"}[bound]
    assert f"({name}" in result.stdout  # named on every claim's line
    assert "noise scaled by 0.33" in result.stdout and "exercised / charged" in result.stdout
    report = json.loads((tmp_path / "au" / "audit.json").read_text())
    assert report["bound"] == bound and report["noise_scale"] == 0.33
    # the guarantee and its profile are Gaussian (a profile to cap at); there is no other claim
    assert set(report["bounds"].values()) == {bound}
    clips = set(report["clips"].values())
    assert clips == {1.0} if bound != "truncated-kl" else all(0 < c <= 1 for c in clips)
    rows = (tmp_path / "au" / "audit.csv").read_text().splitlines()
    assert "exercised_over_charged" in rows[0]
