"""Differentially private ADMM sharing: perturbed shares (000 updates (10), 001 (6)-(9))."""

import numpy as np
import pytest
import scipy.sparse as sp

from vfl.admm import ADMMSharing
from vfl.admm.sharing import NOISE_FORMS
from vfl.core.objective import Objective


def problem(n=120, dims=(4, 6, 3), seed=0, sparse=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, sum(dims)))
    b = np.where(X @ rng.standard_normal(sum(dims)) + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    edges = np.cumsum([0, *dims])
    blocks = [X[:, a:e] for a, e in zip(edges[:-1], edges[1:])]
    if sparse:
        blocks = [sp.csr_matrix(B) for B in blocks]
    return blocks, b


def rngs(seed, m=3):
    return [np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0, k))) for k in range(m)]


def run(blocks, b, epochs=15, **kw):
    s = ADMMSharing(blocks, b, Objective("logistic", 0.1, "sum"), rho=1.0, **kw)
    history = []
    for _ in range(epochs):
        s.step()
        history.append((np.concatenate(s.x).copy(), s.z.copy(), s.y.copy()))
    return s, history


@pytest.mark.parametrize("form", NOISE_FORMS)
def test_sigma_zero_is_algorithm_1_exactly(form):
    blocks, b = problem()
    _, plain = run(blocks, b)
    _, zero = run(blocks, b, sigma=0.0, noise_form=form, noise_rngs=rngs(1))
    for (x1, z1, y1), (x2, z2, y2) in zip(plain, zero):
        assert np.array_equal(x1, x2) and np.array_equal(z1, z2) and np.array_equal(y1, y2)


@pytest.mark.parametrize("form", NOISE_FORMS)
def test_same_seed_same_curves_other_seed_other_noise(form):
    blocks, b = problem()
    _, a = run(blocks, b, sigma=0.3, noise_form=form, noise_rngs=rngs(7))
    _, again = run(blocks, b, sigma=0.3, noise_form=form, noise_rngs=rngs(7))
    _, other = run(blocks, b, sigma=0.3, noise_form=form, noise_rngs=rngs(8))
    assert all(np.array_equal(p[0], q[0]) and np.array_equal(p[1], q[1]) for p, q in zip(a, again))
    assert not np.allclose(a[-1][0], other[-1][0])


def test_perturbed_share_is_what_everyone_uses():
    """z, y and the other parties' next x-updates all see the noisy shares."""
    blocks, b = problem()
    s = ADMMSharing(
        blocks, b, Objective("logistic", 0.1, "sum"), rho=1.0, sigma=0.5, noise_form="variable", noise_rngs=rngs(3)
    )
    s.step()
    exact = [B @ x for B, x in zip(blocks, s.x)]
    noisy = np.sum(s.shares, axis=0)
    assert not np.allclose(noisy, np.sum(exact, axis=0))
    np.testing.assert_allclose(s.share_sum, noisy)
    np.testing.assert_allclose(s.margins(), np.sum(exact, axis=0))  # evaluation uses exact x
    # the next x-update of party 1 reads the others' *perturbed* shares
    v = s.z - (s.shares[1] + s.shares[2])
    np.testing.assert_allclose(s.x_update(0), s.solvers[0].solve(s.rho * v - s.y))
    # and y moved by rho * (noisy sum - z)
    y_before = s.y.copy()
    s.step()
    np.testing.assert_allclose(s.y, y_before + s.rho * (s.share_sum - s.z), rtol=1e-12, atol=1e-12)


def injected_noise(block, form, sigma, draws, seed=11):
    """Empirical covariance of party 1's injected share noise over many draws."""
    n = block.shape[0]
    s = ADMMSharing(
        [block],
        np.ones(n),
        Objective("squared", 0.5, "sum"),
        rho=1.0,
        sigma=sigma,
        noise_form=form,
        noise_rngs=rngs(seed, 1),
    )
    x = np.zeros(block.shape[1])
    share = np.zeros(n)
    E = np.array([s.publish(0, x, share) for _ in range(draws)])
    return E, np.cov(E, rowvar=False, bias=True)


