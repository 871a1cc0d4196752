"""Accounting mode end to end: calibration, per-epoch epsilon, Assumption 2, budget stop."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from vfl.experiments.config import config_from_dict
from vfl.core.errors import ConfigError
from vfl.experiments.runner import run_experiment
from vfl.experiments.sweep import aggregate_sweep, run_sweep
from vfl.privacy import epsilon_of, gaussian_events, lemma1_sensitivity, theorem1_sigma

RAW = {
    "name": "dp",
    "data": {"dataset": "synthetic",
             "options": {"n_train": 300, "n_test": 100, "n_features": 10, "seed": 4}},
    "partition": {"columns": [4, 6]},
    "objective": {"lam": 0.01},
    "solver": {"epochs": 12},
    "privacy": {"delta": 1e-5, "epsilon": 4.0, "accountant": "pld", "b1": 3.0},
}


def config(**privacy):
    return config_from_dict({**RAW, "privacy": {**RAW["privacy"], **privacy}})


@pytest.fixture(scope="module")
def pld_run():
    return run_experiment(config(), with_baselines=False)


def test_sigma_is_calibrated_to_the_total_target(pld_run):
    p = pld_run.manifest["privacy"]
    widths = [5, 6]  # party 1 has the intercept column
    for party, d in zip(p["per_party"], widths):
        C = lemma1_sensitivity(d, 1.0, 0.01, 2, 3.0)
        assert party["sensitivity"] == pytest.approx(C)
        eps = epsilon_of(gaussian_events([party["sigma"] / C] * 12), 1e-5, "pld")
        assert eps == pytest.approx(4.0, rel=1e-3) and eps <= 4.0 + 1e-9
    m = pld_run.metrics
    assert m["epsilon_tight"].iloc[-1] == pytest.approx(4.0, rel=1e-3)
    assert (np.diff(m["epsilon_tight"]) > 0).all()  # more epochs, more epsilon
    assert m["epsilon_tight"].iloc[0] == 0.0 and m["delta_tight"].iloc[-1] == 1e-5
    # Corollary 1 is either inapplicable (NaN) or looser than the tight accountant
    paper = m["epsilon_paper"].iloc[1:]
    assert paper.isna().all() or (paper >= m["epsilon_tight"].iloc[1:]).all()
    assert p["neighbouring"].startswith("datasets differing in one feature column")


def test_assumption_2_is_made_real(pld_run):
    m = pld_run.metrics
    assert {"y_norm", "z_norm", "projected_parties"} <= set(m.columns)
    assert all(np.linalg.norm(x) <= 3.0 + 1e-12 for x in pld_run.coef)  # the b1 ball
    assert all(p["rows_normalized"] for p in pld_run.manifest["partition"])


def test_paper_accountant_uses_theorem_1():
    run = run_experiment(config(epsilon=0.5, accountant="paper"), with_baselines=False)
    p = run.manifest["privacy"]
    C = p["per_party"][0]["sensitivity"]
    assert p["per_party"][0]["sigma"] == pytest.approx(theorem1_sigma(0.5, 1e-5, C))
    # Corollary 1 with delta' = delta after 12 epochs, and the PLD at the same total delta
    eps = 0.5
    expected = np.sqrt(2 * 12 * np.log(1 / 1e-5)) * eps + 12 * eps * (np.exp(eps) - 1)
    assert run.metrics["epsilon_paper"].iloc[-1] == pytest.approx(expected)
    assert run.metrics["delta_paper"].iloc[-1] == pytest.approx(13e-5)
    assert run.metrics["epsilon_tight"].iloc[-1] < expected / 5


def test_budget_stops_the_run_and_says_so():
    run = run_experiment(config(budget_epsilon=2.0), with_baselines=False, stop_at_budget=True)
    b = run.manifest["privacy"]["budget"]
    stopped = b["stopped"]
    assert stopped["after_epoch"] == len(run.metrics) - 1 < 12
    assert run.metrics["epsilon_tight"].iloc[-1] <= 2.0 < stopped["epsilon_next_epoch"]
    assert run.manifest["privacy"]["spent"]["epochs"] == stopped["after_epoch"]
    # without stop_at_budget the run goes on and the manifest says when it crossed
    full = run_experiment(config(budget_epsilon=2.0), with_baselines=False)
    assert len(full.metrics) == 13
    assert full.manifest["privacy"]["budget"]["first_epoch_over_budget"] == stopped["after_epoch"] + 1


def test_refusals():
    with pytest.raises(ConfigError, match=r"Theorem 1, which holds only for epsilon in \(0, 1\]"):
        config(epsilon=2.0, accountant="paper")
    with pytest.raises(ConfigError, match="privacy.epsilon must be > 0"):
        config(epsilon=0.0)
    with pytest.raises(ConfigError, match=r"privacy.delta must be in \(0, 1\)"):
        config(delta=1.5)


def test_epsilon_sweep(tmp_path):
    runs, _ = run_sweep(config(), [1.0, 8.0], [0], tmp_path, param="epsilon")
    _, final = aggregate_sweep(runs, tmp_path)
    assert final["epsilon"].tolist() == [1.0, 8.0]
    # more privacy (smaller epsilon) costs accuracy here
    assert final["test_logloss_mean"].iloc[0] > final["test_logloss_mean"].iloc[1]
    with pytest.raises(ConfigError, match="needs accounting mode"):
        run_sweep(config_from_dict({k: v for k, v in RAW.items() if k != "privacy"}),
                  [1.0], [0], tmp_path / "x", param="epsilon")


def vfl(*args):
    return subprocess.run([sys.executable, "-m", "vfl.cli.main", *map(str, args)],
                          capture_output=True, text=True, timeout=120, env=os.environ)


def test_cli_privacy_both_directions():
    proc = vfl("privacy", "--sigma", 5, "--epochs", 100, "--delta", 1e-5)
    assert proc.returncode == 0, proc.stderr
    lines = {line.split()[0]: line for line in proc.stdout.splitlines()[1:]}
    assert set(lines) == {"paper", "moments", "pld", "rdp", "exact"}
    assert float(lines["pld"].split()[1]) == pytest.approx(float(lines["exact"].split()[1]), rel=1e-3)
    proc = vfl("privacy", "--epsilon", 1, "--epochs", 100, "--delta", 1e-5)
    assert proc.returncode == 0, proc.stderr
    sig = {line.split()[0]: float(line.split()[1]) for line in proc.stdout.splitlines()[1:]}
    assert sig["paper"] > sig["moments"] > sig["rdp"] > sig["pld"] == pytest.approx(sig["exact"], rel=1e-3)
    for args, message in [(("--epsilon", 0), "--epsilon must be > 0"),
                          (("--epsilon", 1, "--delta", 1.0), "--delta must be in (0, 1)"),
                          (("--sigma", -1), "--sigma must be > 0")]:
        full = ["privacy", "--epochs", 10, "--delta", 1e-5, *args]
        proc = vfl(*full)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and message in proc.stderr


def test_cli_run_with_budget_and_privacy_plot(tmp_path):
    cfg = tmp_path / "dp.toml"
    cfg.write_text(
        'name = "dp"\n[data]\ndataset = "synthetic"\n'
        "options = { n_train = 300, n_test = 100, n_features = 10, seed = 4 }\n"
        "[partition]\ncolumns = [4, 6]\n[objective]\nlam = 0.01\n[solver]\nepochs = 12\n"
        '[privacy]\ndelta = 1e-5\nepsilon = 4.0\naccountant = "pld"\nbudget_epsilon = 2.0\n')
    out = tmp_path / "run"
    proc = vfl("run", "--config", cfg, "--out", out, "--stop-at-budget")
    assert proc.returncode == 0, proc.stderr
    assert "stopped at the privacy budget after epoch" in proc.stdout
    assert json.loads((out / "manifest.json").read_text())["privacy"]["budget"]["stopped"]
    proc = vfl("privacy", "--run", out, "--out", tmp_path / "eps.png")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "eps.png").is_file()
    bad = tmp_path / "bad.toml"
    bad.write_text(cfg.read_text().replace("epsilon = 4.0", "epsilon = 4.0\nform = \"variable\""))
    proc = vfl("run", "--config", bad, "--out", tmp_path / "never")
    assert proc.returncode == 2 and "cannot be accounted" in proc.stderr
    assert not (tmp_path / "never").exists()


def test_data_dependent_variant_is_labelled_not_dp():
    run = run_experiment(config(epsilon=0.5, accountant="paper", sensitivity="data_dependent"),
                         with_baselines=False)
    p = run.manifest["privacy"]
    assert p["dp_guarantee"] is False and "NOT a differential-privacy guarantee" in p["warning"]
    sig = run.metrics["sigma_party1"].iloc[1:]
    assert sig.nunique() > 1  # scaled by the iterates, epoch by epoch
    lemma = run_experiment(config(epsilon=0.5, accountant="paper"), with_baselines=False)
    assert lemma.manifest["privacy"]["dp_guarantee"] is True
    assert (lemma.metrics["sigma_party1"].iloc[1:] == lemma.manifest["privacy"]["per_party"][0]["sigma"]).all()
    with pytest.raises(ConfigError, match="needs accountant = 'paper'"):
        config(sensitivity="data_dependent")  # pld accountant
