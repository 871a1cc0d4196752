"""The strategy objects of ADMM sharing, each against its closed form.

Noise forms (Hu et al. 2019, updates (10)): the released value for a given
stream. Neighbouring relations: the sound sensitivities of
:mod:`vfl.privacy.sharing` and what each relation needs. Sharing forms,
orders, relaxation and accelerations: the values of one step. And the
resolution itself: every option becomes its strategy once, when the solver
is built, and the epoch never branches on an option's name.
"""

import inspect
import math

import numpy as np
import pytest
from problems import planted_problem

from vfl.admm import ADMMSharing
from vfl.admm.sharing import ADMMSharingSolver as S
from vfl.admm.sharing.acceleration import (
    ACCELERATION,
    Anderson,
    NesterovRestart,
    NoAcceleration,
    NoRelaxation,
    Relaxation,
    over_relaxation,
)
from vfl.admm.sharing.accounting import (
    CALIBRATION,
    DataDependentCalibration,
    Lemma1Calibration,
    SoundCalibration,
)
from vfl.admm.sharing.block import BlockSolver
from vfl.admm.sharing.forms import (
    BALL,
    ORDER,
    SHARING,
    Z_UPDATE,
    BoydSharing,
    ExactBall,
    GaussSeidelOrder,
    HuSharing,
    JacobiOrder,
    ProjectedBall,
    SafeguardedZUpdate,
    Unconstrained,
)
from vfl.admm.sharing.iteration import ACCELERATIONS, FORMS, ORDERS, RHO_SCHEDULES, Z_UPDATES
from vfl.admm.sharing.noise import NOISE, OutputNoise, VariableNoise, WhitenedVariableNoise
from vfl.admm.sharing.party import Party
from vfl.admm.sharing.penalty import RHO_SCHEDULE, FixedPenalty, SpectralPenalty
from vfl.admm.sharing.share_relations import RELATIONS, ColumnRelation, RowRelation
from vfl.core.objective import Objective
from vfl.privacy.sharing import NEIGHBOURS

N = 60


def block(d=4, seed=0):
    return np.random.default_rng(seed).standard_normal((N, d))


# --------------------------------------------------------------------------
# noise forms
# --------------------------------------------------------------------------
def test_output_noise_releases_the_share_through_the_solver():
    calls = []

    def release(mean, *, scale, rng):
        calls.append((mean, scale, rng))
        return mean + scale * rng.standard_normal(mean.shape)

    share, rng = np.arange(N, dtype=float), np.random.default_rng(1)
    out = OutputNoise().perturb(
        share, np.zeros(4), sigma=0.5, rng=rng, block=BlockSolver(block(), 0.1, 1.0), release=release
    )
    ((mean, scale, used),) = calls
    assert mean is share and scale == 0.5 and used is rng
    expected = share + 0.5 * np.random.default_rng(1).standard_normal(N)
    assert np.array_equal(out, expected)


def test_variable_noise_is_the_image_of_isotropic_model_noise():
    D, x = block(), np.ones(4)
    out = VariableNoise().perturb(
        D @ x, x, sigma=0.3, rng=np.random.default_rng(2), block=BlockSolver(D, 0.1, 1.0), release=None
    )
    xi = np.random.default_rng(2).normal(0.0, 0.3, size=4)
    np.testing.assert_allclose(out, D @ (x + xi), rtol=1e-13)


def test_whitened_noise_is_sigma_times_an_orthonormal_image():
    """``D xi = sigma D V diag(s^-1/2) e``: ``sigma`` times orthonormal columns of range(D)."""
    D, x = block(), np.ones(4)
    out = WhitenedVariableNoise().perturb(
        D @ x, x, sigma=0.7, rng=np.random.default_rng(3), block=BlockSolver(D, 0.1, 1.0), release=None
    )
    s, V = np.linalg.eigh(D.T @ D)
    e = np.random.default_rng(3).standard_normal(4)
    np.testing.assert_allclose(out - D @ x, 0.7 * (D @ (V @ (e / np.sqrt(s)))), rtol=1e-9)
    Q = D @ V / np.sqrt(s)  # orthonormal: the covariance of D xi is sigma^2 Q Q^T = sigma^2 P
    np.testing.assert_allclose(Q.T @ Q, np.eye(4), atol=1e-10)


def test_only_the_output_form_is_accountable():
    assert [name for name, cls in NOISE.items() if cls.accountable] == ["output"]