@pytest.mark.slow  # 480,000 draws through the solver's own publish step
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("shape", [(8, 3), (5, 9)], ids=["tall", "wide"])
def test_injected_noise_covariance_matches_its_definition(shape, sparse):
    """Statistical check with a fixed seed: 40000 draws, relative Frobenius
    error of the empirical covariance below 3% (the sampling error of a
    covariance estimate at this size is ~1%)."""
    rng = np.random.default_rng(5)
    D = rng.standard_normal(shape)
    D[:, -1] = D[:, 0]  # a collinear column: (D^T D) is singular, as with one-hot + intercept
    block = sp.csr_matrix(D) if sparse else D
    sigma = 0.7
    P = D @ np.linalg.pinv(D.T @ D) @ D.T  # projection onto range(D), computed independently
    expected = {
        "variable": sigma**2 * D @ D.T,  # D xi, xi ~ N(0, sigma^2 I)
        "variable_whitened": sigma**2 * P,  # D xi, xi ~ N(0, sigma^2 (D^T D)^+)
        "output": sigma**2 * np.eye(shape[0]),  # N(0, sigma^2 I_N)
    }
    for form, cov in expected.items():
        E, emp = injected_noise(block, form, sigma, 40_000)
        assert np.abs(E.mean(axis=0)).max() < 5 * np.sqrt(np.diag(cov).max() / len(E))  # zero mean
        err = np.linalg.norm(emp - cov) / np.linalg.norm(cov)
        assert err < 0.03, (form, err)


def test_whitened_noise_lies_in_the_range_of_the_block():
    rng = np.random.default_rng(2)
    D = rng.standard_normal((10, 3))
    E, _ = injected_noise(D, "variable_whitened", 1.0, 50)
    P = D @ np.linalg.pinv(D)
    np.testing.assert_allclose(E @ P.T, E, atol=1e-10)


def test_party_streams_are_independent():
    """Party 1's noise does not change when party 2's sigma does."""
    blocks, b = problem()
    s1 = ADMMSharing(blocks, b, Objective("logistic", 0.1), sigma=[0.3, 0.3, 0.3], noise_rngs=rngs(4))
    s2 = ADMMSharing(blocks, b, Objective("logistic", 0.1), sigma=[0.3, 2.0, 0.0], noise_rngs=rngs(4))
    x, share = np.zeros(4), np.zeros(len(b))
    np.testing.assert_array_equal(s1.publish(0, x, share), s2.publish(0, x, share))


def test_dense_and_sparse_give_the_same_noisy_iterates():
    dense, b = problem()
    sparse, _ = problem(sparse=True)
    for form in NOISE_FORMS:
        _, a = run(dense, b, sigma=0.2, noise_form=form, noise_rngs=rngs(9))
        _, c = run(sparse, b, sigma=0.2, noise_form=form, noise_rngs=rngs(9))
        np.testing.assert_allclose(a[-1][0], c[-1][0], rtol=1e-9, atol=1e-9)


def test_more_noise_hurts_the_objective():
    blocks, b = problem(n=400)
    obj = Objective("logistic", 0.1, "sum")
    finals = []
    for sigma in (0.0, 0.1, 3.0):
        s = ADMMSharing(blocks, b, obj, rho=1.0, sigma=sigma, noise_rngs=rngs(0))
        for _ in range(60):
            s.step()
        finals.append(s.objective_value())
    assert finals[0] <= finals[1] < finals[2]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"sigma": -0.1, "noise_rngs": rngs(0)}, "sigma must be finite and >= 0"),
        ({"sigma": 0.1}, "a positive sigma needs noise_rngs"),
        ({"sigma": 0.1, "noise_rngs": rngs(0, 2)}, "a positive sigma needs noise_rngs"),
        ({"sigma": [0.1, 0.2], "noise_rngs": rngs(0)}, "sigma needs one value per party (3), got 2"),
        ({"noise_form": "input"}, "noise_form must be one of"),
    ],
)
def test_noise_validation(kwargs, message):
    blocks, b = problem()
    with pytest.raises(ValueError) as exc:
        ADMMSharing(blocks, b, Objective("logistic", 0.1), **kwargs)
    assert message in str(exc.value)
