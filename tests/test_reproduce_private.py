"""`vfl reproduce private-utility` end to end on tiny stand-in configs, and its validation split."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from shipped import shipped

import vfl.papers.private_utility.figures as rp
from vfl.core.errors import ConfigError
from vfl.experiments.config import load_config
from vfl.papers import PAPERS, resolve

REPO = Path(__file__).resolve().parents[1]

# the same data and objective for both methods; only [solver] and [privacy] differ
_COMMON = """
name = "{name}"
[data]
dataset = "synthetic"
options = {{ n_train = 600, n_test = 800, n_features = 10, seed = 4 }}
[preprocessing]
normalize_rows = true
[partition]
columns = [4, 6]
public = 600
[objective]
lam = 1.0
"""

STACK = (
    _COMMON
    + """
[solver]
name = "private_stacking"
epochs = 1
[privacy]
epsilon = 1.0
delta = 1e-5
model_noise = 0.2
"""
)

ADMM = (
    _COMMON
    + """
[solver]
name = "admm_sharing"
epochs = 2
[privacy]
delta = 1e-5
epsilon = 1.0
neighbours = "row"
b1 = 1.0
clip = 1.0
input_clip = 2.0
"""
)


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    configs = tmp_path / "configs"
    configs.mkdir()
    for stack, admm in rp.DATASETS.values():
        (configs / f"{stack}.toml").write_text(STACK.format(name=stack))
        (configs / f"{admm}.toml").write_text(ADMM.format(name=admm))
    monkeypatch.setattr(
        rp,
        "STACKING_GRID",
        [{"privacy.split": [1.0, 0.0, 0.0]}, {"privacy.split": [0.5, 0.48, 0.02], "solver.prior_sd": 0.25}],
    )
    monkeypatch.setattr(rp, "NONPRIVATE_GRID", [{"privacy.clip": 1.0}, {"privacy.clip": 2.0}])
    monkeypatch.setattr(rp, "ADMM_GRID", [{"solver.epochs": 1}, {"solver.epochs": 2}])
    monkeypatch.setattr(rp, "REPEATS", 3)
    monkeypatch.setattr(rp, "VAL_SEEDS", (1, 2))
    return configs


def test_registered_as_a_paper():
    assert PAPERS["private-utility"] == "vfl.papers.private_utility"
    assert resolve("private-utility", None) == [("private-utility", "all")]
    assert resolve("private-utility", "utility") == [("private-utility", "utility")]


@pytest.mark.slow
def test_reproduce_writes_the_figure_and_tables_then_resumes(tiny, tmp_path):
    out = tmp_path / "out"
    log = []
    written = rp.reproduce("all", out, tiny, echo=log.append, epsilons=(1.0, 8.0))
    assert sorted(p.name for p in written) == ["utility.png"]
    for dataset in rp.DATASETS:
        table = pd.read_csv(out / f"utility-{dataset}.csv")
        assert set(table["method"]) == {
            "private stacking",
            "ADMM sharing (row-level DP)",
            "non-private stacking",
            "party 1 alone",
            "all features",
        }
        stack = table[table["method"] == "private stacking"].set_index("epsilon")
        assert stack.index.tolist() == [1.0, 8.0] and (stack["n_seeds"] == 3).all()
        np.testing.assert_allclose(stack["epsilon_tight"], [1.0, 8.0], rtol=0.01)
        assert (stack["test_logloss_std"] > 0).all()
        tuning = pd.read_csv(out / f"utility-tuning-{dataset}.csv")
        # every candidate scored on validation rows only, at every epsilon
        # references (2 x 4 weights), non-private (2), stacking and ADMM (2 x 2 epsilons each)
        assert len(tuning) == 2 * len(rp.REFERENCE_LAMS) + 2 + 2 * 2 + 2 * 2
        assert tuning["val_logloss_mean"].notna().all() and tuning["error"].isna().all()
        solved = tuning[tuning["n_val"].notna()]
        assert (solved["n_val"] == 120).all() and (solved["n_fit"] == 480).all()
        # party 1 uses the weight it chose for itself; the private floor is the non-private choice
        chosen = table.set_index("method")["chosen"]
        lam1 = json.loads(chosen["party 1 alone"])["objective.lam"]
        assert json.loads(stack["chosen"].iloc[0])["solver.lam1"] == lam1
        assert "test_logloss" not in " ".join(tuning.columns)
    # a second call keeps every run and validation table: only the figure is redrawn
    runs = {p: p.stat().st_mtime_ns for p in (out / "runs").rglob("metrics.csv")}
    log2 = []
    rp.reproduce("utility", out, tiny, echo=log2.append, epsilons=(1.0, 8.0))
    assert {p: p.stat().st_mtime_ns for p in (out / "runs").rglob("metrics.csv")} == runs
    assert not any("candidates" in line for line in log2)


def test_the_chosen_candidate_is_the_validation_minimum(tiny, tmp_path):
    config = load_config(tiny / "private-stacking-a9a.toml")
    cands = [{"privacy.clip": c} for c in (0.5, 1.0, 3.0)]
    table = rp.validation_scores(config, cands, seeds=(1,))
    assert rp._best(table, cands) == cands[int(np.argmin(table["val_logloss_mean"]))]
    # the validation rows are a fixed part of the training rows, the same for every candidate
    assert (table["n_val"] + table["n_fit"] == 600).all()


def test_unknown_figure_is_refused(tiny, tmp_path):
    with pytest.raises(ConfigError, match="no figure"):
        rp.reproduce("fig9", tmp_path / "o", tiny)


def test_shipped_configs_are_valid():
    for stack, admm in rp.DATASETS.values():
        s = load_config(shipped(stack))
        a = load_config(shipped(admm))
        assert s.solver.name == "private_stacking" and s.privacy.values["delta"] == 1e-5
        assert a.privacy.values["neighbours"] == "row"
        for cand in rp.STACKING_GRID:
            s.with_overrides(rp._overrides({**cand, "privacy.epsilon": 0.5}))
        for cand in rp.ADMM_GRID:
            a.with_overrides(rp._overrides(cand))
        rp._nonprivate(s).with_overrides(rp._overrides(rp.NONPRIVATE_GRID[0]))
