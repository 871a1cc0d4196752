"""Private stacking (vfl.stacking): sensitivities, clipping, accounting, limits, M = 3, audit."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from cli_helpers import assert_one_line_error, vfl
from shipped import paper_configs, shipped

import vfl.papers.private_utility.figures as rp
from vfl.core.errors import ConfigError
from vfl.core.layouts import VerticalData
from vfl.core.ledger import PrivacyLedger
from vfl.core.releases import add_noise
from vfl.core.streams import Streams
from vfl.experiments.audit import audit_config
from vfl.experiments.config import config_from_dict, load_config
from vfl.experiments.runner import run_experiment
from vfl.stacking import (
    GTOL,
    PrivateStacking,
    fit_logistic,
    gdp_mu,
    model_sensitivity,
    moments_sensitivity,
    noise_scales,
    share_sensitivity,
    sure_ridge,
)
from vfl.stacking.mechanism import base_rate_logit

REPO = Path(__file__).resolve().parents[1]


def unit_rows(A):
    return A / np.maximum(np.linalg.norm(A, axis=1, keepdims=True), 1e-300)


def problem(n=400, widths=(4, 5), seed=0, sparse_blocks=()):
    """Blocks with unit rows and labels from a logistic model on all of them."""
    rng = np.random.default_rng(seed)
    blocks = [unit_rows(rng.standard_normal((n, d))) for d in widths]
    w = [rng.standard_normal(d) * 2.0 for d in widths]
    u = sum(B @ v for B, v in zip(blocks, w))
    y = np.where(rng.random(n) < 1.0 / (1.0 + np.exp(-u)), 1.0, -1.0)
    blocks = [sp.csr_matrix(B) if m in sparse_blocks else B for m, B in enumerate(blocks)]
    return blocks, y


def make(blocks, y, *, seed=0, **kw):
    streams = Streams(seed)
    kw.setdefault("lam_local", 1.0)
    return PrivateStacking(
        blocks, y, noise_rngs=[streams.noise(m) for m in range(len(blocks))], shared_rng=streams.noise(), **kw
    )


# ------------------------------------------------------------- sensitivity --
@pytest.mark.parametrize("lam", [0.5, 2.0, 10.0])
def test_local_model_moves_at_most_the_output_perturbation_bound(lam):
    """Replace one row (random unit vector, negation, another row): ||x - x'|| <= (1 + gtol)/lam."""
    rng = np.random.default_rng(int(lam * 10))
    worst = 0.0
    for _ in range(12):
        n, d = int(rng.integers(20, 120)), int(rng.integers(2, 8))
        D = unit_rows(rng.standard_normal((n, d)))
        y = np.where(rng.random(n) < 0.4, 1.0, -1.0)
        m0 = base_rate_logit(y)
        x, g = fit_logistic(D, y, lam, offset=m0)
        assert g <= GTOL
        u = m0 + D @ x
        i = int(np.argmax(1.0 / (1.0 + np.exp(y * u))))  # the worst-fitted sample
        for new in (-D[i], unit_rows(rng.standard_normal((1, d)))[0], D[(i + 1) % n]):
            D2 = D.copy()
            D2[i] = new
            x2, _ = fit_logistic(D2, y, lam, offset=m0)
            worst = max(worst, float(np.linalg.norm(x - x2)) / model_sensitivity(lam))
    assert worst <= 1.0
    assert worst > 0.05  # the bound is not vacuous: one row moves the model visibly


def test_local_fit_reaches_the_tolerance_sparse_and_wide():
    rng = np.random.default_rng(4)
    D = sp.random(300, 700, density=0.02, random_state=5, format="csr")  # wide: Newton-CG
    D = sp.diags(1.0 / np.maximum(np.sqrt(np.asarray(D.multiply(D).sum(1)).ravel()), 1e-12)) @ D
    y = np.where(rng.random(300) < 0.5, 1.0, -1.0)
    x, g = fit_logistic(D, y, 0.3)
    assert g <= GTOL and x.shape == (700,)
    xd, _ = fit_logistic(D.toarray()[:, :50], y, 0.3)
    xs, _ = fit_logistic(D[:, :50], y, 0.3)
    np.testing.assert_allclose(xd, xs, atol=1e-8)


