"""The FDML-style SGD baseline (Hu et al. 2019; the SGD curves of Hu et al., Figs 1-2).

References are computed here from the formulas, never through the solver's
helpers: F(x) by hand, gradients by hand, the optimum F* by
``central_optimum`` (an independent trust-region Newton solver, itself
checked in tests/test_admm.py).

Choice of lam
-------------
SGD works on ``F / (w N)``, whose l2 modulus is ``2 lam / (w N)``; with
``lam = 0.01 * w * N`` that is 0.02 for both reductions, strongly convex
enough for a decaying learning rate to get within 1e-5 of F* in 150 epochs
(observed: <= 1e-5 for every case below).
"""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from problems import planted_problem
from scipy.special import expit
from threadpoolctl import threadpool_limits

from vfl.baselines import FDMLSGD, central_optimum
from vfl.core.metrics import EpochStats
from vfl.core.objective import Objective

N = 400
DIMS = (8, 7, 5)


@pytest.fixture(autouse=True, scope="module")
def _single_threaded_blas():
    """Tiny matrices: multi-threaded BLAS would only add overhead."""
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def make_problem(loss, seed=0, dims=DIMS, density=1.0):
    return planted_problem(loss, dims, N, seed=seed, density=density)


def objective_for(loss, reduction, lam_factor=0.01):
    w = 1.0 if reduction == "sum" else 1.0 / N
    return Objective(loss, lam_factor * w * N, reduction), w


def indep_value(D, b, loss, lam, w, x):
    u = D @ x
    lv = np.logaddexp(0.0, -b * u) if loss == "logistic" else (u - b) ** 2
    return float(w * np.sum(lv) + lam * x @ x)


def indep_dl(u, b, loss):
    return -b * expit(-b * u) if loss == "logistic" else 2.0 * (u - b)


def make_sgd(blocks, b, obj, seeds=(1, 2), noise_seeds=None, **kw):
    init_seed, batch_seed = seeds
    if noise_seeds is not None:
        kw["noise_rngs"] = [np.random.default_rng(s) for s in noise_seeds]
    return FDMLSGD(
        blocks, b, obj, init_rng=np.random.default_rng(init_seed), batch_rng=np.random.default_rng(batch_seed), **kw
    )