# --------------------------------------------------------------------------
# neighbouring relations
# --------------------------------------------------------------------------
BOUND = dict(n_samples=50, clip=0.5, b1=2.0, lam=0.25, input_clip=1.5)


def test_column_sensitivity_is_two_min_c_b1_sqrt_n_for_any_penalty():
    for rho_range, scale in (((1.0, 1.0), 1), ((0.01, None), 3)):
        got = ColumnRelation().sensitivity(**BOUND, rho_range=rho_range, x_rho_scale=scale)
        assert got == 2 * 0.5 * math.sqrt(50)


def gap(P, R):
    """``max_theta P sin(theta) + 2 R sin(theta / 2)`` on a fine grid (independent of the code)."""
    t = np.linspace(0.0, np.pi, 200001)
    return float(np.max(P * np.sin(t) + 2 * R * np.sin(t / 2)))


def row_closed_form(rho):
    c, b1, lam, R = 0.5, 2.0, 0.25, 1.5
    return math.sqrt((2 * min(c, b1)) ** 2 + gap(rho * b1, R) ** 2 / (8 * lam * rho))


def test_row_sensitivity_against_its_closed_form():
    got = RowRelation().sensitivity(**BOUND, rho_range=(1.0, 1.0), x_rho_scale=1)
    assert got == pytest.approx(row_closed_form(1.0), rel=1e-8)
    # the Boyd form's x-update has penalty M rho; an adaptive range takes its worst end
    got = RowRelation().sensitivity(**BOUND, rho_range=(1.0, 1.0), x_rho_scale=3)
    assert got == pytest.approx(row_closed_form(3.0), rel=1e-8)
    got = RowRelation().sensitivity(**BOUND, rho_range=(0.01, 100.0), x_rho_scale=1)
    assert got == pytest.approx(max(row_closed_form(0.01), row_closed_form(100.0)), rel=1e-8)


def test_row_relation_needs_lam_input_clip_and_a_ceiling():
    with pytest.raises(ValueError, match="needs objective.lam > 0"):
        RowRelation().sensitivity(**{**BOUND, "lam": 0.0}, rho_range=(1.0, 1.0), x_rho_scale=1)

    # the solver's typed records: input_clip and rho_max default to None
    with pytest.raises(ValueError, match="needs privacy.input_clip"):
        RowRelation().check_privacy(S.typed_privacy({}))
    with pytest.raises(ValueError, match="needs solver.rho_max too"):
        RowRelation().check_penalty_range(S.typed_params({}))
    ColumnRelation().check_privacy(S.typed_privacy({}))
    ColumnRelation().check_penalty_range(S.typed_params({}))


def test_each_relation_names_its_ball_and_words():
    assert {n: (cls.ball, cls().words) for n, cls in RELATIONS.items()} == {
        "column": ("project", NEIGHBOURS["column"]),
        "row": ("exact", NEIGHBOURS["row"]),
    }
    assert BALL == {"project": ProjectedBall, "exact": ExactBall}


def test_feasible_sets():
    D = block()
    B, r = BlockSolver(D, 0.001, 1.0), 50 * D @ np.ones(4)
    x, active = Unconstrained().solve(B, r, 1.0)
    assert not active and np.linalg.norm(x) > 1
    y, moved = ProjectedBall(1.0).project(x)
    assert moved and np.allclose(y, x / np.linalg.norm(x))
    z, active = ExactBall(1.0).solve(B, r, 1.0)
    assert active and np.linalg.norm(z) <= 1.0 + 1e-12
    assert ExactBall(1.0).project(z) == (z, False)


# --------------------------------------------------------------------------
# calibrations
# --------------------------------------------------------------------------
def test_calibrations_pick_their_sensitivity():
    sound, lemma1 = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    assert SoundCalibration().sensitivity(sound, lemma1) is sound
    assert Lemma1Calibration().sensitivity(sound, lemma1) is lemma1
    assert np.all(np.isnan(DataDependentCalibration().release_sensitivity(sound)))
    assert [n for n, cls in CALIBRATION.items() if not cls.guarantee] == ["data_dependent"]


