"""ADMM sharing's accounting mode: sound bounds enforced, claims labelled, audit verdicts."""

import json
import math

import numpy as np
import pytest
import scipy.sparse as sp
from cli_helpers import vfl

from vfl.admm.sharing import ADMMSharingSolver, BlockSolver
from vfl.core.errors import ConfigError
from vfl.core.layouts import VerticalData
from vfl.core.objective import Objective
from vfl.core.streams import Streams
from vfl.experiments.audit import audit_config
from vfl.experiments.config import config_from_dict
from vfl.experiments.runner import run_experiment
from vfl.experiments.sweep import aggregate_sweep, run_sweep
from vfl.privacy import (
    calibrate_sigma,
    composed_gaussian_epsilon,
    corollary1,
    lemma1_sensitivity,
    split_delta,
    theorem1_epsilon,
)
from vfl.privacy.sharing import column_sensitivity, row_gradient_gap, row_sensitivity

RAW = {
    "name": "dp",
    "data": {"dataset": "synthetic", "options": {"n_train": 300, "n_test": 100, "n_features": 10, "seed": 4}},
    "partition": {"columns": [4, 6]},
    "objective": {"lam": 0.01},
    "solver": {"epochs": 12},
    "privacy": {"delta": 1e-5, "epsilon": 4.0, "b1": 3.0, "clip": 1.0},
}


def config(**privacy):
    return config_from_dict({**RAW, "privacy": {**RAW["privacy"], **privacy}})


@pytest.fixture(scope="module")
def sound_run():
    return run_experiment(config(), with_baselines=False)


# -- the sound bounds --------------------------------------------------------------------------
def test_column_bound_is_attained_within_2_sqrt_2_by_the_two_column_example():
    N, b1 = 400, 2.0
    D = np.tile([1.0, -1.0], (N, 1)) / np.sqrt(2)  # unit rows
    x = b1 * np.array([1.0, -1.0]) / np.sqrt(2)  # in the b1 ball
    D2 = D.copy()
    D2[:, 1] *= -1  # one column changed, rows still unit
    shift = np.linalg.norm(D @ x - D2 @ x)
    bound = column_sensitivity(N, clip=10.0, b1=b1)
    assert shift == pytest.approx(b1 * np.sqrt(N))  # >= b1 sqrt(N / 2), the example
    assert shift <= bound <= 2 * np.sqrt(2) * shift


def _row_release(D, lam, rho, b1, R, c, r):
    """One party's release mean clip(D x, c), x the exact ball-constrained x-update."""

    x, _ = BlockSolver(D, lam, rho).solve_ball(np.clip(r, -R, R), b1)
    assert np.linalg.norm(x) <= b1 * (1 + 1e-12)
    return np.clip(D @ x, -c, c)


@pytest.mark.parametrize("P, R", [(1.0, 2.0), (1.0, 0.1), (3.0, 1.0), (0.2, 5.0), (0.0, 1.5)])
def test_row_gradient_gap_is_the_maximum_over_unit_rows(P, R):
    """G(P, R) bounds ||P (a' a'^T - a a^T) e - R (a' - a)|| and the angle it names attains it."""
    rng = np.random.default_rng(0)
    G = row_gradient_gap(P, R)
    a, a2, e = (v / np.linalg.norm(v, axis=1, keepdims=True) for v in rng.normal(size=(3, 20000, 4)))
    proj = a2 * np.sum(a2 * e, axis=1, keepdims=True) - a * np.sum(a * e, axis=1, keepdims=True)
    gaps = np.linalg.norm(P * proj - R * (a2 - a), axis=1)
    assert gaps.max() <= G + 1e-12
    # in the plane: a = (1, 0), a' at the optimal angle, e chosen to align the two terms
    thetas = np.linspace(0.0, np.pi, 20001)
    assert np.max(P * np.sin(thetas) + 2 * R * np.sin(thetas / 2)) == pytest.approx(G, rel=1e-8)
    assert G <= P + 2 * R + 1e-12


def test_row_bound_closed_form_and_its_gain_over_the_triangle_bound():
    # c = b1 = rho = lam = 1, R = 2 (papers/hu/configs/privacy-a9a-row.toml)
    G = row_gradient_gap(1.0, 2.0)
    assert row_sensitivity(1.0, 1.0, 1.0, 1.0, 2.0) == pytest.approx(np.sqrt(4 + G**2 / 8))
    old = 2.0 + 2.0 * 3.0 / np.sqrt(2.0)  # vfl 0.1: 2 min(c, b1) + 2 (rho b1 + R) / sqrt(2 lam rho)
    assert old / row_sensitivity(1.0, 1.0, 1.0, 1.0, 2.0) == pytest.approx(2.463, abs=1e-3)