class Recorder(FDMLSGD):
    """Records every message a party sends (and the model it was computed from)."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.log = []

    def publish(self, m, rows, outputs):
        sent = super().publish(m, rows, outputs)
        self.log.append((self.epoch, m, rows.copy(), outputs.copy(), np.array(sent), self.x[m].copy()))
        return sent


# --------------------------------------------------------------------------
# convergence
# --------------------------------------------------------------------------
SCHEDULES = {"inv_sqrt": {}, "step": {"lr_step_epochs": 30, "lr_gamma": 0.3}}


@pytest.mark.parametrize("schedule", sorted(SCHEDULES))
@pytest.mark.parametrize("reduction", ["sum", "mean"])
@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_reaches_central_optimum_neighbourhood(loss, reduction, schedule):
    D, blocks, b = make_problem(loss)
    obj, w = objective_for(loss, reduction)
    f_star = central_optimum(D, b, obj).value
    sgd = make_sgd(blocks, b, obj, batch_size=20, lr=0.5, lr_schedule=schedule, **SCHEDULES[schedule])
    f0 = indep_value(D, b, loss, obj.lam, w, sgd.coef())
    for _ in range(150):
        stats = sgd.step(diagnostics=False)
    f = indep_value(D, b, loss, obj.lam, w, sgd.coef())
    assert (f - f0) / abs(f_star) < -0.1  # it did move, downhill
    assert 0 <= (f - f_star) / abs(f_star) <= 1e-4  # observed <= 1e-5
    assert sgd.objective_value() == pytest.approx(f, rel=1e-12)
    assert stats.epoch == sgd.epoch == 150


def test_sum_and_mean_run_the_same_iterates():
    """The step estimates grad F / (w N): lr means the same for both reductions."""
    _, blocks, b = make_problem("logistic", seed=3)
    runs = []
    for reduction in ("sum", "mean"):
        obj, _ = objective_for("logistic", reduction)
        sgd = make_sgd(blocks, b, obj, batch_size=32, lr=0.7)
        for _ in range(5):
            sgd.step(diagnostics=False)
        runs.append(sgd)
    np.testing.assert_allclose(runs[1].coef(), runs[0].coef(), rtol=1e-12, atol=1e-14)
    assert runs[1].objective_value() == pytest.approx(runs[0].objective_value() / N, rel=1e-12)


@pytest.mark.parametrize("loss", ["logistic", "squared"])
@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_full_batch_epoch_is_a_gradient_step(loss, reduction):
    """batch_size >= N: one epoch is x <- x - lr * grad F(x) / (w N), whatever the order."""
    D, blocks, b = make_problem(loss, seed=4)
    obj, w = objective_for(loss, reduction)
    sgd = make_sgd(blocks, b, obj, batch_size=N + 7, lr=0.3, init_scale=0.5)
    x0 = sgd.coef()
    grad = w * D.T @ indep_dl(D @ x0, b, loss) + 2.0 * obj.lam * x0
    sgd.step()
    np.testing.assert_allclose(sgd.coef(), x0 - 0.3 * grad / (w * N), rtol=1e-12, atol=1e-14)


# --------------------------------------------------------------------------
# the protocol: what is exchanged, batch by batch
# --------------------------------------------------------------------------
@pytest.mark.parametrize("output_sigma", [0.0, 0.2])
def test_epoch_replicated_from_the_messages(output_sigma):
    """Each batch: every party sends D_m[rows] x_m (+ noise); all step from the
    derivative at the (perturbed) sum, synchronously, with the scheduled lr."""
    loss, reduction, B = "logistic", "sum", 64
    D, blocks, b = make_problem(loss, seed=5)
    obj, w = objective_for(loss, reduction)
    sgd = Recorder(
        blocks,
        b,
        obj,
        batch_size=B,
        lr=0.8,
        lr_schedule="step",
        lr_step_epochs=1,
        lr_gamma=0.5,
        output_sigma=output_sigma,
        init_scale=0.3,
        init_rng=np.random.default_rng(1),
        batch_rng=np.random.default_rng(2),
        noise_rngs=[np.random.default_rng(10 + m) for m in range(3)],
    )
    sgd.step()
    x = [xm.copy() for xm in sgd.x]
    sgd.log.clear()
    stats = sgd.step()
    eta = 0.8 * 0.5  # epoch 2 of the step schedule
    assert stats.extra["learning_rate"] == eta
    n_batches = math.ceil(N / B)
    assert len(sgd.log) == 3 * n_batches
    seen = []
    for k in range(n_batches):
        batch = sgd.log[3 * k : 3 * k + 3]
        rows = batch[0][2]
        assert len(rows) == (B if k < n_batches - 1 else N - (n_batches - 1) * B)  # 400 = 6 * 64 + 16
        seen.append(rows)
        u = np.zeros(len(rows))
        for m, (epoch, party, r, outputs, sent, xm_seen) in enumerate(batch):
            assert (epoch, party) == (1, m)
            np.testing.assert_array_equal(r, rows)  # every party sends for the same samples
            np.testing.assert_array_equal(xm_seen, x[m])  # ... from the current model
            np.testing.assert_allclose(outputs, blocks[m][rows] @ x[m], rtol=1e-13, atol=1e-15)
            assert sent.shape == (len(rows),)  # one value per sample
            if output_sigma == 0:
                np.testing.assert_array_equal(sent, outputs)
            u = u + sent
        g_u = indep_dl(u, b[rows], loss)
        x = [xm - eta * (blocks[m][rows].T @ g_u / len(rows) + 2 * obj.lam / (w * N) * xm) for m, xm in enumerate(x)]
    assert sorted(np.concatenate(seen).tolist()) == list(range(N))  # one pass, no repeats
    for m in range(3):
        np.testing.assert_allclose(sgd.x[m], x[m], rtol=1e-11, atol=1e-13)


def test_noise_is_each_partys_own_gaussian():
    _, blocks, b = make_problem("logistic", seed=6)
    obj, _ = objective_for("logistic", "sum")
    sigma = 0.7
    sgd = Recorder(
        blocks,
        b,
        obj,
        batch_size=50,
        output_sigma=sigma,
        init_rng=np.random.default_rng(1),
        batch_rng=np.random.default_rng(2),
        noise_rngs=[np.random.default_rng(10 + m) for m in range(3)],
    )
    sgd.step()
    for m in range(3):
        noise = np.concatenate([s - o for _, p, _, o, s, _ in sgd.log if p == m])
        # party m's draws, in batch order, from its own Generator
        expected = np.random.default_rng(10 + m).normal(0.0, sigma, size=N)
        np.testing.assert_allclose(noise, expected, rtol=0, atol=1e-12)


def test_messages_are_one_value_per_sample_per_party():
    _, blocks, b = make_problem("logistic", seed=7)
    obj, _ = objective_for("logistic", "sum")
    for B in (1, 33, 100, N, 10 * N):
        sgd = Recorder(
            blocks, b, obj, batch_size=B, lr=0.1, init_rng=np.random.default_rng(1), batch_rng=np.random.default_rng(2)
        )
        assert sgd.messages.shape == (3,) and not sgd.messages.any()
        for k in range(1, 4):
            sgd.step(diagnostics=False)
            np.testing.assert_array_equal(sgd.messages, [k * N] * 3)
        per_party = [sum(s.size for _, p, _, _, s, _ in sgd.log if p == m) for m in range(3)]
        assert per_party == [3 * N] * 3


# --------------------------------------------------------------------------
# randomness
# --------------------------------------------------------------------------
def _history(sgd, epochs=4):
    return [(sgd.step().objective, [xm.copy() for xm in sgd.x]) for _ in range(epochs)]


def _same(h1, h2):
    return all(f1 == f2 and all(np.array_equal(a, c) for a, c in zip(x1, x2)) for (f1, x1), (f2, x2) in zip(h1, h2))


@pytest.mark.parametrize("output_sigma", [0.0, 0.3])
def test_same_seeds_bit_identical(output_sigma):
    _, blocks, b = make_problem("logistic", seed=8)
    obj, _ = objective_for("logistic", "sum")
    h = [
        _history(make_sgd(blocks, b, obj, batch_size=30, output_sigma=output_sigma, noise_seeds=(5, 6, 7)))
        for _ in range(2)
    ]
    assert _same(*h)


def test_each_generator_controls_its_own_draws():
    _, blocks, b = make_problem("logistic", seed=9)
    obj, _ = objective_for("logistic", "sum")
    kw = dict(batch_size=30, lr=0.5)
    base = _history(make_sgd(blocks, b, obj, seeds=(1, 2), **kw))
    # different batch order -> different iterates (same start)
    other_batches = make_sgd(blocks, b, obj, seeds=(1, 3), **kw)
    assert all(np.array_equal(a, c) for a, c in zip(other_batches.x, make_sgd(blocks, b, obj, **kw).x))
    assert not _same(base, _history(other_batches))
    # different init -> different start
    assert not np.array_equal(
        make_sgd(blocks, b, obj, seeds=(4, 2), **kw).coef(), make_sgd(blocks, b, obj, seeds=(1, 2), **kw).coef()
    )
    # output_sigma = 0: noise Generators are never drawn from
    rngs = [np.random.default_rng(s) for s in (11, 12, 13)]
    states = [r.bit_generator.state for r in rngs]
    quiet = FDMLSGD(
        blocks, b, obj, init_rng=np.random.default_rng(1), batch_rng=np.random.default_rng(2), noise_rngs=rngs, **kw
    )
    assert _same(base, _history(quiet))
    assert [r.bit_generator.state for r in rngs] == states
    # with noise, the noise seed matters
    noisy = [
        _history(make_sgd(blocks, b, obj, output_sigma=0.3, noise_seeds=s, **kw)) for s in ((11, 12, 13), (11, 12, 14))
    ]
    assert not _same(*noisy)


def test_initialization():
    _, blocks, b = make_problem("logistic", seed=10)
    obj, _ = objective_for("logistic", "sum")
    sgd = make_sgd(blocks, b, obj, seeds=(21, 2), init_scale=0.05)
    ref = np.random.default_rng(21)
    for m, Bm in enumerate(blocks):
        np.testing.assert_array_equal(sgd.x[m], ref.normal(0.0, 0.05, size=Bm.shape[1]))
    zero = make_sgd(blocks, b, obj, init_scale=0.0)
    assert all(xm.shape == (Bm.shape[1],) and not xm.any() for xm, Bm in zip(zero.x, blocks))
    assert zero.epoch == 0


# --------------------------------------------------------------------------
# formats, schedules, statistics
# --------------------------------------------------------------------------
@pytest.mark.parametrize("output_sigma", [0.0, 0.2])
@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_dense_and_sparse_give_same_iterates(loss, output_sigma):
    D, blocks, b = make_problem(loss, seed=11, density=0.3)
    obj, _ = objective_for(loss, "sum")
    kw = dict(batch_size=37, lr=0.5, output_sigma=output_sigma, noise_seeds=(3, 4, 5))
    dense = make_sgd(blocks, b, obj, **kw)
    sparse = make_sgd([sp.csr_matrix(B) for B in blocks], b, obj, **kw)
    for _ in range(5):
        sd, ss = dense.step(), sparse.step()
        for xd, xs in zip(dense.x, sparse.x):
            np.testing.assert_allclose(xs, xd, rtol=1e-12, atol=1e-12)
        assert ss.objective == pytest.approx(sd.objective, rel=1e-12)
    np.testing.assert_allclose(sparse.margins(), D @ dense.coef(), rtol=1e-12, atol=1e-12)


def test_other_sparse_formats_are_accepted():
    _, blocks, b = make_problem("logistic", seed=12, density=0.3)
    obj, _ = objective_for("logistic", "sum")
    csr = make_sgd([sp.csr_matrix(B) for B in blocks], b, obj)
    csc = make_sgd([sp.csc_matrix(B) for B in blocks], b, obj)
    csr.step(), csc.step()
    np.testing.assert_array_equal(csr.coef(), csc.coef())


def test_learning_rate_schedules():
    _, blocks, b = make_problem("logistic", seed=13)
    obj, _ = objective_for("logistic", "sum")
    const = make_sgd(blocks, b, obj, lr=0.3)
    inv = make_sgd(blocks, b, obj, lr=0.3, lr_schedule="inv_sqrt")
    step = make_sgd(blocks, b, obj, lr=0.3, lr_schedule="step", lr_step_epochs=3, lr_gamma=0.5)
    for t in range(1, 11):
        assert const.learning_rate(t) == 0.3
        assert inv.learning_rate(t) == pytest.approx(0.3 / math.sqrt(t), rel=1e-15)
        assert step.learning_rate(t) == pytest.approx(0.3 * 0.5 ** ((t - 1) // 3), rel=1e-15)
    assert [step.learning_rate(t) for t in (1, 3, 4, 6, 7)] == [0.3, 0.3, 0.15, 0.15, 0.075]
    # the epoch runs with the rate of its own (1-based) number
    used = [inv.step(diagnostics=False).extra["learning_rate"] for _ in range(3)]
    assert used == [inv.learning_rate(t) for t in (1, 2, 3)]
    for bad in (0, -1, 1.5):
        with pytest.raises(ValueError, match="epoch"):
            inv.learning_rate(bad)


def test_epoch_stats_and_margins():
    D, blocks, b = make_problem("logistic", seed=14)
    obj, w = objective_for("logistic", "mean")
    sgd = make_sgd(blocks, b, obj, output_sigma=0.5, noise_seeds=(1, 2, 3))
    st = sgd.step()
    assert isinstance(st, EpochStats) and st.epoch == 1
    # exact, unperturbed, although the protocol ran on noisy outputs
    np.testing.assert_allclose(sgd.margins(), D @ sgd.coef(), rtol=1e-13, atol=1e-14)
    assert st.objective == pytest.approx(indep_value(D, b, "logistic", obj.lam, w, sgd.coef()), rel=1e-13)
    assert st.objective == sgd.objective_value()
    assert math.isnan(st.primal_residual) and math.isnan(st.dual_residual)
    assert st.x_seconds > 0 and st.z_seconds == 0 and st.y_seconds == 0
    quiet = sgd.step(diagnostics=False)
    assert math.isnan(quiet.objective) and quiet.epoch == 2
    np.testing.assert_allclose(sgd.margins(), D @ sgd.coef(), rtol=1e-13, atol=1e-14)  # refreshed


def test_output_noise_converges_to_a_looser_neighbourhood():
    D, blocks, b = make_problem("logistic")
    obj, _ = objective_for("logistic", "sum")
    f_star = central_optimum(D, b, obj).value
    kw = dict(batch_size=20, lr=0.5, lr_schedule="inv_sqrt")
    clean = make_sgd(blocks, b, obj, **kw)
    noisy = make_sgd(blocks, b, obj, output_sigma=0.5, noise_seeds=(10, 11, 12), **kw)
    for _ in range(150):
        clean.step(diagnostics=False)
        noisy.step(diagnostics=False)
    gap_clean = (clean.objective_value() - f_star) / abs(f_star)
    gap_noisy = (noisy.objective_value() - f_star) / abs(f_star)
    assert gap_clean <= 1e-5
    assert gap_noisy <= 1e-2
    assert gap_noisy > 10 * gap_clean  # the noise does cost something
    assert np.linalg.norm(noisy.coef() - clean.coef()) > 1e-3 * np.linalg.norm(clean.coef())


# --------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kw, match",
    [
        ({"batch_size": 0}, "batch_size must be an integer >= 1"),
        ({"batch_size": 2.5}, "batch_size must be an integer"),
        ({"lr": 0.0}, "lr must be a finite number > 0"),
        ({"lr": -0.1}, "lr must be"),
        ({"lr": float("nan")}, "lr must be"),
        ({"lr_schedule": "cosine"}, "unknown lr_schedule 'cosine'"),
        ({"lr_step_epochs": 0}, "lr_step_epochs must be an integer >= 1"),
        ({"lr_gamma": 0.0}, "lr_gamma must be a finite number > 0"),
        ({"lr_gamma": 2.0}, r"lr_gamma must be in \(0, 1\]"),
        ({"init_scale": -0.01}, "init_scale must be a finite number >= 0"),
        ({"output_sigma": -1.0}, "output_sigma must be a finite number >= 0"),
        ({"output_sigma": 0.1}, "output_sigma = 0.1 > 0 needs noise_rngs"),
        (
            {"output_sigma": 0.1, "noise_rngs": [np.random.default_rng(0)] * 2},
            "noise_rngs must hold one Generator per party: got 2 for 3 parties",
        ),
        (
            {"noise_rngs": [np.random.default_rng(0), np.random.default_rng(1), 7]},
            r"noise_rngs\[2\] \(party 3\) must be a numpy.random.Generator",
        ),
        ({"init_rng": 0}, "init_rng must be a numpy.random.Generator"),
        ({"batch_rng": np.random.RandomState(0)}, "batch_rng must be a numpy.random.Generator"),
    ],
)
def test_invalid_parameters(kw, match):
    _, blocks, b = make_problem("logistic", seed=15)
    obj, _ = objective_for("logistic", "sum")
    args = dict(init_rng=np.random.default_rng(0), batch_rng=np.random.default_rng(1))
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        FDMLSGD(blocks, b, obj, **args)


def test_invalid_data():
    _, blocks, b = make_problem("logistic", seed=16)
    obj, _ = objective_for("logistic", "sum")
    rngs = dict(init_rng=np.random.default_rng(0), batch_rng=np.random.default_rng(1))
    with pytest.raises(ValueError, match="at least one feature block"):
        FDMLSGD([], b, obj, **rngs)
    with pytest.raises(ValueError, match="party 2: block of shape"):
        FDMLSGD([blocks[0], blocks[1][:-1]], b, obj, **rngs)
    with pytest.raises(ValueError, match="party 1: block has no columns"):
        FDMLSGD([np.zeros((N, 0))], b, obj, **rngs)
    with pytest.raises(ValueError, match="objective must be"):
        FDMLSGD(blocks, b, "logistic", **rngs)
