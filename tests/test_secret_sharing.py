"""Algorithm 3 / Theorem 2.1: additive secret sharing over Z_p (vfl.decentralized.secret_sharing)."""

import numpy as np
import pytest
from scipy import stats

from vfl.core.layouts import NetworkData
from vfl.core.streams import Streams
from vfl.decentralized import initial_models, make_graph, paper_objective
from vfl.decentralized.secret_sharing import AdditiveSecretSharing, SecretSharingOverflowError
from vfl.experiments.registry import get_solver


def test_reconstruction_exact_to_encoding_precision():
    rng = np.random.default_rng(0)
    ss = AdditiveSecretSharing(7, bits=64, fractional_bits=32)
    x = rng.normal(scale=100.0, size=(7, 5))
    total = ss.secure_sum(x, rng)
    assert np.max(np.abs(total - x.sum(axis=0))) <= 7 * 2.0**-33 + 1e-9
    # exactly the sum of the rounded encodings
    exact = np.rint(x * 2.0**32).sum(axis=0) / 2.0**32
    assert np.array_equal(total, exact)
    assert np.array_equal(ss.decode(ss.encode(-x)), -ss.decode(ss.encode(x)))


@pytest.mark.parametrize("bits, f", [(64, 0), (32, 10), (16, 4)])
def test_small_rings_reconstruct(bits, f):
    rng = np.random.default_rng(1)
    ss = AdditiveSecretSharing(5, bits=bits, fractional_bits=f)
    x = rng.uniform(-ss.capacity, ss.capacity, size=(5, 3))
    x[0, 0] = -ss.capacity  # every agent at the edge of the capacity still decodes
    x[:, 1] = ss.capacity
    total = ss.secure_sum(x, rng)
    assert np.allclose(total, np.rint(x * 2.0**f).sum(axis=0) / 2.0**f, atol=0)


def test_shares_are_uniform_and_sum_to_value():
    rng = np.random.default_rng(2)
    ss = AdditiveSecretSharing(4, bits=8, fractional_bits=0)
    x = np.array([[3.0], [-5.0], [7.0], [1.0]])
    shares = ss.share(np.repeat(x, 20000, axis=1), rng)
    assert np.array_equal(
        (shares.sum(axis=1, dtype=np.uint64) & np.uint64(255)), np.repeat(ss.encode(x), 20000, axis=1)
    )
    for j in (1, 2, 3):  # an outgoing share of agent 0: uniform on Z_256
        counts = np.bincount(shares[0, j].astype(int), minlength=256)
        assert stats.chisquare(counts).pvalue > 1e-4


def _modular_reconstruction_attempt(ss, shares, victim, coalition):
    """The coalition's best guess at the victim's value from everything it sees."""
    view = ss.coalition_view(shares, coalition)
    p = np.uint64(ss.modulus - 1) if ss.bits < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)
    received = view["received"][:, victim].sum(axis=0, dtype=np.uint64)  # s[v, c], c in C
    # broadcast of the victim minus what the coalition itself sent to it
    sent_to_victim = view["sent"][:, victim].sum(axis=0, dtype=np.uint64)
    return (received + view["broadcast"][victim] - sent_to_victim) & p


def _real_valued_shares(values, rng):
    """The naive scheme: real Gaussian shares, the kept one completes the sum."""
    n = values.shape[0]
    shares = rng.normal(size=(n, n) + values.shape[1:])
    idx = np.arange(n)
    shares[idx, idx] = 0
    shares[idx, idx] = values - shares.sum(axis=1)
    return shares


def test_collusion_of_n_minus_2_learns_nothing():
    """Any N - 2 colluders' view is independent of the victim's value (sum fixed).

    The statistic is the coalition's natural reconstruction of the victim's
    value; with real-valued splits it is the value plus Gaussian noise and the
    same two-sample test rejects at once (the second half of this test).
    """
    rng = np.random.default_rng(3)
    N, T = 5, 40000
    victim, honest, coalition = 0, 1, [2, 3, 4]
    ss = AdditiveSecretSharing(N, bits=8, fractional_bits=0)

    def values(xv):
        x = np.zeros((N, T))
        x[victim], x[honest], x[2:] = xv, -xv, 3.0  # same network sum
        return x

    a = _modular_reconstruction_attempt(ss, ss.share(values(-20.0), rng), victim, coalition)
    b = _modular_reconstruction_attempt(ss, ss.share(values(20.0), rng), victim, coalition)
    ca, cb = np.bincount(a.astype(int), minlength=256), np.bincount(b.astype(int), minlength=256)
    assert stats.chi2_contingency(np.vstack([ca, cb]))[1] > 1e-4
    assert stats.chisquare(ca).pvalue > 1e-4  # and uniform on Z_p

    # The same attack on real-valued splits recovers the value up to N(0, 2) noise.
    def real_attack(xv):
        sh = _real_valued_shares(values(xv), rng)
        bro = sh.sum(axis=0)
        return sh[victim, coalition].sum(axis=0) + bro[victim] - sh[coalition, victim].sum(axis=0)

    assert stats.ks_2samp(real_attack(-20.0), real_attack(20.0)).pvalue < 1e-12