def test_sensitivity_formulas_and_checks():
    assert model_sensitivity(4.0, 0.0) == 0.25
    assert share_sensitivity(1.5) == 3.0
    # the moments' bound is the exact max of ||(u - v, u^2 - v^2)|| / N over [-c, c]^2
    # the exact max of ||(u - v, u^2 - v^2)|| over u, v in [-c, c] is below the bound
    for c in (0.3, 1.0, 1.5, 1.7, 4.0):
        g = np.linspace(-c, c, 2001)
        U, V = np.meshgrid(g, g)
        grid_max = np.sqrt((U - V) ** 2 + (U**2 - V**2) ** 2).max() / 50
        assert grid_max <= moments_sensitivity(c, 50) <= grid_max * (1 + 1e-5)
    # the closed forms the docs state: 2c / N up to c = 1.665, then the interior maximum
    # sqrt((2c - r)^2 (1 + r^2)) / N, r = (c + sqrt(c^2 - 2)) / 2 (4.536 / N at c = 2)
    assert moments_sensitivity(1.66, 1) == pytest.approx(3.32)
    r = (2 + np.sqrt(2)) / 2
    assert moments_sensitivity(2.0, 10) == pytest.approx(np.sqrt((4 - r) ** 2 * (1 + r**2)) / 10)
    assert moments_sensitivity(2.0, 1) == pytest.approx(4.5363, abs=1e-4)
    for bad in (0.0, -1.0, np.inf):
        with pytest.raises(ValueError):
            share_sensitivity(bad)
        with pytest.raises(ValueError):
            model_sensitivity(bad)


# ----------------------------------------------------------------- clipping --
def test_shares_are_clipped_before_the_noise_and_at_prediction():
    blocks, y = problem(widths=(3, 6), seed=1)
    blocks[1] = blocks[1] * 1.0
    seen = []

    def observer(solver, event, mean, rng):
        seen.append((event, np.array(mean)))

        return add_noise(event.mechanism, mean, event.scale[0] if np.ndim(mean) == 1 else event.scale, rng)

    s = make(blocks, y, epsilon=2.0, delta=1e-5, clip=0.3, split=[0.4, 0.5, 0.1], lam_local=0.05)
    s.observer = observer
    s.step()
    kinds = [(e.size, e.sensitivity[0]) for e, _ in seen]
    assert kinds == [(6, model_sensitivity(0.05)), (len(y), 0.6), (2, moments_sensitivity(0.3, len(y)))]
    share_mean = seen[1][1]
    assert np.abs(share_mean).max() <= 0.3 + 1e-15
    assert np.isclose(np.abs(share_mean).max(), 0.3)  # the clip is active for this small lam
    # prediction uses the same clip on the released model
    x_rel = s.x_released[0]
    np.testing.assert_allclose(np.clip(blocks[1] @ x_rel, -0.3, 0.3), s.passives.shares()[0])


def test_rows_longer_than_one_are_refused():
    blocks, y = problem(seed=2)
    blocks[1] = blocks[1] * 1.01
    with pytest.raises(ValueError, match="unit rows"):
        make(blocks, y, epsilon=1.0, delta=1e-5)


