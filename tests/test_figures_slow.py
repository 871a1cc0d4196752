"""The claims behind the paper's figures, on the configs `vfl reproduce` runs (slow suite).

One seed each (reproduce averages three); the bounds leave room for that.
"""

from pathlib import Path

import pytest
from shipped import paper_configs

from vfl.experiments.config import load_config
from vfl.experiments.runner import run_experiment
from vfl.papers.hu.figures import settling

REPO = Path(__file__).resolve().parents[1]
CONFIGS = paper_configs("hu")

pytestmark = pytest.mark.slow


def _final_test_loss(name, data_dir=None, overrides=()):
    config = load_config(CONFIGS / f"{name}.toml", list(overrides))
    run = run_experiment(config, data_dir=data_dir, with_baselines=False)
    return run.metrics


@pytest.mark.data
def test_a9a_admm_and_sgd_end_together(data_dir):
    admm = _final_test_loss("fig1-a9a-admm", data_dir)["test_logloss"].iloc[-1]
    sgd = _final_test_loss("fig1-a9a-sgd", data_dir)["test_logloss"].iloc[-1]
    assert abs(admm - sgd) <= 0.005  # measured 0.3247 vs 0.3241
    assert abs(admm - 0.3254) <= 0.003  # sklearn on all features (test_a9a_slow checks it)


@pytest.mark.data
def test_a9a_noise_on_the_shared_value_reproduces_the_authors_curves(data_dir):
    """Figs. 2-3: the authors' result files give 0.332 at sigma = 1, 0.450 at 3, no change <= 0.3."""
    loss = {
        s: _final_test_loss("fig2-a9a", data_dir, [f"privacy.sigma={s}"])["test_logloss"].iloc[-1]
        for s in (0.0, 0.3, 1.0, 3.0, 10.0)
    }
    assert loss[0.3] - loss[0.0] < 0.001  # measured +0.0001 (3 seeds)
    assert abs(loss[1.0] - 0.332) < 0.01  # measured 0.330
    assert abs(loss[3.0] - 0.450) < 0.04  # measured 0.434
    assert loss[10.0] > 0.3503  # worse than party 1 alone; measured 1.03


def test_gisette_stand_in_admm_settles_far_sooner_than_sgd():
    overrides = ["data.dataset=synthetic:gisette-shaped"]  # never the real files here
    admm = settling(_final_test_loss("fig1-gisette-admm", overrides=overrides))
    sgd = settling(_final_test_loss("fig1-gisette-sgd", overrides=overrides))
    # measured: ADMM within 0.005 of its final loss from epoch 31, SGD from 294
    assert admm["settled_epoch"] <= 50
    assert sgd["settled_epoch"] >= 3 * admm["settled_epoch"]