def test_joint_view_is_independent_on_a_tiny_ring():
    """The whole joint view of one colluder (N = 3) has the same law for two victim values."""
    rng = np.random.default_rng(4)
    N, T = 3, 120000
    ss = AdditiveSecretSharing(N, bits=4, fractional_bits=0)

    def joint(xv):
        x = np.zeros((N, T))
        x[0], x[1], x[2] = xv, -xv, 0.0
        sh = ss.share(x, rng)
        view = ss.coalition_view(sh, [2])
        # received from 0 and 1, and the victim's broadcast (agent 1's follows from the
        # sum); its own outgoing shares are its own randomness
        cells = (view["received"][0, 0].astype(int) * 16 + view["received"][0, 1].astype(int)) * 16 + view["broadcast"][
            0
        ].astype(int)
        return np.bincount(cells, minlength=16**3)

    table = np.vstack([joint(-2.0), joint(2.0)])
    table = table[:, table.sum(axis=0) > 0]
    assert stats.chi2_contingency(table)[1] > 1e-4


def test_overflow_refused():
    ss = AdditiveSecretSharing(10, bits=64, fractional_bits=32)
    assert ss.capacity == pytest.approx((2**63 - 1) // 10 / 2**32)
    x = np.zeros((10, 2))
    x[3, 1] = 1.01 * ss.capacity
    with pytest.raises(SecretSharingOverflowError, match="exceeds the capacity"):
        ss.secure_sum(x, np.random.default_rng(0))
    with pytest.raises(ValueError, match="non-finite"):
        ss.encode(np.array([np.inf]))
    with pytest.raises(ValueError, match="parties >= 3"):
        AdditiveSecretSharing(2)
    with pytest.raises(ValueError, match="fractional_bits"):
        AdditiveSecretSharing(4, bits=16, fractional_bits=15)


def _problem(N=6, m=15, d=4, seed=0):
    r = np.random.default_rng(seed)
    A = r.random((N, m, d))
    A /= np.linalg.norm(A, axis=2, keepdims=True)
    b = (r.random((N, m)) < 0.7).astype(float)
    adj = make_graph("complete", nodes=N)
    return NetworkData(adj, A, b, initial_models(N, d, r)), paper_objective(N, m)


@pytest.mark.parametrize(
    "name, privacy",
    [
        ("ldp_admm", {"noise": False}),
        ("ldp_admm", {}),
        ("fixed_admm", {}),
        ("random_penalty_admm", {}),
        ("dgd", {}),
        ("noisy_consensus_gd", {}),
        ("op_admm", {}),
        ("pp_admm", {"noise": False}),
    ],
)
def test_iterates_with_secret_sharing_equal_plain(name, privacy):
    data, obj = _problem()
    runs = {}
    for exchange in ("plain", "secret_sharing"):
        s = get_solver(name)(
            data, objective=obj, params={"exchange": exchange}, privacy=privacy, streams=Streams(11), iterations=40
        )
        for _ in range(40):
            s.step()
        runs[exchange] = s.X
    # per exchange the sum is off by <= N 2^-33; the iteration does not amplify it
    assert np.max(np.abs(runs["plain"] - runs["secret_sharing"])) < 1e-7


def test_secret_sharing_needs_a_complete_graph():
    data, obj = _problem()
    sparse = NetworkData(make_graph("ring", nodes=6), data.A, data.b, data.x0)
    with pytest.raises(ValueError, match="needs a complete graph"):
        get_solver("ldp_admm")(
            sparse, objective=obj, params={"exchange": "secret_sharing"}, privacy={}, streams=Streams(0), iterations=5
        )


def test_solver_refuses_values_beyond_the_ring():
    data, obj = _problem()
    big = NetworkData(data.adjacency, data.A, data.b, data.x0 * 1e6)
    with pytest.raises(SecretSharingOverflowError, match="capacity"):
        get_solver("dgd")(
            big,
            objective=obj,
            params={"exchange": "secret_sharing", "ss_bits": 32, "ss_fractional_bits": 16},
            privacy={},
            streams=Streams(0),
            iterations=5,
        )