# --------------------------------------------------------------- accounting --
@pytest.mark.parametrize(
    "eps,split,accountant",
    [
        (0.5, [0.5, 0.48, 0.02], "pld"),
        (1.0, [1.0, 0.0, 0.0], "pld"),
        (8.0, [0.3, 0.7, 0.0], "pld"),
        (2.0, [0.5, 0.48, 0.02], "rdp"),
    ],
)
def test_target_epsilon_to_noise_to_ledger_round_trip(eps, split, accountant):
    blocks, y = problem(widths=(3, 4, 5), seed=3)
    s = make(blocks, y, epsilon=eps, delta=1e-5, split=split, accountant=accountant, model_noise=0.2)
    s.step()
    ledger = PrivacyLedger(1e-5, accountant)
    ledger.add(s.releases())
    assert ledger.gaussian_only
    assert abs(ledger.epsilon() - eps) <= 0.01 * eps
    # per party: both passive parties spend the target, party 1 nothing
    assert np.isclose(ledger._gauss[0], 0.0)
    np.testing.assert_allclose(np.sqrt(ledger._gauss[1:]), gdp_mu(eps, 1e-5, accountant), rtol=1e-9)
    # the releases say what planned_releases said
    plan = PrivateStacking.__new__(PrivateStacking)
    assert sum(r.units.size for r in s.releases()) == sum(
        r.units.size
        for r in make(blocks, y, epsilon=eps, delta=1e-5, split=split, accountant=accountant).planned_releases()
    )
    del plan


def test_noise_scales_split_mu_squared():
    mu = 0.7
    sig = noise_scales(mu, [0.25, 0.75, 0.0], [2.0, 3.0, 5.0])
    assert np.isinf(sig[2])
    np.testing.assert_allclose((2.0 / sig[0]) ** 2 + (3.0 / sig[1]) ** 2, mu**2)


def test_model_noise_rule_sets_the_released_model_noise():
    blocks, y = problem(seed=4)
    s = make(blocks, y, epsilon=1.0, delta=1e-5, split=[0.5, 0.48, 0.02], model_noise=0.05, lam_local=0.1)
    assert s.lam[0] > 0.1
    assert np.isclose(s.sigma["model"][0], 0.05)
    loose = make(blocks, y, epsilon=1.0, delta=1e-5, model_noise=100.0, lam_local=3.0)
    assert loose.lam[0] == 3.0  # the floor


# ------------------------------------------------------------------- limits --
def test_epsilon_to_infinity_is_non_private_stacking():
    blocks, y = problem(n=600, widths=(4, 5, 3), seed=5)
    test, _ = problem(n=200, widths=(4, 5, 3), seed=6)
    kw = dict(lam_local=2.0, clip=1.5, prior_sd=0.5, split=[0.5, 0.48, 0.02])
    plain = make(blocks, y, **kw)
    plain.step()
    assert not plain.releases()
    u0 = plain.decision_function(test)
    gaps = []
    for eps in (1e2, 1e4, 1e6, 1e8):
        s = make(blocks, y, epsilon=eps, delta=1e-5, model_noise=0.1, seed=7, **kw)
        s.step()
        assert s.lam[0] == 2.0  # the rule's floor: the same local models
        gaps.append(float(np.max(np.abs(s.decision_function(test) - u0))))
    # every noise scale is proportional to 1 / mu ~ epsilon^(-1/2): so is the gap
    assert np.all(np.diff(gaps) < 0) and gaps[-1] < 1e-3
    np.testing.assert_allclose(np.diff(np.log10(gaps))[1:], -1.0, atol=0.1)


def test_without_shares_it_is_the_product_of_experts():
    blocks, y = problem(seed=8)
    s = make(blocks, y, epsilon=1.0, delta=1e-5, split=[1.0, 0.0, 0.0])
    s.step()
    assert len(s.releases()) == 1 and s.releases()[0].size == blocks[1].shape[1]
    assert s.model.a.tolist() == [1.0]
    np.testing.assert_allclose(s.model.theta, s.model.w1)
    # margins: party 1's own logit plus party 2's clipped logit (without the base rate)
    expected = blocks[0] @ s.model.w1 + np.clip(blocks[1] @ s.x_released[0], -s.clip, s.clip)
    np.testing.assert_allclose(s.train_margins(), expected)