# --------------------------------------------------------------------------
# sharing forms, orders, relaxation, accelerations
# --------------------------------------------------------------------------
def test_pulled_values_of_the_two_forms():
    rng = np.random.default_rng(4)
    P = [rng.standard_normal(N) for _ in range(3)]
    z, y = rng.standard_normal(N), rng.standard_normal(N)
    hu = HuSharing(3)
    np.testing.assert_allclose(
        hu.pulled(1, P, z, y, hu.coupled_sum(P), 0.5), 0.5 * (z - P[0] - P[2]) - y, rtol=1e-12, atol=1e-12
    )
    boyd = BoydSharing(3)
    assert boyd.scale == 3 and boyd.coupled_sum(P) is None
    np.testing.assert_allclose(boyd.pulled(1, P, z, y, None, 0.5), 1.5 * P[1] - y, rtol=1e-15)
    assert np.array_equal(boyd.z_of(P, z), np.sum(P, axis=0))


def test_orders_and_relaxation():
    S, s, p = np.ones(3), np.full(3, 5.0), np.full(3, 2.0)
    assert JacobiOrder.advance(S, s, p) is S
    assert np.array_equal(GaussSeidelOrder.advance(S, s, p), np.full(3, 4.0))
    assert isinstance(over_relaxation(1.0), NoRelaxation) and over_relaxation(1.0)(s, p) is s
    assert isinstance(over_relaxation(1.5), Relaxation)
    assert np.array_equal(over_relaxation(1.5)(s, p), 1.5 * s - 0.5 * p)


def test_nesterov_restarts_when_the_combined_residual_does_not_fall():
    class Public:  # the solver as the acceleration sees it
        rho, sharing = 1.0, BoydSharing(2)

        def __init__(self, state):
            self.state = state

        def public_state(self):
            return self.state

    def state(v):
        return [np.full(2, v), np.full(2, v)], np.full(2, 2 * v), np.full(2, v)

    acc = NesterovRestart()
    assert acc.step(Public(state(1.0)), state(0.0)) == (None, {"restarted": False})
    nxt, report = acc.step(Public(state(1.5)), state(1.0))  # residual falls: momentum
    assert report == {"restarted": False} and nxt is not None
    nxt, report = acc.step(Public(state(9.0)), state(1.5))  # residual grows: restart
    assert report == {"restarted": True} and nxt[1][0] == 3.0  # back to the previous state
    assert NoAcceleration().step(None, None) == (None, {})


# --------------------------------------------------------------------------
# resolution: flags -> strategies, once
# --------------------------------------------------------------------------
def test_the_flag_tuples_are_the_strategy_tables():
    assert FORMS == tuple(SHARING) == ("hu", "boyd")
    assert ORDERS == tuple(ORDER) and RHO_SCHEDULES == tuple(RHO_SCHEDULE)
    assert ACCELERATIONS == tuple(ACCELERATION) == ("none", "nesterov_restart", "anderson")
    assert Z_UPDATES == tuple(Z_UPDATE)


def test_defaults_resolve_to_algorithm_1_and_options_to_their_strategies():
    D, blocks, b = planted_problem("logistic", (4, 5), N, seed=1)
    obj = Objective("logistic", 0.1, "sum")
    s = ADMMSharing(blocks, b, obj)
    party = s.parties.parties[0]  # the feasible set and the noise are each party's own
    kinds = (s.sharing, s.sweep, s.relax, s.penalty, s.accelerator, s.z_solver, party.feasible, party.noise)
    assert [type(k) for k in kinds] == [
        HuSharing,
        JacobiOrder,
        NoRelaxation,
        FixedPenalty,
        NoAcceleration,
        SafeguardedZUpdate,
        Unconstrained,
        VariableNoise,
    ]
    s = ADMMSharing(
        blocks,
        b,
        obj,
        rho=0.5,
        form="boyd",
        relaxation=1.5,
        acceleration="anderson",
        anderson_memory=3,
        x_radius=1.0,
        ball="exact",
        noise_form="output",
    )
    assert isinstance(s.sharing, BoydSharing) and s.x_rho == 1.0
    assert isinstance(s.accelerator, Anderson) and s.accelerator.memory == 3
    party = s.parties.parties[1]
    assert isinstance(party.feasible, ExactBall) and isinstance(party.noise, OutputNoise)
    s = ADMMSharing(blocks, b, obj, rho_schedule="spectral", rho_min=0.5, rho_max=2.0)
    assert isinstance(s.penalty, SpectralPenalty)
    assert (s.penalty.rho_min, s.penalty.rho_max) == (0.5, 2.0)


def test_the_epoch_holds_no_branch_on_an_option_name():
    for method in (
        ADMMSharing._epoch,
        ADMMSharing._pull,
        Party.update,
        Party.publish,
        ADMMSharing.z_update,
        ADMMSharing.step,
    ):
        source = inspect.getsource(method)
        assert '== "' not in source and '!= "' not in source, method.__name__
