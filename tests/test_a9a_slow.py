"""Real a9a with the authors' settings (slow suite; CI runs it)."""

from pathlib import Path

import numpy as np
import pytest

from vfl.experiments.config import load_config
from vfl.experiments.runner import run_experiment

REPO = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.slow, pytest.mark.data]


@pytest.fixture(scope="module")
def a9a_run(data_dir):
    config = load_config(REPO / "configs" / "a9a.toml")
    return run_experiment(config, data_dir=data_dir)


def test_a9a_admm_reaches_the_central_optimum(a9a_run):
    final = a9a_run.metrics.iloc[-1]
    f_star = a9a_run.baselines["central"]["objective"]
    assert final["epoch"] == 100
    # F* of sum-reduced l2 logistic regression on a9a + intercept, lam = 1e-3
    assert f_star == pytest.approx(10505.0382, abs=1e-3)
    # Measured: relative gap 1.90e-3 after 100 epochs at rho = 1 (the
    # authors' setting); the objective decreases monotonically after epoch 2.
    assert 0 <= final["suboptimality"] < 2.5e-3
    obj = a9a_run.metrics["objective"].to_numpy()
    assert (obj[3:] <= obj[2:-1] + 1e-9).all()


def test_a9a_test_loss_matches_sklearn_and_beats_local_only(a9a_run):
    final = a9a_run.metrics.iloc[-1]
    b = a9a_run.baselines
    assert abs(final["test_logloss"] - b["sklearn_all_features"]["test_logloss"]) <= 0.003
    local = b["sklearn_local_only"]["test_logloss"]
    assert local - final["test_logloss"] >= 0.02  # 0.350 vs 0.325 measured
    assert final["test_accuracy"] > b["sklearn_local_only"]["test_accuracy"] + 0.005


def test_a9a_manifest_traces_the_data(a9a_run):
    m = a9a_run.manifest.dump()
    assert m["dataset"]["sha256"] == {
        "a9a": "f5d5ffd8d865ff41328e7ee043e4b020816914ff6843ff15b98905ddbedce906",
        "a9a.t": "1f448a153f0320399a7e40836eb207655b0bde0f21fc941cc472193daa9f5de9",
    }
    assert [p["n_columns"] for p in m["partition"]] == [66, 57]
    assert m["result"]["seconds_per_epoch"] > 0


@pytest.mark.parametrize("parties,epochs", [(4, 34), (16, 58)])
def test_party_scaled_rho_reaches_1e4_with_many_parties(data_dir, parties, epochs):
    """a9a-fast with the columns in M ranges: rho (2/M)^0.6 (solver.rho_parties = "scaled")
    reaches 1e-4 within 60 epochs at M = 16, where the fixed rho needs 171."""
    ranges = ",".join(str(len(c)) for c in np.array_split(np.arange(123), parties))
    config = load_config(
        REPO / "configs" / "a9a-fast.toml",
        [f"partition.columns=[{ranges}]", "solver.epochs=60", "run.baselines=central"],
    )
    gap = run_experiment(config, data_dir=data_dir).metrics["suboptimality"].to_numpy()
    assert int(np.flatnonzero(gap <= 1e-4)[0]) == epochs  # measured