# ------------------------------------------------------------- M = 3 parties --
def test_three_parties_sparse_and_dense_blocks_run_end_to_end(tmp_path):
    raw = {
        "name": "stack3",
        "data": {
            "dataset": "synthetic",
            "options": {"n_train": 2000, "n_test": 500, "n_features": 12, "sparse": True, "density": 0.5, "seed": 3},
        },
        "preprocessing": {"normalize_rows": True},
        "partition": {"columns": [4, 5, 3]},
        "objective": {"lam": 1.0},
        "solver": {"name": "private_stacking", "epochs": 1},
        "privacy": {"epsilon": 2.0, "delta": 1e-5, "model_noise": 0.2, "replayable_noise": True},
        "run": {"repeats": 2},
    }
    result = run_experiment(config_from_dict(raw), use_cache=False)
    final = result.metrics.iloc[-1]
    assert abs(final["epsilon_tight"] - 2.0) < 0.02
    assert {"weight_party2", "weight_party3"} <= set(result.metrics.columns)
    assert final["test_logloss"] < np.log(2)
    assert result.manifest.dump()["privacy"]["per_party"][1]["party"] == 3
    # each party's block of a row is normalized (the stage's per-record step), party 1 has
    # the intercept, and no parameter was read off the private rows
    pre = result.manifest.dump()["preprocessing"]
    assert {"step": "normalize_rows", "norm": 1.0, "unit": "party block", "source": "per_record"} in pre["steps"]
    assert pre["private"] and not pre["fitted_on_training_rows"]
    assert [p["intercept"] for p in result.manifest.dump()["partition"]] == [True, False, False]
    # dense blocks of different widths, directly
    blocks, y = problem(widths=(2, 7, 3), seed=9, sparse_blocks=(0, 2))
    s = make(blocks, y, epsilon=1.0, delta=1e-5)
    s.step()
    assert s.model.a.shape == (2,)
    assert [r.units.tolist() for r in s.releases()] == [[1], [2], [1, 2], [1, 2]]


# -------------------------------------------------------------- bad configs --
CONFIG = """
[data]
dataset = "synthetic"
options = {{ n_train = 200, n_test = 50, n_features = 6, seed = 1 }}
[partition]
columns = [3, 3]
[solver]
name = "private_stacking"
epochs = 1
[privacy]
delta = 1e-5
epsilon = 1.0
{extra}
"""


@pytest.mark.parametrize(
    "extra,needle",
    [
        ("clip = 0.0", "privacy.clip must be > 0"),
        ("clip = -1.0", "privacy.clip must be > 0"),
        ("split = [0.5, 0.3, 0.1]", "privacy.split must sum to 1"),
        ("split = [0.5, 0.6]", "3 fractions"),
        ("split = [0.0, 0.98, 0.02]", "must be > 0"),
    ],
)
def test_bad_configs_give_one_error_line_and_exit_2(tmp_path, extra, needle):
    path = tmp_path / "bad.toml"
    path.write_text(CONFIG.format(extra=extra))
    proc = vfl("run", "--config", path, "--out", tmp_path / "out", cwd=tmp_path, env={"MPLBACKEND": "Agg"}, timeout=120)
    assert_one_line_error(proc, needle)