@pytest.mark.parametrize("trial", range(6))
def test_row_bound_holds_on_random_neighbours_and_histories(trial):
    rng = np.random.default_rng(trial)
    N, d = 60, 5
    lam, rho, b1, R, c = 10 ** rng.uniform(-2, 0), 10 ** rng.uniform(-1, 0.5), 1.0, 2.0, 1.0
    D = rng.normal(size=(N, d))
    D /= np.linalg.norm(D, axis=1, keepdims=True)
    bound = row_sensitivity(c, b1, rho, lam, R)
    worst = 0.0
    for _ in range(20):
        r = rng.normal(scale=rng.choice([0.5, 5, 50]), size=N)  # any public history
        i = int(rng.integers(N))
        D2 = D.copy()
        D2[i] = -D[i] if rng.random() < 0.5 else rng.normal(size=d)
        D2[i] /= np.linalg.norm(D2[i])
        s1 = _row_release(D, lam, rho, b1, R, c, r)
        s2 = _row_release(D2, lam, rho, b1, R, c, r)
        worst = max(worst, np.linalg.norm(s1 - s2))
    assert worst <= bound
    assert worst > 0


def test_solve_ball_is_the_constrained_minimizer():
    rng = np.random.default_rng(3)
    for shape in ((50, 6), (6, 30)):
        for sparse in (False, True):
            D = rng.normal(size=shape)
            D /= np.linalg.norm(D, axis=1, keepdims=True)
            lam, rho, radius = 0.01, 1.0, 0.5

            r = 5 * rng.normal(size=shape[0])
            x, active = BlockSolver(sp.csr_matrix(D) if sparse else D, lam, rho).solve_ball(r, radius)
            assert active and np.linalg.norm(x) == pytest.approx(radius, rel=1e-12)
            # KKT of min lam|x|^2 + rho/2 |Dx|^2 - <r, Dx> s.t. |x| <= radius:
            # grad + nu x = 0 with nu >= 0
            g = 2 * lam * x + rho * D.T @ (D @ x) - D.T @ r
            nu = -float(g @ x) / float(x @ x)
            assert nu > 0
            np.testing.assert_allclose(g + nu * x, 0.0, atol=1e-9 * np.linalg.norm(g))


# -- accounting mode end to end --------------------------------------------------------------
def test_sigma_is_calibrated_from_the_enforced_sensitivity(sound_run):
    p = sound_run.manifest.dump()["privacy"]
    assert p["dp_guarantee"] is True
    C = column_sensitivity(300, 1.0, 3.0)
    for party in p["per_party"]:
        assert party["sound_sensitivity"] == pytest.approx(C)
        # a deployment run (OS entropy) draws exact discrete noise, calibrated by RDP
        assert party["sigma"] == pytest.approx(calibrate_sigma(4.0, 1e-5, 12, C, accountant="rdp"), rel=1e-9)
    m = sound_run.metrics
    assert m["epsilon_tight"].iloc[-1] == pytest.approx(4.0, rel=1e-3)
    assert m["epsilon_tight"].iloc[-1] <= 4.0 + 1e-9
    assert (np.diff(m["epsilon_tight"]) > 0).all() and m["epsilon_tight"].iloc[0] == 0.0
    assert p["neighbouring"].startswith("datasets differing in one feature column")
    assert "labels are not protected" in p["labels"]


def test_the_papers_claims_are_recorded_beside_the_guarantee(sound_run):
    p = sound_run.manifest.dump()["privacy"]
    m = sound_run.metrics
    sig = p["per_party"][0]["sigma"]
    C = [q["lemma1_C"] for q in p["per_party"]]
    assert C[0] == pytest.approx(lemma1_sensitivity(5, 1.0, 0.01, 2, 3.0))  # intercept column
    # epsilon_paper: Lemma 1 + Theorem 1 + Corollary 1, total delta split T delta_i + delta'
    d_i, d_prime = split_delta(1e-5, 12)
    eps_i = max(theorem1_epsilon(q["sigma"], d_i, c) for q, c in zip(p["per_party"], C))
    expected = corollary1(eps_i, 12, d_i, d_prime)[0] if eps_i <= 1 else math.nan
    assert m["epsilon_paper"].iloc[-1] == pytest.approx(expected, nan_ok=True)
    # epsilon_lemma1: Lemma 1's C composed exactly
    lemma1 = max(composed_gaussian_epsilon([sig / c / np.sqrt(12)], 1e-5) for c in C)
    assert m["epsilon_lemma1"].iloc[-1] == pytest.approx(lemma1)
    assert "never a guarantee" in p["paper_claim"]