def test_epochs_must_be_one(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(CONFIG.format(extra="").replace("epochs = 1", "epochs = 3"))
    with pytest.raises(ConfigError, match="solver.epochs = 1"):
        load_config(path)


# --------------------------------------------------------------------- SURE --
def test_sure_ridge_falls_back_on_the_anchor_when_the_shares_are_noise():
    rng = np.random.default_rng(11)
    n, p = 3000, 8
    D = rng.standard_normal((n, p))
    s = D @ rng.standard_normal(p)
    anchor = np.ones((n, 1))
    for tau, full in ((0.01, True), (1e4, False)):
        T = (s + tau * rng.standard_normal(n))[:, None]
        F, df, _ = sure_ridge(D, anchor, T, np.array([tau]))
        if full:  # clean shares: all of D is used
            assert df[0] > p and np.corrcoef(F[:, 0], s)[0, 1] > 0.999
        else:  # pure noise: essentially the anchor alone
            assert df[0] < 1.5


# -------------------------------------------------------------------- audit --
def test_white_box_audit_passes(tmp_path):
    path = tmp_path / "a.toml"
    path.write_text(
        CONFIG.format(extra="clip = 1.0\nsplit = [0.5, 0.48, 0.02]\nmodel_noise = 0.2").replace(
            "n_train = 200", "n_train = 300"
        )
    )
    report = audit_config(load_config(path), K=20, seed=1)
    assert report.verdict("guarantee") == "PASS"
    assert {p.kind for p in report.pairs} == {"natural", "adversarial"}
    assert abs(report.claims["guarantee"][0] - 1.0) < 0.01


def test_neighbours_change_one_row_of_one_passive_block():
    blocks, y = problem(n=100, widths=(3, 4, 5), seed=12, sparse_blocks=(2,))
    pairs = PrivateStacking.neighbours(VerticalData(blocks, y), {}, np.random.default_rng(0))
    # per passive party: natural, two adversarial, one canary candidate
    assert len(pairs) == 8 and {p.unit for p in pairs} == {1, 2}
    assert sum(p.base is not None for p in pairs) == 2
    for p in pairs:
        base = blocks if p.base is None else p.base.blocks
        for m, (A, B) in enumerate(zip(base, p.data.blocks)):
            A = A.toarray() if sp.issparse(A) else A
            B = B.toarray() if sp.issparse(B) else B
            rows = np.flatnonzero(np.any(A != B, axis=1))
            assert rows.size == (1 if m == p.unit else 0)
            if rows.size:  # both rows of the pair inside the relation
                assert np.linalg.norm(B[rows[0]]) <= 1 + 1e-12
                assert np.linalg.norm(A[rows[0]]) <= 1 + 1e-12


# --------------------------------------------------------------------- slow --
@pytest.mark.slow
@pytest.mark.data
def test_done_criteria_on_a9a(tmp_path, data_dir, monkeypatch):
    """Issue 12: beats party 1 alone at epsilon 0.5, within 0.005 of all features at 8.

    The figure's own procedure (hyper-parameters chosen on a validation split
    of the training rows, test numbers as means over 10 noise draws) on a
    smaller search, to fit CI's time: the candidates the full search of
    ``vfl reproduce private-utility`` ranks near the top, one validation
    seed. The white-box audit passes at the smallest plotted epsilon (every
    epsilon is audited in docs/measured.md).
    """

    monkeypatch.setattr(rp, "VAL_SEEDS", (101,))
    monkeypatch.setattr(rp, "NONPRIVATE_GRID", rp._grid(**{"privacy.clip": [2.0, 4.0], "solver.lam_local": [1.0]}))
    monkeypatch.setattr(
        rp,
        "STACKING_GRID",
        rp._grid(
            **{
                "privacy.clip": [2.0],
                "privacy.model_noise": [0.1, 0.3],
                "privacy.split": [[0.3, 0.68, 0.02]],
                "solver.prior_sd": [0.25],
            }
        ),
    )
    rp.reproduce(
        "utility",
        tmp_path,
        paper_configs("private_utility"),
        data_dir=data_dir,
        echo=lambda m: None,
        datasets=["a9a"],
        epsilons=(0.5, 8.0),
        methods=("stacking",),
        jobs=1,  # (the suite's workers hold every core; test_reproduce_private runs the pool)
    )
    table = pd.read_csv(tmp_path / "utility-a9a.csv")
    ref = table.set_index("method")
    stack = table[table["method"] == "private stacking"].set_index("epsilon")
    assert (stack["n_seeds"] == 10).all()
    party1 = float(ref.loc["party 1 alone", "test_logloss_mean"])
    allf = float(ref.loc["all features", "test_logloss_mean"])
    assert stack.loc[0.5, "test_logloss_mean"] < party1
    assert stack.loc[8.0, "test_logloss_mean"] <= allf + 0.005
    assert np.allclose(stack["epsilon_tight"], stack.index, rtol=0.01)
    chosen = json.loads(stack.loc[0.5, "chosen"])
    assert chosen["privacy.epsilon"] == 0.5
    config = load_config(shipped("private-stacking-a9a"), [f"{k}={json.dumps(v)}" for k, v in chosen.items()])
    report = audit_config(config, data_dir=data_dir, K=20, seed=2)
    assert report.verdict("guarantee") == "PASS"