def test_every_release_is_clipped_and_every_model_in_the_ball():
    rng = np.random.default_rng(0)
    N = 200
    blocks = [rng.normal(size=(N, 3)), rng.normal(size=(N, 4))]
    blocks = [B / np.linalg.norm(B, axis=1, keepdims=True) for B in blocks]
    y = np.sign(rng.normal(size=N))
    seen = []

    def watch(solver, event, mean, rng_):
        seen.append(float(np.abs(mean).max()))
        assert all(np.linalg.norm(x) <= 0.5 + 1e-12 for x in solver.x)
        return mean + event.scale[0] * rng_.standard_normal(mean.shape)

    for neighbours, extra in (("column", {}), ("row", {"input_clip": 1.0})):
        cfg = config_from_dict(
            {
                **RAW,
                "solver": {"epochs": 5},
                "privacy": {"delta": 1e-5, "sigma": 0.1, "b1": 0.5, "clip": 0.3, "neighbours": neighbours, **extra},
            }
        )

        s = ADMMSharingSolver.build(
            VerticalData(blocks, y),
            objective=Objective(lam=0.1),
            params=dict(cfg.solver.values),
            privacy=dict(cfg.privacy.values),
            streams=Streams(0),
            iterations=5,
        )
        s.observer = watch
        for _ in range(5):
            s.step()
            assert len(s.releases()) == 2
    assert seen and max(seen) <= 0.3 + 1e-15


def test_accounting_refuses_rows_above_unit_norm():
    cfg = config()
    blocks = [np.full((10, 2), 1.0)]
    with pytest.raises(ValueError, match="accounting mode needs unit rows"):
        ADMMSharingSolver.build(
            VerticalData(blocks, np.ones(10)),
            objective=Objective(),
            params=dict(cfg.solver.values),
            privacy=dict(cfg.privacy.values),
            streams=Streams(0),
            iterations=3,
        )


def test_noise_is_os_entropy_unless_replayable():
    a = run_experiment(config(), with_baselines=False)
    b = run_experiment(config(), with_baselines=False)
    assert not np.allclose(a.metrics["objective"], b.metrics["objective"])
    assert "cannot be replayed" in a.manifest.dump()["privacy"]["noise"]
    a = run_experiment(config(replayable_noise=True), with_baselines=False)
    b = run_experiment(config(replayable_noise=True), with_baselines=False)
    np.testing.assert_array_equal(a.metrics["objective"], b.metrics["objective"])
    assert "simulation whose noise anyone" in a.manifest.dump()["privacy"]["noise"]
    # a noise-only run claims nothing, so it is a replayable simulation by default
    sim = config_from_dict({**RAW, "privacy": {"sigma": 0.5}})
    assert sim.privacy.replayable_noise and not sim.privacy.claims_guarantee


def test_data_dependent_variant_is_labelled_not_dp():
    run = run_experiment(config(calibration="data_dependent", replayable_noise=True), with_baselines=False)
    p = run.manifest.dump()["privacy"]
    assert p["dp_guarantee"] is False and "no epsilon of this run" in p["warning"]
    assert run.metrics["epsilon_tight"].iloc[1:].isna().all()  # nothing sound to compose
    sig = run.metrics["sigma_party1"].iloc[1:]
    assert sig.nunique() > 1  # scaled by the iterates, epoch by epoch


def test_budget_stops_the_run_and_says_so():
    run = run_experiment(config(budget_epsilon=2.0), with_baselines=False, stop_at_budget=True)
    stopped = run.manifest.dump()["privacy"]["budget"]["stopped"]
    assert stopped["after_epoch"] == len(run.metrics) - 1 < 12
    assert run.metrics["epsilon_tight"].iloc[-1] <= 2.0 < stopped["epsilon_next_epoch"]
    full = run_experiment(config(budget_epsilon=2.0), with_baselines=False)
    assert len(full.metrics) == 13
    assert full.manifest.dump()["privacy"]["budget"]["first_epoch_over_budget"] == stopped["after_epoch"] + 1


@pytest.mark.parametrize(
    "privacy, message",
    [
        ({"clip": 0.0}, "privacy.clip must be > 0, got 0"),
        ({"clip": -1.0}, "privacy.clip must be > 0"),
        ({"clip": None}, "accounting mode (privacy.delta) needs privacy.clip"),
        ({"neighbours": "sample"}, "privacy.neighbours = 'sample' is not one of: column, row"),
        ({"neighbours": "row"}, "needs privacy.input_clip"),
        ({"form": "variable"}, "privacy.form = 'variable' cannot be accounted"),
        ({"sigma": 1.0}, "give privacy.sigma or privacy.epsilon, not both"),
        ({"epsilon": 0.0}, "privacy.epsilon must be > 0"),
        ({"delta": 1.5}, "privacy.delta must be in (0, 1), got 1.5"),
        ({"calibration": "lemma2"}, "privacy.calibration = 'lemma2' is not one of"),
    ],
)
def test_bad_privacy_configs(privacy, message):
    raw = {**RAW, "privacy": {k: v for k, v in {**RAW["privacy"], **privacy}.items() if v is not None}}
    with pytest.raises(ConfigError) as exc:
        config_from_dict(raw)
    assert message in str(exc.value)


def test_accounting_keys_need_delta():
    with pytest.raises(ConfigError, match="privacy.clip needs privacy.delta"):
        config_from_dict({**RAW, "privacy": {"sigma": 1.0, "clip": 1.0}})


def test_epsilon_sweep(tmp_path):
    runs, _ = run_sweep(config(replayable_noise=True), [1.0, 500.0], [0], tmp_path, param="epsilon")
    _, final = aggregate_sweep(runs, tmp_path)
    assert final["epsilon"].tolist() == [1.0, 500.0]
    assert final["test_logloss_mean"].iloc[0] > final["test_logloss_mean"].iloc[1]
    with pytest.raises(ConfigError, match="needs accounting mode"):
        run_sweep(
            config_from_dict({k: v for k, v in RAW.items() if k != "privacy"}),
            [1.0],
            [0],
            tmp_path / "x",
            param="epsilon",
        )


# -- the audit -----------------------------------------------------------------------------------
@pytest.mark.slow
def test_audit_passes_the_guarantee_and_refutes_an_under_calibrated_claim():

    # the paper's calibration on tiny data: Lemma 1's C is far below the true shift
    cfg = config(calibration="lemma1", epsilon=8.0, b1=1.0, clip=1.0)
    report = audit_config(cfg, K=20, seed=1, kinds=("adversarial",), max_pairs=2)
    assert report.verdict("guarantee") == "PASS"
    assert report.verdict("lemma1") == "REFUTED"
    sound = audit_config(config(epsilon=1.0), K=20, seed=1, kinds=("adversarial",), max_pairs=1)
    assert sound.verdict("guarantee") == "PASS"
    rows = sound.rows()
    assert all(r["delta_lower"] <= r["delta"] for r in rows if r["claim"] == "guarantee")


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


@pytest.mark.slow
def test_cli_run_with_budget_privacy_plot_and_audit(tmp_path):
    cfg = tmp_path / "dp.toml"
    cfg.write_text(
        'name = "dp"\n[data]\ndataset = "synthetic"\n'
        "options = { n_train = 300, n_test = 100, n_features = 10, seed = 4 }\n"
        "[partition]\ncolumns = [4, 6]\n[objective]\nlam = 0.01\n[solver]\nepochs = 12\n"
        "[privacy]\ndelta = 1e-5\nepsilon = 4.0\nclip = 1.0\nb1 = 3.0\nbudget_epsilon = 2.0\n"
    )
    out = tmp_path / "run"
    proc = vfl("run", "--config", cfg, "--out", out, "--stop-at-budget")
    assert proc.returncode == 0, proc.stderr
    assert "stopped at the privacy budget after" in proc.stdout
    assert "privacy guarantee: (" in proc.stdout and "the paper's own claim (not a guarantee)" in proc.stdout
    assert json.loads((out / "manifest.json").read_text())["privacy"]["budget"]["stopped"]
    proc = vfl("privacy", "--run", out, "--out", tmp_path / "eps.png")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "eps.png").is_file()
    proc = vfl("audit", out, "--runs", 12, "--kinds", "adversarial", "--out", tmp_path / "audit")
    assert proc.returncode == 0, proc.stderr
    assert "PASS     the guarantee" in proc.stdout
    for name in ("audit.csv", "losses.csv", "audit.json", "audit.png"):
        assert (tmp_path / "audit" / name).is_file()
    bad = tmp_path / "bad.toml"
    bad.write_text(cfg.read_text().replace("clip = 1.0\n", ""))
    proc = vfl("run", "--config", bad, "--out", tmp_path / "never")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "needs privacy.clip" in proc.stderr and not (tmp_path / "never").exists()
